// The element-wise and row-wise decoder steps of decoder_ops.h. All math in fp32, fp16 in and
// out. Row kernels take 16-byte vectors when every row, stride and pointer allows it, else a
// scalar twin of the same kernel (a template flag), so odd widths stay correct.
#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <climits>
#include <cstdint>
#include <string>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/decoder_ops.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/element16.cuh"
#include "kernels/cuda/fp8_quant.h"
#include "kernels/cuda/fp8_row_quant.cuh"
#include "kernels/cuda/programmatic_launch.cuh"

namespace crosspoint::cuda {
namespace {

constexpr int kRowThreads = 256;  // one block per row for norms and gathers

bool aligned(const void* p, int bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// ---- embedding_gather ----------------------------------------------------------------------

// One block per token. An id outside [0, vocab) cannot be reported from the device; its row
// is written as zeros rather than read out of bounds.
template <class E, bool kVec>
__global__ void __launch_bounds__(kRowThreads)
    embedding_gather_kernel(const uint16_t* __restrict__ table, const int32_t* __restrict__ token_ids,
                            float* __restrict__ residual, int hidden_size, int vocab_size) {
  const int t = blockIdx.x;
  const int32_t id = token_ids[t];
  const bool valid = id >= 0 && id < vocab_size;
  float* out = residual + static_cast<int64_t>(t) * hidden_size;
  const uint16_t* row = table + static_cast<int64_t>(valid ? id : 0) * hidden_size;
  if constexpr (kVec) {
    const uint4* src = reinterpret_cast<const uint4*>(row);
    float4* dst = reinterpret_cast<float4*>(out);
    for (int i = threadIdx.x; i < hidden_size / 8; i += kRowThreads) {
      uint4 v = valid ? src[i] : make_uint4(0, 0, 0, 0);
      const float2 a = E::to_float2(v.x), b = E::to_float2(v.y);
      const float2 c = E::to_float2(v.z), d = E::to_float2(v.w);
      dst[2 * i] = make_float4(a.x, a.y, b.x, b.y);
      dst[2 * i + 1] = make_float4(c.x, c.y, d.x, d.y);
    }
  } else {
    for (int i = threadIdx.x; i < hidden_size; i += kRowThreads) out[i] = valid ? E::to_float(row[i]) : 0.f;
  }
}

// ---- add_rms_norm --------------------------------------------------------------------------

// Sum over the block; every thread gets the total.
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float warp_sums[kRowThreads / 32];
  __shared__ float total;
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.f;
    for (int w = 0; w < kRowThreads / 32; ++w) s += warp_sums[w];
    total = s;
  }
  __syncthreads();
  return total;
}

// One block per row. Pass 1 adds delta into the residual (stored) and sums squares; pass 2
// re-reads the thread's own residual elements (L1-hot; written by the same thread, so no
// barrier is needed between the store and the load) and writes the normalised fp16 row.
// kVec: 4 values per access (float4 residual, 8-byte fp16 delta/weight/out).
template <class E, bool kVec>
__global__ void __launch_bounds__(kRowThreads)
    add_rms_norm_kernel(float* __restrict__ residual, const uint16_t* __restrict__ delta, int64_t delta_stride,
                        const uint16_t* __restrict__ weight, float eps, uint16_t* __restrict__ out, int64_t out_stride,
                        int hidden_size) {
  wait_for_prior_kernels();
  allow_dependent_launch();
  const int64_t t = blockIdx.x;
  float* res = residual + t * hidden_size;
  const uint16_t* del = delta ? delta + t * delta_stride : nullptr;
  uint16_t* o = out + t * out_stride;
  float sum_sq = 0.f;
  if constexpr (kVec) {
    float4* res4 = reinterpret_cast<float4*>(res);
    const uint2* del4 = reinterpret_cast<const uint2*>(del);
    for (int i = threadIdx.x; i < hidden_size / 4; i += kRowThreads) {
      float4 r = res4[i];
      if (del4) {
        const uint2 dv = del4[i];
        const float2 lo = E::to_float2(dv.x), hi = E::to_float2(dv.y);
        r.x += lo.x, r.y += lo.y, r.z += hi.x, r.w += hi.y;
        res4[i] = r;
      }
      sum_sq += r.x * r.x + r.y * r.y + r.z * r.z + r.w * r.w;
    }
  } else {
    for (int i = threadIdx.x; i < hidden_size; i += kRowThreads) {
      float r = res[i];
      if (del) {
        r += E::to_float(del[i]);
        res[i] = r;
      }
      sum_sq += r * r;
    }
  }
  const float inv_rms = rsqrtf(block_sum(sum_sq) / static_cast<float>(hidden_size) + eps);
  if constexpr (kVec) {
    const float4* res4 = reinterpret_cast<const float4*>(res);
    const uint2* w4 = reinterpret_cast<const uint2*>(weight);
    uint2* o4 = reinterpret_cast<uint2*>(o);
    for (int i = threadIdx.x; i < hidden_size / 4; i += kRowThreads) {
      const float4 r = res4[i];
      const uint2 wv = w4[i];
      const float2 wlo = E::to_float2(wv.x), whi = E::to_float2(wv.y);
      o4[i] = make_uint2(E::pack2(r.x * inv_rms * wlo.x, r.y * inv_rms * wlo.y),
                         E::pack2(r.z * inv_rms * whi.x, r.w * inv_rms * whi.y));
    }
  } else {
    for (int i = threadIdx.x; i < hidden_size; i += kRowThreads)
      o[i] = E::from_float(res[i] * inv_rms * E::to_float(weight[i]));
  }
}

// The same step for rows that fit in registers (kVec layout, d <= 4 * kRowThreads * kVecPerThread):
// every thread issues all its loads at once (weights first: no earlier kernel writes them, so
// the source reads them before the wait, though ptxas was seen to place those loads just after
// it; then residual and delta) and keeps the row in registers, so a row costs one
// memory round trip, the block sum and the stores, where the loop kernel above pays a round
// trip per iteration of each pass. Same per-thread summation order, hence the same bits.
// kFp8: the fp16 row, still in registers, is also quantised to fp8 (Fp8Rows).
template <class E, int kVecPerThread, bool kFp8>
__global__ void __launch_bounds__(kRowThreads)
    add_rms_norm_registers_kernel(float* __restrict__ residual, const uint16_t* __restrict__ delta,
                                  int64_t delta_stride, const uint16_t* __restrict__ weight, float eps,
                                  uint16_t* __restrict__ out, int64_t out_stride, int hidden_size, Fp8Rows fp8) {
  const int num_vec = hidden_size / 4;  // float4 residual / 8-byte fp16 vectors per row
  uint2 w[kVecPerThread];               // weight[4 i .. 4 i + 3] fp16
#pragma unroll
  for (int j = 0; j < kVecPerThread; ++j) {
    const int i = threadIdx.x + j * kRowThreads;
    if (i < num_vec) w[j] = reinterpret_cast<const uint2*>(weight)[i];
  }
  wait_for_prior_kernels();
  allow_dependent_launch();
  const int64_t t = blockIdx.x;
  float4* res4 = reinterpret_cast<float4*>(residual + t * hidden_size);
  const uint2* del4 = delta ? reinterpret_cast<const uint2*>(delta + t * delta_stride) : nullptr;
  uint2* o4 = reinterpret_cast<uint2*>(out + t * out_stride);
  float4 r[kVecPerThread];
  uint2 dv[kVecPerThread];
#pragma unroll
  for (int j = 0; j < kVecPerThread; ++j) {
    const int i = threadIdx.x + j * kRowThreads;
    if (i < num_vec) {
      r[j] = res4[i];
      if (del4) dv[j] = del4[i];
    }
  }
  float sum_sq = 0.f;
#pragma unroll
  for (int j = 0; j < kVecPerThread; ++j) {
    const int i = threadIdx.x + j * kRowThreads;
    if (i >= num_vec) break;
    if (del4) {
      const float2 lo = E::to_float2(dv[j].x), hi = E::to_float2(dv[j].y);
      r[j].x += lo.x, r[j].y += lo.y, r[j].z += hi.x, r[j].w += hi.y;
      res4[i] = r[j];
    }
    sum_sq += r[j].x * r[j].x + r[j].y * r[j].y + r[j].z * r[j].z + r[j].w * r[j].w;
  }
  const float inv_rms = rsqrtf(block_sum(sum_sq) / static_cast<float>(hidden_size) + eps);
  static_assert(!kFp8 || E::kDType == DType::kF16, "the fp8 rows quantise fp16 values");
  uint2 packed[kVecPerThread];  // the 16-bit output
  float amax = 0.f;
#pragma unroll
  for (int j = 0; j < kVecPerThread; ++j) {
    const int i = threadIdx.x + j * kRowThreads;
    if (i >= num_vec) break;
    const float2 wlo = E::to_float2(w[j].x), whi = E::to_float2(w[j].y);
    packed[j].x = E::pack2(r[j].x * inv_rms * wlo.x, r[j].y * inv_rms * wlo.y);
    packed[j].y = E::pack2(r[j].z * inv_rms * whi.x, r[j].w * inv_rms * whi.y);
    o4[i] = packed[j];
    if constexpr (kFp8) amax = fp8_amax4(packed[j], amax);
  }
  if constexpr (kFp8) {
    const float s = fp8_block_row_scale<kRowThreads>(amax, fp8.scale + t);
    uint32_t* q4 = reinterpret_cast<uint32_t*>(fp8.q + t * fp8.q_stride);
#pragma unroll
    for (int j = 0; j < kVecPerThread; ++j) {
      const int i = threadIdx.x + j * kRowThreads;
      if (i >= num_vec) break;
      q4[i] = fp8_quantize4(packed[j], s);
    }
  }
}

// ---- rope_kv_write -------------------------------------------------------------------------

constexpr int kRopeThreads = 128;
constexpr int kMaxHeadDim = 256;

// kWidth (8, 2 or 1) consecutive 16-bit values as one 16-, 4- or 2-byte access, in fp32.
template <class E, int kWidth>
__device__ __forceinline__ void load_16bit(const uint16_t* src, float (&out)[kWidth]) {
  if constexpr (kWidth == 8) {
    const uint4 raw = *reinterpret_cast<const uint4*>(src);
    const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float2 f = E::to_float2(words[j]);
      out[2 * j] = f.x;
      out[2 * j + 1] = f.y;
    }
  } else if constexpr (kWidth == 2) {
    const float2 f = E::to_float2(*reinterpret_cast<const uint32_t*>(src));
    out[0] = f.x;
    out[1] = f.y;
  } else {
    out[0] = E::to_float(*src);
  }
}
template <class E, int kWidth>
__device__ __forceinline__ void store_16bit(uint16_t* dst, const float (&in)[kWidth]) {
  if constexpr (kWidth == 8) {
    *reinterpret_cast<uint4*>(dst) =
        make_uint4(E::pack2(in[0], in[1]), E::pack2(in[2], in[3]), E::pack2(in[4], in[5]), E::pack2(in[6], in[7]));
  } else if constexpr (kWidth == 2) {
    *reinterpret_cast<uint32_t*>(dst) = E::pack2(in[0], in[1]);
  } else {
    *dst = E::from_float(in[0]);
  }
}

