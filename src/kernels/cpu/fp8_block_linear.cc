// Block-wise FP8 linear on the CPU: the reference's quantisation, then per output row and
// group an fp32 dot product of decoded e4m3 values, output rows split over the global pool.
// The CPU is the correctness path for this format (its speed is the GPU's business).
#include <algorithm>
#include <vector>

#include "common/thread_pool.h"
#include "kernels/fp8.h"
#include "kernels/fp8_block.h"

namespace crosspoint {

Status fp8_block_linear(const Fp8BlockLinearArgs& a) {
  CROSSPOINT_RETURN_IF_ERROR(validate_fp8_block_linear_args(a));
  if (a.num_rows == 0) return Status::ok();
  const int64_t K = a.in_features, N = a.out_features, M = a.num_rows;
  const int64_t groups = (K + a.block_k - 1) / a.block_k;
  std::vector<uint8_t> xq(static_cast<size_t>(M * K));
  std::vector<float> x_scale(static_cast<size_t>(M * groups));
  CROSSPOINT_RETURN_IF_ERROR(fp8_block_quantize_ref(a, xq.data(), x_scale.data()));
  const float* table = e4m3_to_f32_table();
  std::vector<float> xf(xq.size());  // decoded once: [M, K]
  for (size_t i = 0; i < xq.size(); ++i) xf[i] = table[xq[i]];
  global_thread_pool().parallel_for(
      static_cast<size_t>(N),
      [&](size_t n_begin, size_t n_end) {
        std::vector<float> w(static_cast<size_t>(K));
        for (int64_t n = static_cast<int64_t>(n_begin); n < static_cast<int64_t>(n_end); ++n) {
          for (int64_t k = 0; k < K; ++k) w[k] = table[a.weight[n * K + k]];
          const float* w_scale = a.weight_scale + (n / a.block_n) * groups;
          for (int64_t t = 0; t < M; ++t) {
            const float* x = xf.data() + t * K;
            float out = 0.0f;
            for (int64_t g = 0; g < groups; ++g) {
              float sum = 0.0f;
              for (int64_t k = g * a.block_k; k < std::min(K, (g + 1) * a.block_k); ++k) sum += x[k] * w[k];
              out += sum * x_scale[t * groups + g] * w_scale[g];
            }
            a.y[t * N + n] = out + (a.bias ? a.bias[n] : 0.0f);
          }
        }
      },
      16);
  return Status::ok();
}

}  // namespace crosspoint
