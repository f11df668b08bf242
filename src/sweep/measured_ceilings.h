// The ceilings a sweep measures its cells against, from a file given with --ceilings:
// either the JSON of shared/tools/gpu/ceilings.py (run on the GPU beside the sweep: best
// streaming-read bandwidth, fp16 and fp8 dense matmul rates, the GPU's name and memory) or
// `crosspoint hwinfo --json` output / a bare ceilings object (analysis/hardware_json.h).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "analysis/hardware_table.h"
#include "common/status.h"

namespace crosspoint::sweep {

// From ceilings.py's dict: name = "gpu_name"; memory = "total_mem_bytes";
// bandwidth = the best median GB/s of the "... (read bytes)" entries (the streaming read the
// decode step does); fp16 = "matmul_float16_8192^3" (else bfloat16) median TFLOP/s;
// fp8 = the best median of the "scaled_mm_fp8e4m3_rowwise_*" entries (per-token x
// per-channel, the W8A8 scheme; tensor-wise when row-wise is missing). The error names the
// file and the missing key.
Result<analysis::HardwareCeilings> ceilings_from_torch_measurement(const nlohmann::json& measured,
                                                                   const std::string& source_name);

// Reads either format (a ceilings.py file has "gpu_name").
Result<analysis::HardwareCeilings> load_measured_ceilings(const std::string& path);

// The file the sweep keeps as hwinfo.json: {"device", "measured" (the source says so), "ceilings": {...},
// "measurement": <the file as read>}, the shape `crosspoint hwinfo --json` prints.
nlohmann::json measured_ceilings_hwinfo_json(const analysis::HardwareCeilings& ceilings, const std::string& device,
                                             const nlohmann::json& raw);

}  // namespace crosspoint::sweep