// kWidth values as e4m3(fp16(x) / scale) bytes: each value first rounded to the fp16 an fp16
// cache would hold (saturated to +-65504, NaN kept), as vLLM quantises its fp16 K and V; then
// round to nearest even, saturating to +-448: the CPU cache's f32_to_e4m3 of
// round_to_f16_saturated after the same IEEE division. One 8-, 2- or 1-byte store.
template <int kWidth>
__device__ __forceinline__ void store_e4m3(uint8_t* dst, const float (&in)[kWidth], float scale) {
  uint8_t q[kWidth];
#pragma unroll
  for (int j = 0; j < kWidth; ++j) {
    const float x = in[j] > 65504.f ? 65504.f : (in[j] < -65504.f ? -65504.f : in[j]);
    q[j] = __nv_cvt_float_to_fp8(__fdiv_rn(__half2float(__float2half_rn(x)), scale), __NV_SATFINITE, __NV_E4M3);
  }
  if constexpr (kWidth == 8) {
    uint2 raw;
    memcpy(&raw, q, 8);
    *reinterpret_cast<uint2*>(dst) = raw;
  } else if constexpr (kWidth == 2) {
    *reinterpret_cast<uint16_t*>(dst) = static_cast<uint16_t>(q[0] | (q[1] << 8));
  } else {
    *dst = q[0];
  }
}

