#include "analysis/cpu_ceilings.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <mutex>
#include <vector>

#include "common/clock.h"
#include "common/dtype.h"

namespace crosspoint::analysis {

namespace {

constexpr int64_t kTileK = 128;  // rows of B kept hot in L1/L2 per pass
constexpr int64_t kTileN = 256;  // columns of B (1 KiB of fp32 per row)
constexpr int64_t kRowsPerTask = 8;

// C rows [row_begin, row_end) += A rows * B panel [k0, k0 + kk) x [n0, n0 + nn), B panel in
// fp32 with row stride ldb.
void accumulate_panel(const float* a, const float* b_panel, int64_t ldb, float* c, int64_t n, int64_t k,
                      int64_t row_begin, int64_t row_end, int64_t k0, int64_t kk, int64_t n0, int64_t nn) {
  for (int64_t i = row_begin; i < row_end; ++i) {
    float* c_row = c + i * n + n0;
    const float* a_row = a + i * k + k0;
    for (int64_t p = 0; p < kk; ++p) {
      const float a_value = a_row[p];
      const float* b_row = b_panel + p * ldb;
      for (int64_t j = 0; j < nn; ++j) c_row[j] += a_value * b_row[j];  // vectorised by the compiler
    }
  }
}

std::string read_cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown cpu";
}

template <typename Fn>
double best_seconds(int repeats, Fn&& fn) {
  double best = 1e30;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    Stopwatch watch;
    fn();
    best = std::min(best, watch.elapsed_seconds());
  }
  return best;
}

}  // namespace

void gemm_f32_blocked(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k, ThreadPool& pool) {
  std::fill(c, c + m * n, 0.0f);
  const int64_t num_tasks = (m + kRowsPerTask - 1) / kRowsPerTask;
  pool.parallel_for(static_cast<size_t>(num_tasks), [&](size_t begin, size_t end) {
    const int64_t row_begin = static_cast<int64_t>(begin) * kRowsPerTask;
    const int64_t row_end = std::min(m, static_cast<int64_t>(end) * kRowsPerTask);
    for (int64_t n0 = 0; n0 < n; n0 += kTileN) {
      for (int64_t k0 = 0; k0 < k; k0 += kTileK) {
        accumulate_panel(a, b + k0 * n + n0, n, c, n, k, row_begin, row_end, k0, std::min(kTileK, k - k0), n0,
                         std::min(kTileN, n - n0));
      }
    }
  });
}

void gemm_f32_f16_blocked(const float* a, const uint16_t* b, float* c, int64_t m, int64_t n, int64_t k,
                          ThreadPool& pool) {
  std::fill(c, c + m * n, 0.0f);
  const int64_t num_tasks = (m + kRowsPerTask - 1) / kRowsPerTask;
  pool.parallel_for(static_cast<size_t>(num_tasks), [&](size_t begin, size_t end) {
    const int64_t row_begin = static_cast<int64_t>(begin) * kRowsPerTask;
    const int64_t row_end = std::min(m, static_cast<int64_t>(end) * kRowsPerTask);
    std::vector<float> panel(static_cast<size_t>(kTileK * kTileN));  // [kTileK, kTileN] fp32
    for (int64_t n0 = 0; n0 < n; n0 += kTileN) {
      const int64_t nn = std::min(kTileN, n - n0);
      for (int64_t k0 = 0; k0 < k; k0 += kTileK) {
        const int64_t kk = std::min(kTileK, k - k0);
        // Every thread converts its own copy of the panel: the conversion is part of what an
        // fp16-weight matmul costs on a CPU without fp16 arithmetic.
        for (int64_t p = 0; p < kk; ++p) {
          for (int64_t j = 0; j < nn; ++j) panel[p * kTileN + j] = f16_to_f32(b[(k0 + p) * n + n0 + j]);
        }
        accumulate_panel(a, panel.data(), kTileN, c, n, k, row_begin, row_end, k0, kk, n0, nn);
      }
    }
  });
}

