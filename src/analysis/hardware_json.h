// HardwareCeilings as JSON: what `crosspoint hwinfo --json` prints and `crosspoint roofline
// --hwinfo FILE` reads back, so a machine measured once can be analysed anywhere.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "analysis/hardware_table.h"
#include "common/status.h"

namespace crosspoint::analysis {

// {"name", "memory_gb", "bandwidth_gb_s", "fp16_tflops", "fp8_tflops", "int8_tops",
//  "fp32_tflops", "critical_intensity_fp16", "source"}
nlohmann::json ceilings_to_json(const HardwareCeilings& ceilings);
// Reads the object above (extra keys ignored); bandwidth_gb_s must be positive. A file may
// also hold `hwinfo --json` output, whose ceilings sit under "ceilings".
Result<HardwareCeilings> ceilings_from_json(const nlohmann::json& object, const std::string& source_name);
Result<HardwareCeilings> load_ceilings(const std::string& path);

}  // namespace crosspoint::analysis