// One thread per work item of a token: either kWidth consecutive rotation pairs (i .. i+kWidth-1
// paired with i+D/2 ..) of one q or k head, or kWidth consecutive v values. grid (T,
// ceil(items / kRopeThreads)) with items = (H + Hkv) * D/2 / kWidth + Hkv * D / kWidth, so a
// decode token is spread over several blocks and every thread issues its loads (x1, x2, bias,
// inv_freq) at once: one memory round trip, then the stores. Bias is added in fp32 before the
// rotation, the angle is position * inv_freq[i] in fp32 with precise sincosf, and each result
// is rounded to fp16 once (the same arithmetic as the CPU reference); an fp8 cache gets
// e4m3(fp16 value / scale) (store_e4m3).
template <class E, int kWidth>
__global__ void __launch_bounds__(kRopeThreads) rope_kv_write_kernel(RopeKvWriteArgs a) {
  // The attention launched next may start now, before this kernel's wait: what its kernels read
  // before their own wait (the step's lengths and block tables, the K/V rows of earlier steps) no
  // kernel of this step writes, and every CTA of the kernel this one waits for is already running,
  // so attention CTAs that wait beside it cannot hold it back.
  allow_dependent_launch();
  wait_for_prior_kernels();
  const int t = blockIdx.x;
  const int item = blockIdx.y * kRopeThreads + threadIdx.x;
  const int half = a.head_dim / 2;
  const int items_per_head = half / kWidth;
  const int num_rotate_items = (a.num_heads + a.num_kv_heads) * items_per_head;
  const int num_v_items = a.num_kv_heads * a.head_dim / kWidth;
  if (item >= num_rotate_items + num_v_items) return;

  // Every load is issued before any branch on a loaded value (the slot), so they all share one
  // memory round trip.
  uint16_t* row = a.qkv + static_cast<int64_t>(t) * a.qkv_stride;
  const int32_t slot = a.slot_mapping[t];
  auto store_slot = [&] {
    return slot >= 0 && static_cast<int64_t>(slot) < static_cast<int64_t>(a.num_blocks) * a.block_size;
  };
  auto cache_row = [&] { return static_cast<int64_t>(slot) * a.num_kv_heads * a.head_dim; };  // [slot, Hkv, D]

  if (item >= num_rotate_items) {                             // v: copied (plus bias) into the value cache
    const int v_offset = (item - num_rotate_items) * kWidth;  // within [Hkv * D]
    const int col = (a.num_heads + a.num_kv_heads) * a.head_dim + v_offset;
    float v[kWidth], b[kWidth] = {};
    load_16bit<E, kWidth>(row + col, v);
    if (a.bias) load_16bit<E, kWidth>(a.bias + col, b);
#pragma unroll
    for (int j = 0; j < kWidth; ++j) {
      v[j] += b[j];
      // An empty asm that "uses" v: keeps the compiler from sinking the loads below the slot
      // test, which would add a second memory round trip after the slot's.
      asm volatile("" : "+f"(v[j]));
    }
    if (!store_slot()) return;
    if (a.value_cache_fp8 != nullptr) store_e4m3<kWidth>(a.value_cache_fp8 + cache_row() + v_offset, v, a.v_scale);
    else store_16bit<E, kWidth>(a.value_cache + cache_row() + v_offset, v);
    return;
  }

  const int head = item / items_per_head;  // q heads, then k heads
  const int i0 = (item % items_per_head) * kWidth;
  const int col = head * a.head_dim + i0;  // column of x1 in the fused row; x2 is half further
  float x1[kWidth], x2[kWidth], b1[kWidth] = {}, b2[kWidth] = {}, freq[kWidth];
  load_16bit<E, kWidth>(row + col, x1);
  load_16bit<E, kWidth>(row + col + half, x2);
  if (a.bias) {
    load_16bit<E, kWidth>(a.bias + col, b1);
    load_16bit<E, kWidth>(a.bias + col + half, b2);
  }
#pragma unroll
  for (int j = 0; j < kWidth; ++j) freq[j] = a.inv_freq[i0 + j];
  const float position = static_cast<float>(a.positions[t]);
  if (head >= a.num_heads && !store_slot()) return;  // a padding row's k goes nowhere
  float y1[kWidth], y2[kWidth];
#pragma unroll
  for (int j = 0; j < kWidth; ++j) {
    const float u1 = x1[j] + b1[j], u2 = x2[j] + b2[j];  // + 0 when there is no bias: exact
    float sin_f, cos_f;
    sincosf(position * freq[j], &sin_f, &cos_f);
    sin_f *= a.attention_scaling;  // 1 unless YaRN: exact then
    cos_f *= a.attention_scaling;
    y1[j] = u1 * cos_f - u2 * sin_f;
    y2[j] = u2 * cos_f + u1 * sin_f;
  }
  if (head >= a.num_heads && a.key_cache_fp8 != nullptr) {
    uint8_t* dst = a.key_cache_fp8 + cache_row() + (head - a.num_heads) * a.head_dim + i0;
    store_e4m3<kWidth>(dst, y1, a.k_scale);
    store_e4m3<kWidth>(dst + half, y2, a.k_scale);
    return;
  }
  uint16_t* dst = head < a.num_heads ? row + col : a.key_cache + cache_row() + (head - a.num_heads) * a.head_dim + i0;
  store_16bit<E, kWidth>(dst, y1);
  store_16bit<E, kWidth>(dst + half, y2);
}

