// The energy the machine's NVIDIA GPUs used during a bench run, from NVML's cumulative energy
// counters (nvmlDeviceGetTotalEnergyConsumption, millijoules since the driver loaded; Volta and
// later). NVML is opened at run time (libnvidia-ml.so.1, or $CROSSPOINT_NVML_LIBRARY), so the
// bench runs where there is no driver; the reading is only meaningful when the server under
// test runs on this machine's GPUs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace crosspoint::bench {

struct GpuEnergyReading {
  std::vector<std::string> devices;   // NVML's names, in index order
  std::vector<uint64_t> millijoules;  // each device's counter
};

class GpuEnergyMeter {
 public:
  // Loads NVML and finds its devices: unavailable (with the reason) without a library, a
  // device, or the energy counter.
  static Result<std::unique_ptr<GpuEnergyMeter>> open();
  ~GpuEnergyMeter();
  GpuEnergyMeter(const GpuEnergyMeter&) = delete;
  GpuEnergyMeter& operator=(const GpuEnergyMeter&) = delete;

  Result<GpuEnergyReading> read() const;

  struct Api;  // NVML's entry points (gpu_energy.cc)

 private:
  explicit GpuEnergyMeter(std::unique_ptr<Api> api);
  std::unique_ptr<Api> api_;
};

// What a run used: the counters' differences summed over the devices, per request and per
// output token of the successful requests.
struct GpuEnergySummary {
  bool measured = false;
  std::string note;  // why not, when not measured; else which devices
  std::vector<std::string> devices;
  double joules = 0;
  double joules_per_request = 0;
  double joules_per_output_token = 0;
  double mean_watts = 0;  // joules / the run's duration
};

GpuEnergySummary summarize_gpu_energy(const GpuEnergyReading& before, const GpuEnergyReading& after, double duration_s,
                                      int completed_requests, int64_t output_tokens);

// Whether a base URL's host is this machine (localhost, 127.x, ::1, 0.0.0.0): only then do the
// local GPUs serve it.
bool is_local_url(const std::string& base_url);

}  // namespace crosspoint::bench
