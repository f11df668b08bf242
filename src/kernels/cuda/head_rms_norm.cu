#include "kernels/cuda/head_rms_norm.h"

#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/element16.cuh"
#include "kernels/cuda/programmatic_launch.cuh"

namespace crosspoint::cuda {
namespace {

constexpr int kMaxHeadDim = 256;
constexpr int kPerLane = kMaxHeadDim / 32;

// grid (T, num_q_heads + num_kv_heads), one warp each: lane l holds elements l, l + 32, ...
template <class E>
__global__ void __launch_bounds__(32)
    qk_head_rms_norm_kernel(uint16_t* __restrict__ qkv, int64_t row_stride, int num_q_heads, int head_dim,
                            const uint16_t* __restrict__ q_weight, const uint16_t* __restrict__ k_weight, float eps) {
  wait_for_prior_kernels();
  allow_dependent_launch();
  const int head = blockIdx.y, lane = threadIdx.x;
  uint16_t* x = qkv + static_cast<int64_t>(blockIdx.x) * row_stride + static_cast<int64_t>(head) * head_dim;
  const uint16_t* weight = head < num_q_heads ? q_weight : k_weight;
  float v[kPerLane];
  float sum_squares = 0.f;
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    const int i = lane + 32 * j;
    v[j] = i < head_dim ? E::to_float(x[i]) : 0.f;
    sum_squares += v[j] * v[j];
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) sum_squares += __shfl_xor_sync(0xffffffffu, sum_squares, offset);
  const float inv_rms = rsqrtf(sum_squares / static_cast<float>(head_dim) + eps);
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    const int i = lane + 32 * j;
    if (i < head_dim) x[i] = E::from_float(v[j] * inv_rms * E::to_float(weight[i]));
  }
}

}  // namespace

Status qk_head_rms_norm(uint16_t* qkv, int64_t row_stride, int num_tokens, int num_q_heads, int num_kv_heads,
                        int head_dim, const uint16_t* q_weight, const uint16_t* k_weight, float eps,
                        cudaStream_t stream, DType dtype) {
  const auto bad = [](const std::string& what) { return invalid_argument("qk_head_rms_norm: " + what); };
  if (num_tokens < 0 || num_q_heads <= 0 || num_kv_heads <= 0) return bad("bad shape");
  if (head_dim <= 0 || head_dim % 2 != 0 || head_dim > kMaxHeadDim)
    return bad("head_dim " + std::to_string(head_dim) + " is not even and <= 256");
  if (row_stride < static_cast<int64_t>(num_q_heads + num_kv_heads) * head_dim)
    return bad("row_stride " + std::to_string(row_stride) + " is shorter than the q and k heads");
  if (!(eps > 0.f)) return bad("eps must be positive");
  if (!is_element16(dtype)) return bad("activations must be float16 or bfloat16");
  if (num_tokens == 0) return Status::ok();
  if (qkv == nullptr || q_weight == nullptr || k_weight == nullptr) return bad("null pointer argument");
  const cudaError_t err = with_element16(dtype, [&](auto e) {
    return launch_programmatic(qk_head_rms_norm_kernel<decltype(e)>, dim3(num_tokens, num_q_heads + num_kv_heads),
                               dim3(32), 0, stream, qkv, row_stride, num_q_heads, head_dim, q_weight, k_weight, eps);
  });
  CROSSPOINT_CUDA_RETURN_IF_ERROR(err, "qk_head_rms_norm_kernel launch");
  return last_launch_status("qk_head_rms_norm launch");
}

}  // namespace crosspoint::cuda