// ---- silu_mul ------------------------------------------------------------------------------

constexpr int kEltThreads = 256;

__device__ __forceinline__ float silu_times(float g, float u) { return g / (1.f + expf(-g)) * u; }

// grid (T, ceil(I / (threads * per_thread))); kVec: 8 values per thread via 16-byte loads.
template <class E, bool kVec>
__global__ void __launch_bounds__(kEltThreads)
    silu_mul_kernel(const uint16_t* __restrict__ gate_up, int64_t in_stride, uint16_t* __restrict__ out,
                    int64_t out_stride, int intermediate_size) {
  wait_for_prior_kernels();
  allow_dependent_launch();
  const int64_t t = blockIdx.x;
  const uint16_t* gate = gate_up + t * in_stride;
  const uint16_t* up = gate + intermediate_size;
  uint16_t* o = out + t * out_stride;
  if constexpr (kVec) {
    const int i = blockIdx.y * kEltThreads + threadIdx.x;  // vector index
    if (i >= intermediate_size / 8) return;
    uint4 gv = reinterpret_cast<const uint4*>(gate)[i];
    uint4 uv = reinterpret_cast<const uint4*>(up)[i];
    const uint32_t* g2 = reinterpret_cast<const uint32_t*>(&gv);
    const uint32_t* u2 = reinterpret_cast<const uint32_t*>(&uv);
    uint4 result;
    uint32_t* r2 = reinterpret_cast<uint32_t*>(&result);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float2 g = E::to_float2(g2[j]), u = E::to_float2(u2[j]);
      r2[j] = E::pack2(silu_times(g.x, u.x), silu_times(g.y, u.y));
    }
    reinterpret_cast<uint4*>(o)[i] = result;
  } else {
    const int i = blockIdx.y * kEltThreads + threadIdx.x;
    if (i >= intermediate_size) return;
    o[i] = E::from_float(silu_times(E::to_float(gate[i]), E::to_float(up[i])));
  }
}

// silu_mul with the result quantised to fp8 (Fp8Rows) instead of stored, on Hopper: a cluster
// of kSiluFp8Blocks blocks per row, each holding its slice of the row's fp16 results in
// registers (16-byte vectors); the blocks' amaxes meet in distributed shared memory, so the row
// costs one launch and one read of gate_up while its SiLU and conversions spread over 8 SMs (in
// one block per row they queue on one SM).
constexpr int kSiluFp8Blocks = 8;  // the portable cluster size
constexpr int kSiluFp8VecPerThread = 2;
constexpr int kSiluFp8RowMax = kSiluFp8Blocks * kRowThreads * 8 * kSiluFp8VecPerThread;  // 32768 values

__global__ void __launch_bounds__(kRowThreads)
    silu_mul_fp8_kernel(const uint16_t* __restrict__ gate_up, int64_t in_stride, int intermediate_size, Fp8Rows fp8) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  wait_for_prior_kernels();
  allow_dependent_launch();
  cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int64_t t = blockIdx.y;
  const uint4* gate = reinterpret_cast<const uint4*>(gate_up + t * in_stride);
  const uint4* up = reinterpret_cast<const uint4*>(gate_up + t * in_stride + intermediate_size);
  const int num_vec = intermediate_size / 8;
  const int per_block = (num_vec + kSiluFp8Blocks - 1) / kSiluFp8Blocks;
  const int first = rank * per_block, last = min(num_vec, first + per_block);
  uint4 gv[kSiluFp8VecPerThread], uv[kSiluFp8VecPerThread];
#pragma unroll
  for (int j = 0; j < kSiluFp8VecPerThread; ++j) {  // every load in flight before the math
    const int i = first + threadIdx.x + j * kRowThreads;
    if (i < last) gv[j] = gate[i], uv[j] = up[i];
  }
  uint4 result[kSiluFp8VecPerThread];
  float amax = 0.f;
