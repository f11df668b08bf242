// Plain host references for the CUDA kernels, and small test helpers (device buffers,
// random data, error norms). Doubles for accumulation; no tricks.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace crosspoint::cuda::testing {

bool gpu_available();

#define CROSSPOINT_SKIP_WITHOUT_GPU() \
  if (!::crosspoint::cuda::testing::gpu_available()) GTEST_SKIP() << "no CUDA GPU on this machine"

// Device copy of a host vector; frees on destruction.
template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t count) : count_(count) {
    EXPECT_EQ(cudaMalloc(&ptr_, std::max<size_t>(count, 1) * sizeof(T)), cudaSuccess);
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void upload(const std::vector<T>& host) {
    EXPECT_EQ(cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    EXPECT_EQ(cudaMemcpy(host.data(), ptr_, count_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }
  // Fills every byte with `byte` (0xFF makes fp16 NaN): catches outputs never written.
  void poison(int byte = 0xFF) { EXPECT_EQ(cudaMemset(ptr_, byte, count_ * sizeof(T)), cudaSuccess); }
  T* get() const { return ptr_; }

 private:
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

// fp16 bits of uniform values in [lo, hi).
std::vector<uint16_t> random_f16(std::mt19937& rng, size_t count, float lo, float hi);
std::vector<float> f16_to_f32(const std::vector<uint16_t>& bits);
// Random e4m3 codes (every finite code, NaN codes replaced by 0), magnitudes spread like
// quantised activations and weights.
std::vector<uint8_t> random_e4m3(std::mt19937& rng, size_t count);

// float32 -> float8_e4m3fn, round to nearest even, saturating to +-448 (NaN stays NaN).
uint8_t e4m3_from_f32(float value);
float e4m3_to_f32(uint8_t code);

// Per-token quantisation as fp8_quant.h specifies: q [M, K], scale [M].
void fp8_quantize_per_token_ref(const std::vector<uint16_t>& x, int m, int k, std::vector<uint8_t>* q,
                                std::vector<float>* scale);

// y[m, n] = sum_k a(m, k) * b(n, k) in double; a_at / b_at give float values.
template <typename A, typename B>
std::vector<double> matmul_nt_ref(int m, int n, int k, A a_at, B b_at) {
  std::vector<double> y(static_cast<size_t>(m) * n, 0.0);
  std::vector<double> a_row(k);
  for (int i = 0; i < m; ++i) {
    for (int kk = 0; kk < k; ++kk) a_row[kk] = a_at(i, kk);
    for (int j = 0; j < n; ++j) {
      double s = 0.0;
      for (int kk = 0; kk < k; ++kk) s += a_row[kk] * b_at(j, kk);
      y[static_cast<size_t>(i) * n + j] = s;
    }
  }
  return y;
}

// ||y - ref|| / ||ref|| over fp16 outputs; NaN or inf anywhere gives +inf.
double relative_error_f16(const std::vector<uint16_t>& y, const std::vector<double>& ref);

}  // namespace crosspoint::cuda::testing
