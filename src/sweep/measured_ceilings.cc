#include "sweep/measured_ceilings.h"

#include <fstream>
#include <sstream>

#include "analysis/hardware_json.h"

namespace crosspoint::sweep {
namespace {

// The "<field>" number of measured[key], or nullopt when the entry or field is absent.
std::optional<double> entry_number(const nlohmann::json& measured, const std::string& key, const char* field) {
  auto it = measured.find(key);
  if (it == measured.end() || !it->is_object()) return std::nullopt;
  auto value = it->find(field);
  if (value == it->end() || !value->is_number()) return std::nullopt;
  return value->get<double>();
}

// The best "<field>" over entries whose key contains `needle` (and starts with `prefix`).
std::optional<double> best_entry(const nlohmann::json& measured, const std::string& prefix, const std::string& needle,
                                 const char* field) {
  std::optional<double> best;
  for (const auto& [key, entry] : measured.items()) {
    if (key.rfind(prefix, 0) != 0 || key.find(needle) == std::string::npos) continue;
    if (auto v = entry_number(measured, key, field); v && *v > 0 && (!best || *v > *best)) best = v;
  }
  return best;
}

}  // namespace

Result<analysis::HardwareCeilings> ceilings_from_torch_measurement(const nlohmann::json& measured,
                                                                   const std::string& source) {
  if (!measured.is_object()) return invalid_argument(source + ": ceilings must be a JSON object");
  analysis::HardwareCeilings c;
  auto name = measured.find("gpu_name");
  if (name == measured.end() || !name->is_string()) return invalid_argument(source + ": 'gpu_name' is missing");
  c.name = name->get<std::string>();
  if (auto mem = measured.find("total_mem_bytes"); mem != measured.end() && mem->is_number()) {
    c.memory_gb = mem->get<double>() / 1e9;
  }
  auto bandwidth = best_entry(measured, "", "(read bytes)", "GBps_median");
  if (!bandwidth) {
    return invalid_argument(source + ": no '... (read bytes)' entry with GBps_median (the read bandwidth)");
  }
  c.bandwidth_gb_s = *bandwidth;
  auto fp16 = entry_number(measured, "matmul_float16_8192^3", "TFLOPs_median");
  if (!fp16) fp16 = entry_number(measured, "matmul_bfloat16_8192^3", "TFLOPs_median");
  if (!fp16) return invalid_argument(source + ": 'matmul_float16_8192^3' with TFLOPs_median is missing");
  c.fp16_tflops = *fp16;
  auto fp8 = best_entry(measured, "scaled_mm_fp8e4m3_rowwise", "", "TFLOPs_median");
  if (!fp8) fp8 = best_entry(measured, "scaled_mm_fp8e4m3_", "", "TFLOPs_median");
  c.fp8_tflops = fp8.value_or(0);  // 0: no fp8 matmul measured (a GPU without fp8 tensor cores)
  std::string details;
  for (const char* key : {"torch", "cuda_runtime", "cc"}) {
    if (auto it = measured.find(key); it != measured.end() && it->is_string()) {
      details += std::string(details.empty() ? "" : ", ") + key + " " + it->get<std::string>();
    }
  }
  c.source = "measured: ceilings.py (PyTorch; best streaming read, 8192^3 fp16 and row-wise fp8 matmul, medians" +
             (details.empty() ? std::string() : "; " + details) + ")";
  return c;
}

Result<analysis::HardwareCeilings> load_measured_ceilings(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("--ceilings: " + path + ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json measured = nlohmann::json::parse(text.str(), nullptr, false);
  if (measured.is_discarded()) return corrupt("--ceilings: " + path + ": not valid JSON");
  if (measured.is_object() && measured.contains("gpu_name")) {
    return ceilings_from_torch_measurement(measured, "--ceilings: " + path);
  }
  return analysis::ceilings_from_json(measured, "--ceilings: " + path);
}

nlohmann::json measured_ceilings_hwinfo_json(const analysis::HardwareCeilings& ceilings, const std::string& device,
                                             const nlohmann::json& raw) {
  const bool measured = ceilings.source.rfind("measured", 0) == 0;
  return {{"device", device},
          {"measured", measured},
          {"ceilings", analysis::ceilings_to_json(ceilings)},
          {"measurement", raw}};
}

}  // namespace crosspoint::sweep