#pragma unroll
  for (int j = 0; j < kSiluFp8VecPerThread; ++j) {
    const int i = first + threadIdx.x + j * kRowThreads;
    if (i >= last) break;
    const __half2* g2 = reinterpret_cast<const __half2*>(&gv[j]);
    const __half2* u2 = reinterpret_cast<const __half2*>(&uv[j]);
    __half2* r2 = reinterpret_cast<__half2*>(&result[j]);
#pragma unroll
    for (int h = 0; h < 4; ++h) {
      const float2 g = __half22float2(g2[h]), u = __half22float2(u2[h]);
      r2[h] = __floats2half2_rn(silu_times(g.x, u.x), silu_times(g.y, u.y));
    }
    amax = fp8_amax8(result[j], amax);
  }
  // Block amax, then the cluster's: every block reads the others' from their shared memory.
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
  __shared__ float warp_amax[kRowThreads / 32];
  __shared__ float block_amax;
  if (threadIdx.x % 32 == 0) warp_amax[threadIdx.x / 32] = amax;
  __syncthreads();
  if (threadIdx.x == 0) {
    float a = 0.f;
    for (int w = 0; w < kRowThreads / 32; ++w) a = fmaxf(a, warp_amax[w]);
    block_amax = a;
  }
  cluster.sync();
  float row_amax = 0.f;
#pragma unroll
  for (int r = 0; r < kSiluFp8Blocks; ++r) row_amax = fmaxf(row_amax, *cluster.map_shared_rank(&block_amax, r));
  const float s = fp8_row_scale(row_amax);
  if (rank == 0 && threadIdx.x == 0) fp8.scale[t] = s;
  uint2* q = reinterpret_cast<uint2*>(fp8.q + t * fp8.q_stride);
#pragma unroll
  for (int j = 0; j < kSiluFp8VecPerThread; ++j) {
    const int i = first + threadIdx.x + j * kRowThreads;
    if (i >= last) break;
    q[i] = fp8_quantize8(result[j], s);
  }
  cluster.sync();  // no block leaves while another may still read its block_amax
#else
  __trap();  // launched only on compute capability 9.0+
#endif
}

// ---- gather_rows ---------------------------------------------------------------------------

template <bool kVec>
__global__ void __launch_bounds__(kRowThreads)
    gather_rows_kernel(const uint16_t* __restrict__ in, int64_t in_stride, const int32_t* __restrict__ rows,
                       uint16_t* __restrict__ out, int width) {
  wait_for_prior_kernels();
  allow_dependent_launch();
  const uint16_t* src = in + static_cast<int64_t>(rows[blockIdx.x]) * in_stride;
  uint16_t* dst = out + static_cast<int64_t>(blockIdx.x) * width;
  if constexpr (kVec) {
    for (int i = threadIdx.x; i < width / 8; i += kRowThreads)
      reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
  } else {
    for (int i = threadIdx.x; i < width; i += kRowThreads) dst[i] = src[i];
  }
}

// ---- argmax_rows ---------------------------------------------------------------------------

// (value, index) candidate order: larger value wins, equal values -> lower index. NaN values
// are never offered (skipped at load), so they cannot win; an all-NaN row gives index 0.
struct ArgmaxCandidate {
  float value;
  int index;
};
__device__ __forceinline__ void offer(ArgmaxCandidate& best, float value, int index) {
  if (value > best.value || (value == best.value && index < best.index)) best = {value, index};
}

// One block of kArgmaxThreads per row: a 152k vocabulary is ~19 16-byte loads per thread,
// unrolled by 4 so that they are in flight together rather than a chain of dependent loads.
// The result does not depend on the thread count: the candidate order is total.
constexpr int kArgmaxThreads = 1024;

__device__ __forceinline__ void offer_from_lanes(ArgmaxCandidate& best) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other_value = __shfl_xor_sync(0xffffffffu, best.value, offset);
    const int other_index = __shfl_xor_sync(0xffffffffu, best.index, offset);
    offer(best, other_value, other_index);
  }
}

template <class E, bool kVec>
__global__ void __launch_bounds__(kArgmaxThreads)
    argmax_rows_kernel(const uint16_t* __restrict__ logits, int64_t stride, int32_t* __restrict__ token,
                       int vocab_size) {
  wait_for_prior_kernels();
  allow_dependent_launch();
  const uint16_t* row = logits + static_cast<int64_t>(blockIdx.x) * stride;
  ArgmaxCandidate best{-INFINITY, INT_MAX};
  if constexpr (kVec) {
#pragma unroll 4
    for (int i = threadIdx.x; i < vocab_size / 8; i += kArgmaxThreads) {
      const uint4 v = reinterpret_cast<const uint4*>(row)[i];
      const uint16_t* h = reinterpret_cast<const uint16_t*>(&v);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float x = E::to_float(h[j]);
        if (!isnan(x)) offer(best, x, 8 * i + j);
      }
    }
  } else {
#pragma unroll 4
    for (int i = threadIdx.x; i < vocab_size; i += kArgmaxThreads) {
      const float x = E::to_float(row[i]);
      if (!isnan(x)) offer(best, x, i);
    }
  }
  offer_from_lanes(best);
  static_assert(kArgmaxThreads == 32 * 32, "one warp combines the 32 warps' candidates");
  __shared__ ArgmaxCandidate warp_best[kArgmaxThreads / 32];
  if (threadIdx.x % 32 == 0) warp_best[threadIdx.x / 32] = best;
  __syncthreads();
  if (threadIdx.x < 32) {
    best = warp_best[threadIdx.x];
    offer_from_lanes(best);
    if (threadIdx.x == 0) token[blockIdx.x] = best.index == INT_MAX ? 0 : best.index;
  }
}

Status bad(const char* op, const std::string& what) { return invalid_argument(std::string(op) + ": " + what); }

