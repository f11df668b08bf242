// Measured CPU ceilings for `crosspoint hwinfo`: memory bandwidth (every thread streaming a
// buffer much larger than the caches) and matmul rates of a simple cache-blocked GEMM in
// fp32 and with fp16 weights converted to fp32. The GEMM is this file's own plain kernel,
// not a tuned BLAS: its rate is a lower bound of the machine's peak, and is reported as such.
#pragma once

#include <cstdint>
#include <string>

#include "analysis/hardware_table.h"
#include "common/thread_pool.h"

namespace crosspoint::analysis {

struct CpuMeasureOptions {
  int64_t bandwidth_buffer_bytes = int64_t{512} << 20;  // read buffer; >> last-level cache
  int num_bandwidth_repeats = 5;                        // best of
  int64_t gemm_size = 512;                              // M = N = K
  int num_gemm_repeats = 3;                             // best of
};

struct CpuMeasurement {
  std::string cpu_name;  // /proc/cpuinfo "model name"
  int num_threads = 0;
  double memory_gb = 0;            // physical memory, GB
  double read_bandwidth_gb_s = 0;  // all threads summing a buffer, best of repeats
  double fp32_gemm_tflops = 0;     // blocked fp32 GEMM, best of repeats
  double fp16_gemm_tflops = 0;     // same with B in fp16, converted to fp32 per tile
  int64_t bandwidth_buffer_bytes = 0;
  int64_t gemm_size = 0;
  std::string method;  // one line saying what was measured and how

  // As ceilings for the roofline: fp16 = the fp16-weight GEMM rate, fp32 = the fp32 rate.
  HardwareCeilings as_ceilings() const;
};

CpuMeasurement measure_cpu(const CpuMeasureOptions& options, ThreadPool& pool);

// The measured kernels, exposed for their tests. Row-major C[m, n] = A[m, k] * B[k, n].
// a: [m, k] fp32, b: [k, n] fp32 or fp16 bits, c: [m, n] fp32 (overwritten).
void gemm_f32_blocked(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k, ThreadPool& pool);
void gemm_f32_f16_blocked(const float* a, const uint16_t* b, float* c, int64_t m, int64_t n, int64_t k,
                          ThreadPool& pool);
// Plain reference: the triple loop, accumulating in double.
void gemm_reference(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k);
// Sum of n floats read with every thread of the pool (the bandwidth kernel).
double parallel_sum(const float* data, int64_t n, ThreadPool& pool);

}  // namespace crosspoint::analysis
