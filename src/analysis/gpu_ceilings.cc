// Host side of the GPU ceilings: the result as ceilings and JSON, the datasheet match, the
// --device auto decision, and the stubs used when CUDA is not compiled in.
#include "analysis/gpu_ceilings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <nlohmann/json.hpp>

namespace crosspoint::analysis {

GpuMeasureOptions GpuMeasureOptions::quick() {
  GpuMeasureOptions o;
  o.max_bandwidth_buffer_bytes = int64_t{256} << 20;
  o.num_bandwidth_repeats = 10;
  o.gemm_size = 2048;
  o.num_gemm_repeats = 10;
  o.num_warmups = 2;
  return o;
}

HardwareCeilings GpuMeasurement::as_ceilings() const {
  HardwareCeilings c;
  c.name = gpu_name;
  c.memory_gb = static_cast<double>(total_memory_bytes) / 1e9;
  c.bandwidth_gb_s = read_bandwidth_gb_s.median;
  c.fp16_tflops = fp16_gemm_tflops.median;
  c.fp8_tflops = fp8_gemm_tflops.median;
  c.int8_tops = int8_gemm_tops.median;
  c.source = "measured by crosspoint hwinfo on " + gpu_name + " at " + measured_at_utc + ": " + method;
  return c;
}

namespace {

nlohmann::json rate_json(const GpuRate& rate) {
  return {{"median", rate.median}, {"best", rate.best}, {"num_repeats", rate.num_repeats}};
}

// Lower case without spaces, dashes and underscores: "NVIDIA A100-SXM4-40GB" -> "nvidiaa100sxm440gb".
std::string squeeze(std::string_view name) {
  std::string out;
  for (char ch : name) {
    if (ch == ' ' || ch == '-' || ch == '_') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  return out;
}

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

}  // namespace

nlohmann::json gpu_measurement_to_json(const GpuMeasurement& m) {
  return {{"gpu_name", m.gpu_name},
          {"compute_capability", fmt::format("{}.{}", m.compute_capability_major, m.compute_capability_minor)},
          {"num_sms", m.num_sms},
          {"sm_clock_mhz", m.sm_clock_mhz},
          {"memory_clock_mhz", m.memory_clock_mhz},
          {"memory_bus_width_bits", m.memory_bus_width_bits},
          {"l2_cache_bytes", m.l2_cache_bytes},
          {"total_memory_bytes", m.total_memory_bytes},
          {"free_memory_bytes", m.free_memory_bytes},
          {"cuda_runtime_version", m.cuda_runtime_version},
          {"cuda_driver_version", m.cuda_driver_version},
          {"measured_at_utc", m.measured_at_utc},
          {"read_bandwidth_gb_s", rate_json(m.read_bandwidth_gb_s)},
          {"write_bandwidth_gb_s", rate_json(m.write_bandwidth_gb_s)},
          {"copy_bandwidth_gb_s", rate_json(m.copy_bandwidth_gb_s)},
          {"bandwidth_buffer_bytes", m.bandwidth_buffer_bytes},
          {"fp16_gemm_tflops", rate_json(m.fp16_gemm_tflops)},
          {"fp8_gemm_tflops", rate_json(m.fp8_gemm_tflops)},
          {"fp8_note", m.fp8_note},
          {"int8_gemm_tops", rate_json(m.int8_gemm_tops)},
          {"int8_note", m.int8_note},
          {"gemm_size", m.gemm_size},
          {"method", m.method}};
}

Result<HardwareCeilings> datasheet_for_gpu_name(std::string_view gpu_name) {
  if (auto exact = find_datasheet(gpu_name); exact.is_ok()) return exact;
  const std::string key = squeeze(gpu_name);
  // Most specific first: "l40s" before "l4", "a100" before "a10", "a10g" before "a10".
  const char* entry = nullptr;
  if (contains(key, "h200")) entry = "H200";
  else if (contains(key, "h100") && contains(key, "pcie")) entry = "H100 PCIe";
  else if (contains(key, "h100")) entry = "H100 SXM";
  else if (contains(key, "a100") && contains(key, "40gb")) entry = "A100 40GB";
  else if (contains(key, "a100")) entry = "A100 80GB";
  else if (contains(key, "l40s")) entry = "L40S";
  else if (contains(key, "a10g")) entry = "A10G";
  else if (contains(key, "a10")) entry = "A10";
  else if (contains(key, "l4") && !contains(key, "l40")) entry = "L4";
  else if (contains(key, "teslat4") || key == "nvidiat4" || key == "t4") entry = "T4";
  else if (contains(key, "rtx4090")) entry = "RTX 4090";
  else if (contains(key, "rtx3090")) entry = "RTX 3090";
  if (entry == nullptr) return not_found("GPU '" + std::string(gpu_name) + "' has no entry in the datasheet table");
  return find_datasheet(entry);
}

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

std::string utc_minute_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M UTC", &utc);
  return text;
}

bool cuda_compiled_in() {
#ifdef CROSSPOINT_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

Result<std::string> resolve_device_with(const std::string& device, int num_gpus, bool compiled_in,
                                        std::string* reason) {
  auto say = [&](std::string text) {
    if (reason != nullptr) *reason = std::move(text);
  };
  if (device == "cpu") {
    say("--device cpu");
    return std::string("cpu");
  }
  if (device == "cuda") {
    if (!compiled_in) return unsupported("--device cuda: this crosspoint was built without CUDA (CROSSPOINT_CUDA=OFF)");
    if (num_gpus <= 0) return unsupported("--device cuda: no CUDA GPU is visible on this machine");
    say("--device cuda");
    return std::string("cuda");
  }
  if (device == "auto") {
    if (!compiled_in) {
      say("--device auto: this build has no CUDA backend, so the CPU");
      return std::string("cpu");
    }
    if (num_gpus <= 0) {
      say("--device auto: no CUDA GPU is visible, so the CPU");
      return std::string("cpu");
    }
    say(fmt::format("--device auto: {} CUDA GPU{} visible, so device 0", num_gpus, num_gpus == 1 ? "" : "s"));
    return std::string("cuda");
  }
  return invalid_argument("--device must be cpu, cuda or auto, got '" + device + "'");
}

Result<std::string> resolve_device(const std::string& device, std::string* reason) {
  // Counting GPUs initialises the CUDA runtime: only done when the answer depends on it.
  const int num_gpus = device == "cpu" ? 0 : gpu_device_count();
  return resolve_device_with(device, num_gpus, cuda_compiled_in(), reason);
}

#ifndef CROSSPOINT_HAVE_CUDA
int gpu_device_count() { return 0; }

Result<GpuMeasurement> measure_gpu(const GpuMeasureOptions&) {
  return unsupported("cannot measure a GPU: this crosspoint was built without CUDA (CROSSPOINT_CUDA=OFF)");
}
#endif

}  // namespace crosspoint::analysis