Status check_dtype(const char* op, DType dtype) {
  if (is_element16(dtype)) return Status::ok();
  return bad(op, "activations must be float16 or bfloat16, not " + std::string(dtype_name(dtype)));
}

}  // namespace

Status embedding_gather(const uint16_t* table, const int32_t* token_ids, float* residual, int num_tokens,
                        int hidden_size, int vocab_size, cudaStream_t stream, DType dtype) {
  constexpr const char* op = "embedding_gather";
  CROSSPOINT_RETURN_IF_ERROR(check_dtype(op, dtype));
  if (num_tokens < 0 || hidden_size <= 0 || vocab_size <= 0)
    return bad(op, "bad shape num_tokens=" + std::to_string(num_tokens) +
                       " hidden_size=" + std::to_string(hidden_size) + " vocab_size=" + std::to_string(vocab_size));
  if (num_tokens == 0) return Status::ok();
  if (!table || !token_ids || !residual) return bad(op, "null table, token_ids or residual");
  const bool vec = hidden_size % 8 == 0 && aligned(table, 16) && aligned(residual, 16);
  with_element16(dtype, [&](auto e) {
    using E = decltype(e);
    if (vec) {
      embedding_gather_kernel<E, true>
          <<<num_tokens, kRowThreads, 0, stream>>>(table, token_ids, residual, hidden_size, vocab_size);
    } else {
      embedding_gather_kernel<E, false>
          <<<num_tokens, kRowThreads, 0, stream>>>(table, token_ids, residual, hidden_size, vocab_size);
    }
  });
  return last_launch_status("embedding_gather launch");
}

Status add_rms_norm(float* residual, const uint16_t* delta, int64_t delta_stride, const uint16_t* weight, float eps,
                    uint16_t* out, int64_t out_stride, int num_tokens, int hidden_size, cudaStream_t stream,
                    const Fp8Rows& fp8, DType dtype) {
  constexpr const char* op = "add_rms_norm";
  CROSSPOINT_RETURN_IF_ERROR(check_dtype(op, dtype));
  if (fp8.wanted() && dtype != DType::kF16) return bad(op, "fp8 rows are quantised from float16 activations only");
  if (num_tokens < 0 || hidden_size <= 0)
    return bad(op,
               "bad shape num_tokens=" + std::to_string(num_tokens) + " hidden_size=" + std::to_string(hidden_size));
  if (num_tokens == 0) return Status::ok();
  if (!residual || !weight || !out) return bad(op, "null residual, weight or out");
  if (out_stride < hidden_size) return bad(op, "out_stride " + std::to_string(out_stride) + " < hidden_size");
  if (delta && delta_stride < hidden_size)
    return bad(op, "delta_stride " + std::to_string(delta_stride) + " < hidden_size");
  if (!(eps >= 0.f)) return bad(op, "eps must be >= 0");
  if (fp8.wanted() && (!fp8.scale || fp8.q_stride < hidden_size))
    return bad(op, "fp8 rows without scales or too short");
  const bool vec = hidden_size % 4 == 0 && aligned(residual, 16) && aligned(weight, 8) && aligned(out, 8) &&
                   out_stride % 4 == 0 && (!delta || (aligned(delta, 8) && delta_stride % 4 == 0));
  const bool registers = vec && hidden_size <= 4 * kRowThreads * 8;  // the row fits the register kernel
  // The register kernel quantises the row it holds when the e4m3 rows take 4-byte stores.
  const bool fp8_in_kernel = fp8.wanted() && registers && aligned(fp8.q, 4) && fp8.q_stride % 4 == 0;
  auto launch_registers = [&](auto kernel) {
    return launch_programmatic(kernel, dim3(num_tokens), dim3(kRowThreads), 0, stream, residual, delta, delta_stride,
                               weight, eps, out, out_stride, hidden_size, fp8);
  };
  if (dtype == DType::kBF16) {
    using E = Element16BF16;
    CROSSPOINT_CUDA_RETURN_IF_ERROR(
        vec && hidden_size <= 4 * kRowThreads * 4
            ? launch_registers(add_rms_norm_registers_kernel<E, 4, false>)
            : (registers ? launch_registers(add_rms_norm_registers_kernel<E, 8, false>)
                         : (vec ? launch_programmatic(add_rms_norm_kernel<E, true>, dim3(num_tokens), dim3(kRowThreads),
                                                      0, stream, residual, delta, delta_stride, weight, eps, out,
                                                      out_stride, hidden_size)
                                : launch_programmatic(add_rms_norm_kernel<E, false>, dim3(num_tokens),
                                                      dim3(kRowThreads), 0, stream, residual, delta, delta_stride,
                                                      weight, eps, out, out_stride, hidden_size))),
        "add_rms_norm kernel launch (bf16)");
    return last_launch_status("add_rms_norm launch");
  }
  using E = Element16F16;
  if (vec && hidden_size <= 4 * kRowThreads * 4) {
    CROSSPOINT_CUDA_RETURN_IF_ERROR(fp8_in_kernel ? launch_registers(add_rms_norm_registers_kernel<E, 4, true>)
                                                  : launch_registers(add_rms_norm_registers_kernel<E, 4, false>),
                                    "add_rms_norm_registers_kernel launch");
  } else if (registers) {
    CROSSPOINT_CUDA_RETURN_IF_ERROR(fp8_in_kernel ? launch_registers(add_rms_norm_registers_kernel<E, 8, true>)
                                                  : launch_registers(add_rms_norm_registers_kernel<E, 8, false>),
                                    "add_rms_norm_registers_kernel launch");
  } else {
    CROSSPOINT_CUDA_RETURN_IF_ERROR(
        vec ? launch_programmatic(add_rms_norm_kernel<E, true>, dim3(num_tokens), dim3(kRowThreads), 0, stream,
                                  residual, delta, delta_stride, weight, eps, out, out_stride, hidden_size)
            : launch_programmatic(add_rms_norm_kernel<E, false>, dim3(num_tokens), dim3(kRowThreads), 0, stream,
                                  residual, delta, delta_stride, weight, eps, out, out_stride, hidden_size),
        "add_rms_norm_kernel launch");
  }
  CROSSPOINT_RETURN_IF_ERROR(last_launch_status("add_rms_norm launch"));
  if (fp8.wanted() && !fp8_in_kernel)
    return fp8_quantize_per_token(out, out_stride, fp8.q, fp8.q_stride, fp8.scale, num_tokens, hidden_size, stream);
  return Status::ok();
}

