// Measured GPU ceilings for `crosspoint hwinfo --device cuda` and the sweep: the device's
// properties, HBM bandwidth (a streaming read with 16-byte loads over a buffer much larger
// than L2, a streaming write, a device-to-device copy) and dense GEMM rates through cuBLASLt
// (fp16, int8, and fp8 e4m3 on sm_89+). Every figure is the median of event-timed repetitions after
// a warm-up. The roofline's bandwidth ceiling is the streaming read: decode streams weights.
//
// The measurement lives in cuda/gpu_ceilings.cu; without CUDA compiled in, measure_gpu()
// returns a clear Status and gpu_device_count() is 0. The rest of this header (the result
// struct, its JSON, the datasheet match, device resolution) is plain host code.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analysis/hardware_table.h"
#include "common/status.h"

namespace crosspoint::analysis {

struct GpuMeasureOptions {
  int device_idx = 0;                                     // CUDA device ordinal
  int64_t max_bandwidth_buffer_bytes = int64_t{4} << 30;  // read/write buffer, capped at 1/4 of free memory
  int num_bandwidth_repeats = 20;                         // timed runs per bandwidth figure (median)
  int64_t gemm_size = 8192;                               // M = N = K of the GEMMs
  int num_gemm_repeats = 20;                              // timed runs per GEMM rate (median)
  int num_warmups = 3;                                    // untimed runs before each figure

  // Small buffers and GEMMs: a rough figure in well under a second.
  static GpuMeasureOptions quick();
};

// One timed figure: the rate of the median run and of the fastest one.
struct GpuRate {
  double median = 0;  // GB/s or TFLOP/s of the median run
  double best = 0;    // of the fastest run
  int num_repeats = 0;
};

struct GpuMeasurement {
  // From cudaGetDeviceProperties / cudaDeviceGetAttribute.
  std::string gpu_name;              // "NVIDIA H200"
  int compute_capability_major = 0;  // 9 for sm_90
  int compute_capability_minor = 0;
  int num_sms = 0;
  double sm_clock_mhz = 0;      // peak SM clock
  double memory_clock_mhz = 0;  // peak memory clock
  int memory_bus_width_bits = 0;
  int64_t l2_cache_bytes = 0;
  int64_t total_memory_bytes = 0;
  int64_t free_memory_bytes = 0;  // before the measurement allocated anything
  int cuda_runtime_version = 0;   // e.g. 13000
  int cuda_driver_version = 0;
  std::string measured_at_utc;  // "2026-11-30 04:50 UTC"

  // Bandwidth in GB/s (1e9 bytes/s). Copy counts read + write bytes, like ceilings.py.
  GpuRate read_bandwidth_gb_s;   // streaming read, 16-byte loads: the roofline's ceiling
  GpuRate write_bandwidth_gb_s;  // streaming write, 16-byte stores
  GpuRate copy_bandwidth_gb_s;   // cudaMemcpyAsync device to device
  int64_t bandwidth_buffer_bytes = 0;

  // Dense GEMM rates in TFLOP/s (2 M N K flops per GEMM), fp32 accumulation.
  GpuRate fp16_gemm_tflops;  // cuBLASLt fp16 in, fp16 out
  GpuRate fp8_gemm_tflops;   // cuBLASLt e4m3 in, fp16 out; 0 when not supported
  std::string fp8_note;      // why fp8 is 0 ("sm_80 has no fp8 tensor cores"), else ""
  GpuRate int8_gemm_tops;    // cuBLASLt int8 in, int32 sums and out (TOP/s); 0 when it failed
  std::string int8_note;     // why int8 is 0, else ""
  int64_t gemm_size = 0;

  std::string method;  // one line saying what was measured and how

  // As ceilings for the roofline: name = the GPU, bandwidth = the streaming read (median),
  // fp16/fp8/int8 = the GEMM medians; source says "measured by crosspoint hwinfo on <GPU> at <date>".
  HardwareCeilings as_ceilings() const;
};

// Number of CUDA devices visible to this process; 0 without CUDA compiled in, without a
// driver, or without a GPU (never an error).
int gpu_device_count();

// "auto" -> "cuda" when a GPU is visible, else "cpu"; "cpu" and "cuda" are returned as they
// are; anything else is an error naming the option. `reason` (may be null) gets one line
// saying why ("auto: 1 CUDA GPU visible", "auto: this build has no CUDA").
Result<std::string> resolve_device(const std::string& device, std::string* reason = nullptr);
// The same decision with the GPU count given (for tests and callers that counted already).
Result<std::string> resolve_device_with(const std::string& device, int num_gpus, bool cuda_compiled_in,
                                        std::string* reason = nullptr);
// True when this binary was built with the CUDA backend.
bool cuda_compiled_in();

// Measures the GPU. Frees everything it allocated before returning (the sweep's servers need
// the memory). Errors: unsupported without CUDA or without a GPU, internal on CUDA failures.
Result<GpuMeasurement> measure_gpu(const GpuMeasureOptions& options);

// The raw measurement as JSON (the "measurement" object of `hwinfo --json`).
nlohmann::json gpu_measurement_to_json(const GpuMeasurement& measurement);

// The datasheet entry of a GPU as CUDA names it ("NVIDIA H200", "NVIDIA H100 80GB HBM3",
// "NVIDIA A100-SXM4-40GB", "NVIDIA GeForce RTX 4090"), or not_found.
Result<HardwareCeilings> datasheet_for_gpu_name(std::string_view gpu_name);

// Median of the values (the mean of the two middle ones for an even count); 0 when empty.
double median_of(std::vector<double> values);

// "2026-11-30 04:50 UTC" for now.
std::string utc_minute_now();

}  // namespace crosspoint::analysis
