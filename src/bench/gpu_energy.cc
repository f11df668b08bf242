#include "bench/gpu_energy.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace crosspoint::bench {

// NVML's C API (nvml.h), the few calls used, declared here: the header is not needed to build.
using NvmlDevice = void*;
struct GpuEnergyMeter::Api {
  void* library = nullptr;
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  int (*device_count)(unsigned int*) = nullptr;
  int (*device_by_index)(unsigned int, NvmlDevice*) = nullptr;
  int (*device_name)(NvmlDevice, char*, unsigned int) = nullptr;
  int (*total_energy)(NvmlDevice, unsigned long long*) = nullptr;
  std::vector<NvmlDevice> devices;
  std::vector<std::string> names;
};

namespace {

template <typename F>
bool resolve(void* library, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(library, name));
  return *out != nullptr;
}

}  // namespace

Result<std::unique_ptr<GpuEnergyMeter>> GpuEnergyMeter::open() {
  const char* env = std::getenv("CROSSPOINT_NVML_LIBRARY");
  const std::string path = env != nullptr && *env != '\0' ? env : "libnvidia-ml.so.1";
  auto api = std::make_unique<Api>();
  api->library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (api->library == nullptr) return unsupported("no NVML (" + path + " does not load): no NVIDIA driver here");
  std::unique_ptr<GpuEnergyMeter> meter(new GpuEnergyMeter(std::move(api)));
  Api& a = *meter->api_;
  if (!resolve(a.library, "nvmlInit_v2", &a.init) || !resolve(a.library, "nvmlShutdown", &a.shutdown) ||
      !resolve(a.library, "nvmlDeviceGetCount_v2", &a.device_count) ||
      !resolve(a.library, "nvmlDeviceGetHandleByIndex_v2", &a.device_by_index) ||
      !resolve(a.library, "nvmlDeviceGetName", &a.device_name) ||
      !resolve(a.library, "nvmlDeviceGetTotalEnergyConsumption", &a.total_energy)) {
    return unsupported(path + " lacks an NVML call the energy reading needs");
  }
  if (int rc = a.init(); rc != 0) {
    a.init = nullptr;  // nothing to shut down
    return unsupported("NVML did not initialise (error " + std::to_string(rc) + ")");
  }
  unsigned int count = 0;
  if (a.device_count(&count) != 0 || count == 0) return unsupported("NVML sees no GPU");
  for (unsigned int i = 0; i < count; ++i) {
    NvmlDevice device = nullptr;
    if (a.device_by_index(i, &device) != 0) return unsupported("NVML: no handle for GPU " + std::to_string(i));
    char name[96] = {};
    if (a.device_name(device, name, sizeof name) != 0) std::snprintf(name, sizeof name, "GPU %u", i);
    unsigned long long mj = 0;
    if (a.total_energy(device, &mj) != 0)
      return unsupported(std::string("NVML has no energy counter for ") + name + " (Volta or later needed)");
    a.devices.push_back(device);
    a.names.emplace_back(name);
  }
  return meter;
}

GpuEnergyMeter::GpuEnergyMeter(std::unique_ptr<Api> api) : api_(std::move(api)) {}

GpuEnergyMeter::~GpuEnergyMeter() {
  if (api_->init != nullptr && api_->shutdown != nullptr) api_->shutdown();
  if (api_->library != nullptr) dlclose(api_->library);
}

Result<GpuEnergyReading> GpuEnergyMeter::read() const {
  GpuEnergyReading reading;
  reading.devices = api_->names;
  for (size_t i = 0; i < api_->devices.size(); ++i) {
    unsigned long long mj = 0;
    if (int rc = api_->total_energy(api_->devices[i], &mj); rc != 0)
      return internal_error("NVML: reading " + api_->names[i] + "'s energy failed (error " + std::to_string(rc) + ")");
    reading.millijoules.push_back(mj);
  }
  return reading;
}

GpuEnergySummary summarize_gpu_energy(const GpuEnergyReading& before, const GpuEnergyReading& after, double duration_s,
                                      int completed_requests, int64_t output_tokens) {
  GpuEnergySummary s;
  if (before.millijoules.size() != after.millijoules.size() || before.millijoules.empty()) {
    s.note = "the GPUs NVML listed changed during the run";
    return s;
  }
  uint64_t mj = 0;
  for (size_t i = 0; i < before.millijoules.size(); ++i) {
    if (after.millijoules[i] < before.millijoules[i]) {
      s.note = "an energy counter went backwards (driver reloaded?)";
      return s;
    }
    mj += after.millijoules[i] - before.millijoules[i];
  }
  s.measured = true;
  s.devices = after.devices;
  s.joules = static_cast<double>(mj) / 1000.0;
  if (completed_requests > 0) s.joules_per_request = s.joules / completed_requests;
  if (output_tokens > 0) s.joules_per_output_token = s.joules / static_cast<double>(output_tokens);
  if (duration_s > 0) s.mean_watts = s.joules / duration_s;
  return s;
}

bool is_local_url(const std::string& base_url) {
  std::string rest = base_url;
  if (const size_t scheme = rest.find("://"); scheme != std::string::npos) rest = rest.substr(scheme + 3);
  rest = rest.substr(0, rest.find('/'));
  std::string host;
  if (!rest.empty() && rest[0] == '[') {
    host = rest.substr(1, rest.find(']') - 1);
  } else {
    host = rest.substr(0, rest.find(':'));
  }
  return host == "localhost" || host == "::1" || host == "0.0.0.0" || host.rfind("127.", 0) == 0;
}

}  // namespace crosspoint::bench