Status rope_kv_write(const RopeKvWriteArgs& a, cudaStream_t stream) {
  constexpr const char* op = "rope_kv_write";
  CROSSPOINT_RETURN_IF_ERROR(check_dtype(op, a.dtype));
  if (a.num_tokens < 0) return bad(op, "num_tokens " + std::to_string(a.num_tokens) + " < 0");
  if (a.num_heads <= 0 || a.num_kv_heads <= 0)
    return bad(op, "num_heads " + std::to_string(a.num_heads) + " and num_kv_heads " + std::to_string(a.num_kv_heads) +
                       " must be positive");
  if (a.head_dim <= 0 || a.head_dim % 2 != 0 || a.head_dim > kMaxHeadDim)
    return bad(op, "head_dim " + std::to_string(a.head_dim) + " must be even and in [2, 256]");
  if (a.block_size <= 0 || a.num_blocks <= 0)
    return bad(op, "block_size " + std::to_string(a.block_size) + " and num_blocks " + std::to_string(a.num_blocks) +
                       " must be positive");
  const int64_t row_width = static_cast<int64_t>(a.num_heads + 2 * a.num_kv_heads) * a.head_dim;
  if (a.qkv_stride < row_width)
    return bad(op, "qkv_stride " + std::to_string(a.qkv_stride) + " < (H + 2 Hkv) * D = " + std::to_string(row_width));
  if (a.num_tokens == 0) return Status::ok();
  if (!a.qkv || !a.positions || !a.inv_freq || !a.slot_mapping)
    return bad(op, "null qkv, positions, inv_freq or slot_mapping");
  const bool fp16_cache = a.key_cache != nullptr && a.value_cache != nullptr;
  const bool fp8_cache = a.key_cache_fp8 != nullptr && a.value_cache_fp8 != nullptr;
  if (fp16_cache == fp8_cache || (a.key_cache && a.key_cache_fp8) || (a.value_cache && a.value_cache_fp8))
    return bad(op,
               "exactly one cache pair must be set: key_cache and value_cache (fp16) or key_cache_fp8 and "
               "value_cache_fp8");
  if (fp8_cache && a.dtype != DType::kF16) return bad(op, "an fp8 cache is written from float16 activations only");
  if (fp8_cache && !(a.k_scale > 0.f && a.v_scale > 0.f && std::isfinite(a.k_scale) && std::isfinite(a.v_scale)))
    return bad(op, "the fp8 cache's k_scale and v_scale must be positive and finite");
  // The widest access every q/k half-head, v row, stride and pointer allows (e4m3 stores are
  // half as wide as the fp16 ones).
  const int half = a.head_dim / 2;
  auto all_aligned = [&](int bytes) {
    const bool caches = fp8_cache ? aligned(a.key_cache_fp8, bytes / 2) && aligned(a.value_cache_fp8, bytes / 2)
                                  : aligned(a.key_cache, bytes) && aligned(a.value_cache, bytes);
    return caches && aligned(a.qkv, bytes) && (a.bias == nullptr || aligned(a.bias, bytes)) &&
           a.qkv_stride * 2 % bytes == 0;
  };
  const int width = half % 8 == 0 && all_aligned(16) ? 8 : half % 2 == 0 && all_aligned(4) ? 2 : 1;
  const int items = (a.num_heads + a.num_kv_heads) * (half / width) + a.num_kv_heads * a.head_dim / width;
  const dim3 grid(a.num_tokens, (items + kRopeThreads - 1) / kRopeThreads);
  const cudaError_t err = with_element16(a.dtype, [&](auto e) {
    using E = decltype(e);
    if (width == 8) return launch_programmatic(rope_kv_write_kernel<E, 8>, grid, dim3(kRopeThreads), 0, stream, a);
    if (width == 2) return launch_programmatic(rope_kv_write_kernel<E, 2>, grid, dim3(kRopeThreads), 0, stream, a);
    return launch_programmatic(rope_kv_write_kernel<E, 1>, grid, dim3(kRopeThreads), 0, stream, a);
  });
  CROSSPOINT_CUDA_RETURN_IF_ERROR(err, "rope_kv_write_kernel launch");
  return last_launch_status("rope_kv_write launch");
}

