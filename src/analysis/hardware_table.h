// Hardware ceilings: the peak memory bandwidth and math rates that every roofline number is
// measured against. One table of datasheet values (dense, no sparsity) for common GPUs, plus
// ceilings measured on this machine by `crosspoint hwinfo`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace crosspoint::analysis {

// Peak rates of one device. A rate of 0 means "not available on this device" (no fp8 tensor
// cores on an A100) or "not measured".
struct HardwareCeilings {
  std::string name;           // "L4", "H100 SXM", "cpu (measured)"
  double memory_gb = 0;       // device memory, GB (1e9 bytes)
  double bandwidth_gb_s = 0;  // peak memory bandwidth, GB/s (1e9 bytes/s)
  double fp16_tflops = 0;     // dense fp16/bf16 matmul, TFLOP/s (fp32 accumulate)
  double fp8_tflops = 0;      // dense fp8 e4m3 matmul, TFLOP/s; 0 = no fp8 math
  double int8_tops = 0;       // dense int8 matmul, TOP/s; 0 = none
  double fp32_tflops = 0;     // fp32 matmul (CPU ceilings; non-tensor-core GPU rate)
  std::string source;         // "datasheet: ..." or "measured: ..."
};

// The datasheet table (one entry per device; values and sources in docs/analysis.md).
const std::vector<HardwareCeilings>& datasheet_table();

// Looks a device up by name, ignoring case, spaces, dashes and underscores, with a few
// aliases ("h100" = "H100 SXM", "a100" = "A100 80GB", "4090" = "RTX 4090"). The error lists
// the known names.
Result<HardwareCeilings> find_datasheet(std::string_view name);

// Critical (ridge-point) intensity in FLOP/byte: peak TFLOP/s ÷ bandwidth. 0 when either
// ceiling is unknown.
double critical_intensity(double peak_tflops, double bandwidth_gb_s);

}  // namespace crosspoint::analysis