void gemm_reference(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += static_cast<double>(a[i * k + p]) * b[p * n + j];
      c[i * n + j] = static_cast<float>(sum);
    }
  }
}

double parallel_sum(const float* data, int64_t n, ThreadPool& pool) {
  std::mutex mutex;
  double total = 0;
  pool.parallel_for(
      static_cast<size_t>(n),
      [&](size_t begin, size_t end) {
        // Eight independent accumulators so the loop is bound by loads, not by add latency.
        float partial[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        size_t i = begin;
        for (; i + 8 <= end; i += 8) {
          for (int lane = 0; lane < 8; ++lane) partial[lane] += data[i + lane];
        }
        double sum = 0;
        for (; i < end; ++i) sum += data[i];
        for (float p : partial) sum += p;
        std::lock_guard<std::mutex> lock(mutex);
        total += sum;
      },
      1 << 16);
  return total;
}

HardwareCeilings CpuMeasurement::as_ceilings() const {
  HardwareCeilings ceilings;
  ceilings.name = "cpu: " + cpu_name;
  ceilings.memory_gb = memory_gb;
  ceilings.bandwidth_gb_s = read_bandwidth_gb_s;
  ceilings.fp32_tflops = fp32_gemm_tflops;
  ceilings.fp16_tflops = fp16_gemm_tflops;
  ceilings.source = "measured: " + method;
  return ceilings;
}

CpuMeasurement measure_cpu(const CpuMeasureOptions& options, ThreadPool& pool) {
  CpuMeasurement out;
  out.cpu_name = read_cpu_name();
  out.num_threads = pool.num_threads();
  out.memory_gb = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1e9;

  // Bandwidth: first touch in parallel (pages land near the threads that read them).
  const int64_t num_floats = std::max<int64_t>(options.bandwidth_buffer_bytes / 4, 1024);
  std::vector<float> buffer(static_cast<size_t>(num_floats));
  pool.parallel_for(
      buffer.size(),
      [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) buffer[i] = static_cast<float>(i & 7);
      },
      1 << 16);
  volatile double sink = 0;
  const double read_s =
      best_seconds(options.num_bandwidth_repeats, [&] { sink = sink + parallel_sum(buffer.data(), num_floats, pool); });
  out.bandwidth_buffer_bytes = num_floats * 4;
  out.read_bandwidth_gb_s = static_cast<double>(out.bandwidth_buffer_bytes) / read_s / 1e9;
  buffer = {};

  // GEMM: square, fp32 then fp16 weights.
  const int64_t size = std::max<int64_t>(options.gemm_size, 16);
  std::vector<float> a(static_cast<size_t>(size * size)), b(a.size()), c(a.size());
  std::vector<uint16_t> b_f16(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(static_cast<int>(i % 13) - 6) * 0.01f;
    b[i] = static_cast<float>(static_cast<int>(i % 7) - 3) * 0.02f;
    b_f16[i] = f32_to_f16(b[i]);
  }
  const double flops = 2.0 * static_cast<double>(size) * static_cast<double>(size) * static_cast<double>(size);
  const double fp32_s = best_seconds(options.num_gemm_repeats,
                                     [&] { gemm_f32_blocked(a.data(), b.data(), c.data(), size, size, size, pool); });
  const double fp16_s = best_seconds(options.num_gemm_repeats, [&] {
    gemm_f32_f16_blocked(a.data(), b_f16.data(), c.data(), size, size, size, pool);
  });
  out.gemm_size = size;
  out.fp32_gemm_tflops = flops / fp32_s / 1e12;
  out.fp16_gemm_tflops = flops / fp16_s / 1e12;
  out.method = fmt::format(
      "{} threads summing a {} MiB buffer (best of {}); plain cache-blocked {}^3 GEMM in analysis/cpu_ceilings.cc, "
      "fp32 and fp16->fp32 (best of {}), not a tuned BLAS",
      out.num_threads, out.bandwidth_buffer_bytes >> 20, options.num_bandwidth_repeats, size, options.num_gemm_repeats);
  return out;
}

}  // namespace crosspoint::analysis