Status silu_mul(const uint16_t* gate_up, int64_t in_stride, uint16_t* out, int64_t out_stride, int num_tokens,
                int intermediate_size, cudaStream_t stream, const Fp8Rows& fp8, DType dtype) {
  constexpr const char* op = "silu_mul";
  CROSSPOINT_RETURN_IF_ERROR(check_dtype(op, dtype));
  if (fp8.wanted() && dtype != DType::kF16) return bad(op, "fp8 rows are quantised from float16 activations only");
  if (num_tokens < 0 || intermediate_size <= 0)
    return bad(op, "bad shape num_tokens=" + std::to_string(num_tokens) +
                       " intermediate_size=" + std::to_string(intermediate_size));
  if (num_tokens == 0) return Status::ok();
  if (!gate_up || !out) return bad(op, "null gate_up or out");
  if (in_stride < 2 * static_cast<int64_t>(intermediate_size) || out_stride < intermediate_size)
    return bad(op, "in_stride must be >= 2 I and out_stride >= I");
  if (fp8.wanted() && (!fp8.scale || fp8.q_stride < intermediate_size))
    return bad(op, "fp8 rows without scales or too short");
  const bool vec_in = intermediate_size % 8 == 0 && in_stride % 8 == 0 && aligned(gate_up, 16);
  if (fp8.wanted() && vec_in && intermediate_size <= kSiluFp8RowMax && aligned(fp8.q, 8) && fp8.q_stride % 8 == 0 &&
      num_tokens <= 65535 && cuda_device_info().major >= 9) {  // rows on grid y
    CROSSPOINT_CUDA_RETURN_IF_ERROR(
        launch_programmatic_clusters(silu_mul_fp8_kernel, dim3(kSiluFp8Blocks, num_tokens), dim3(kRowThreads),
                                     kSiluFp8Blocks, 0, stream, gate_up, in_stride, intermediate_size, fp8),
        "silu_mul_fp8_kernel launch");
    return last_launch_status("silu_mul launch");
  }
  const bool vec = vec_in && out_stride % 8 == 0 && aligned(out, 16);
  const cudaError_t err = with_element16(dtype, [&](auto e) {
    using E = decltype(e);
    if (vec) {
      const dim3 grid(num_tokens, (intermediate_size / 8 + kEltThreads - 1) / kEltThreads);
      return launch_programmatic(silu_mul_kernel<E, true>, grid, dim3(kEltThreads), 0, stream, gate_up, in_stride, out,
                                 out_stride, intermediate_size);
    }
    const dim3 grid(num_tokens, (intermediate_size + kEltThreads - 1) / kEltThreads);
    return launch_programmatic(silu_mul_kernel<E, false>, grid, dim3(kEltThreads), 0, stream, gate_up, in_stride, out,
                               out_stride, intermediate_size);
  });
  CROSSPOINT_CUDA_RETURN_IF_ERROR(err, "silu_mul_kernel launch");
  CROSSPOINT_RETURN_IF_ERROR(last_launch_status("silu_mul launch"));
  if (fp8.wanted())
    return fp8_quantize_per_token(out, out_stride, fp8.q, fp8.q_stride, fp8.scale, num_tokens, intermediate_size,
                                  stream);
  return Status::ok();
}

Status gather_rows(const uint16_t* in, int64_t in_stride, const int32_t* rows, uint16_t* out, int num_rows, int width,
                   cudaStream_t stream) {
  constexpr const char* op = "gather_rows";
  if (num_rows < 0 || width <= 0)
    return bad(op, "bad shape num_rows=" + std::to_string(num_rows) + " width=" + std::to_string(width));
  if (num_rows == 0) return Status::ok();
  if (!in || !rows || !out) return bad(op, "null in, rows or out");
  if (in_stride < width) return bad(op, "in_stride " + std::to_string(in_stride) + " < width");
  if (width % 8 == 0 && in_stride % 8 == 0 && aligned(in, 16) && aligned(out, 16)) {
    CROSSPOINT_CUDA_RETURN_IF_ERROR(launch_programmatic(gather_rows_kernel<true>, dim3(num_rows), dim3(kRowThreads), 0,
                                                        stream, in, in_stride, rows, out, width),
                                    "gather_rows_kernel launch");
  } else {
    CROSSPOINT_CUDA_RETURN_IF_ERROR(launch_programmatic(gather_rows_kernel<false>, dim3(num_rows), dim3(kRowThreads), 0,
                                                        stream, in, in_stride, rows, out, width),
                                    "gather_rows_kernel launch");
  }
  return last_launch_status("gather_rows launch");
}

Status argmax_rows(const uint16_t* logits, int64_t stride, int32_t* token, int num_rows, int vocab_size,
                   cudaStream_t stream, DType dtype) {
  constexpr const char* op = "argmax_rows";
  CROSSPOINT_RETURN_IF_ERROR(check_dtype(op, dtype));
  if (num_rows < 0 || vocab_size <= 0)
    return bad(op, "bad shape num_rows=" + std::to_string(num_rows) + " vocab_size=" + std::to_string(vocab_size));
  if (num_rows == 0) return Status::ok();
  if (!logits || !token) return bad(op, "null logits or token");
  if (stride < vocab_size) return bad(op, "stride " + std::to_string(stride) + " < vocab_size");
  const bool vec = vocab_size % 8 == 0 && stride % 8 == 0 && aligned(logits, 16);
  const cudaError_t err = with_element16(dtype, [&](auto e) {
    using E = decltype(e);
    return vec ? launch_programmatic(argmax_rows_kernel<E, true>, dim3(num_rows), dim3(kArgmaxThreads), 0, stream,
                                     logits, stride, token, vocab_size)
               : launch_programmatic(argmax_rows_kernel<E, false>, dim3(num_rows), dim3(kArgmaxThreads), 0, stream,
                                     logits, stride, token, vocab_size);
  });
  CROSSPOINT_CUDA_RETURN_IF_ERROR(err, "argmax_rows_kernel launch");
  return last_launch_status("argmax_rows launch");
}

}  // namespace crosspoint::cuda
