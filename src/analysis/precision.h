// Serving precisions as the roofline sees them: how many bytes each weight costs when it is
// streamed from memory, and which math (and so which peak) the matmuls run on.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "analysis/hardware_table.h"
#include "common/status.h"

namespace crosspoint::analysis {

enum class Precision {
  kFp32,
  kFp16,      // fp16 or bf16 weights and activations
  kW8A8Fp8,   // fp8 e4m3 weights with one fp32 scale per output channel, fp8 activations
  kW8A8Int8,  // int8 weights per channel, int8 activations
  kW4A16,     // int4 weights, one fp16 scale and one packed 4-bit zero point per group
};

// Canonical label: "fp32", "fp16", "w8a8-fp8", "w8a8-int8", "w4a16".
std::string_view precision_name(Precision precision);

// Accepts the canonical labels and common spellings ("bf16", "float16", "fp8", "w8a8",
// "int4", "gptq", "awq", "gptq-int4"); case-insensitive. Unknown -> invalid_argument.
Result<Precision> parse_precision(std::string_view text);

// Bytes of one [num_out, num_in] linear layer's weights as stored and streamed, including
// its scales and zero points (bias not included). group_size only matters for W4A16.
double linear_weight_bytes(Precision precision, int64_t num_out, int64_t num_in, int64_t group_size = 128);

// Average bytes per weight of a large square-ish layer (for --model-params without shapes):
// fp16 2, fp8 1 (+ scales, negligible), int4 g128 0.5 + 2.5/128.
double bytes_per_weight(Precision precision, int64_t group_size = 128);

// The peak the precision's matmuls run at on this device, TFLOP/s (or TOP/s): fp16 math for
// fp16 and W4A16 (weights are dequantised to fp16), fp8 for W8A8-FP8, int8 for W8A8-INT8.
// When the device lacks that math (fp8 on an A100), the fp16 peak is returned and
// *fell_back (if given) is set.
double math_peak_tflops(Precision precision, const HardwareCeilings& hardware, bool* fell_back = nullptr);

}  // namespace crosspoint::analysis
