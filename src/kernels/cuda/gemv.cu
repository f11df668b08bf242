// Small-batch GEMV kernels (fp16 / bf16 and fp8 weights, fp8 with the activation quantisation
// fused in). See gemv.h.
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <string>
#include <type_traits>

#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/element16.cuh"
#include "kernels/cuda/fp8_quant.h"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/programmatic_launch.cuh"

namespace crosspoint::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kThreads = kWarpsPerBlock * 32;
constexpr int kLoadsInFlight = 4;       // 16-byte chunks per weight row a lane loads before using them
constexpr int kMinChunksPerSplit = 32;  // a K slice keeps every lane busy with >= 1 load per column
constexpr int kTargetWarpsPerSm = 24;   // enough 16-byte loads in flight to cover HBM latency
constexpr int kMinStepsPerSplit = 4;    // fp8 tensor-core kernel: a K slice keeps most of one batch of loads busy
// The tensor-core kernel holds 16 rows per warp, so N gives 8x fewer warps than on CUDA cores:
// it is fastest with the widest split its slices allow.
constexpr int kMmaTargetWarpsPerSm = 96;

// Two e4m3 values (low byte first) -> two floats, exact.
__device__ __forceinline__ float2 fp8x2_to_float2(uint16_t pair) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 890
  // No e4m3 conversion instruction before sm_89, and the intrinsic's software sequence,
  // unrolled over a GEMV's registers, took ptxas minutes per kernel. Instead each byte's sign,
  // exponent and mantissa go to their fp16 places and the value is scaled by 2^8 (the bias
  // difference 15 - 7): exact for every finite e4m3 value, subnormals and -0 included
  // (checked against ml_dtypes for all 256 bytes); 0x7F / 0xFF are NaN.
  const uint32_t spread = (pair & 0xFFu) | ((pair & 0xFF00u) << 8);
  const uint32_t bits = ((spread & 0x00800080u) << 8) | ((spread & 0x007F007Fu) << 7);
  float2 f = __half22float2(*reinterpret_cast<const half2*>(&bits));
  f.x = (pair & 0x7Fu) == 0x7Fu ? __int_as_float(0x7fffffff) : f.x * 256.f;
  f.y = (pair & 0x7F00u) == 0x7F00u ? __int_as_float(0x7fffffff) : f.y * 256.f;
  return f;
#else
  const __half2_raw raw = __nv_cvt_fp8x2_to_halfraw2(pair, __NV_E4M3);
  return __half22float2(*reinterpret_cast<const half2*>(&raw));
#endif
}

// 16 bytes of weights or activations -> fp32 values (8 from E's 16-bit type, 16 from e4m3),
// exact.
template <bool kFp8, class E = Element16F16>
struct Chunk {
  static constexpr int kValues = kFp8 ? 16 : 8;
  float v[kValues];
  __device__ __forceinline__ explicit Chunk(uint4 bits) {
    const uint32_t words[4] = {bits.x, bits.y, bits.z, bits.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if constexpr (kFp8) {
        const float2 lo = fp8x2_to_float2(static_cast<uint16_t>(words[i] & 0xFFFFu));
        const float2 hi = fp8x2_to_float2(static_cast<uint16_t>(words[i] >> 16));
        v[4 * i] = lo.x;
        v[4 * i + 1] = lo.y;
        v[4 * i + 2] = hi.x;
        v[4 * i + 3] = hi.y;
      } else {
        const float2 f = E::to_float2(words[i]);
        v[2 * i] = f.x;
        v[2 * i + 1] = f.y;
      }
    }
  }
};

// Everything a launch passes to the kernel. Rows are byte pointers; a chunk is 16 bytes.
struct GemvArgs {
  const uint8_t* x;  // [M, K] fp16 / bf16 | e4m3 (fp8 from fp16: the fp16 activations)
  int64_t x_stride_bytes;
  const float* x_scale;  // [M] fp32, fp8 with quantised x only
  const uint8_t* w;      // [N, K] fp16 / bf16 | e4m3
  int64_t w_stride_bytes;
  const float* w_scale;  // [N] fp32, fp8 only
  uint16_t* y;           // [M, N] fp16 / bf16 (as x)
  int64_t y_stride;      // elements
  int m, n;
  int num_chunks;  // 16-byte chunks per weight row
  int k_splits;    // warps per column group (1, 2, 4, 8)
  int chunks_per_split;
  uint8_t* xq_out;        // fused: optional [M, K] e4m3 copy of the codes (block 0 writes it)
  int64_t xq_out_stride;  // bytes
  float* x_scale_out;     // fused: optional [M] fp32 copy of the scales
};

// Fused quantisation, run by the whole block: per-row amax of the fp16 x, the scale with
// fp8_quant.h's formula, and the e4m3 codes (IEEE division, RNE, satfinite; the same
// operations as fp8_quantize_per_token) written to codes [m][k] in shared memory.
template <int kRows>
__device__ __forceinline__ void quantise_rows_to_shared(const GemvArgs& a, uint8_t* codes, float* row_scale) {
  __shared__ float warp_amax[kWarpsPerBlock][kRows];
  const int k = a.num_chunks * 16;
  const int num_vec = k / 8;  // 16-byte vectors of 8 fp16 values per row
  float amax[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    amax[r] = 0.f;
    if (r >= a.m) continue;
    const uint4* row = reinterpret_cast<const uint4*>(a.x + r * a.x_stride_bytes);
    for (int i = threadIdx.x; i < num_vec; i += kThreads) {
      const uint4 v = __ldg(row + i);
      const half2* h = reinterpret_cast<const half2*>(&v);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float2 f = __half22float2(__habs2(h[j]));
        amax[r] = fmaxf(amax[r], fmaxf(f.x, f.y));
      }
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
      amax[r] = fmaxf(amax[r], __shfl_xor_sync(0xffffffffu, amax[r], offset));
    if (threadIdx.x % 32 == 0) warp_amax[threadIdx.x / 32][r] = amax[r];
  }
  __syncthreads();
  if (threadIdx.x < a.m) {
    const int r = threadIdx.x;
    float row_amax = 0.f;
    for (int w = 0; w < kWarpsPerBlock; ++w) row_amax = fmaxf(row_amax, warp_amax[w][r]);
    const float s = fmaxf(__fdiv_rn(row_amax, kFp8E4M3Max), kFp8MinScale);
    row_scale[r] = s;
    if (a.x_scale_out != nullptr && blockIdx.x == 0) a.x_scale_out[r] = s;
  }
  __syncthreads();
  for (int r = 0; r < a.m; ++r) {
    const uint4* row = reinterpret_cast<const uint4*>(a.x + r * a.x_stride_bytes);
    const float s = row_scale[r];
    for (int i = threadIdx.x; i < num_vec; i += kThreads) {
      const uint4 v = __ldg(row + i);
      const half2* h = reinterpret_cast<const half2*>(&v);
      uint32_t bytes[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float2 f = __half22float2(h[j]);
        bytes[j] = __nv_cvt_float_to_fp8(__fdiv_rn(f.x, s), __NV_SATFINITE, __NV_E4M3) |
                   __nv_cvt_float_to_fp8(__fdiv_rn(f.y, s), __NV_SATFINITE, __NV_E4M3) << 8;
      }
      const uint2 packed = make_uint2(bytes[0] | bytes[1] << 16, bytes[2] | bytes[3] << 16);
      reinterpret_cast<uint2*>(codes + r * k)[i] = packed;
      if (a.xq_out != nullptr && blockIdx.x == 0) reinterpret_cast<uint2*>(a.xq_out + r * a.xq_out_stride)[i] = packed;
    }
  }
  __syncthreads();
}

// One block: kWarpsPerBlock / k_splits column groups of kCols columns; the k_splits warps of
// a group each stream one K slice of those columns and their partial sums meet in shared
// memory. kFused: x is fp16 and quantised by the block into shared memory first (fp8 only).
// E: the 16-bit type of x, w and y without fp8 (fp8 writes fp16).
template <bool kFp8, bool kFused, int kRows, int kCols, class E = Element16F16>
__global__ void __launch_bounds__(kThreads) gemv_kernel(const GemvArgs a) {
  static_assert(kFp8 || !kFused, "only fp8 weights take fused activation quantisation");
  static_assert(!kFp8 || std::is_same_v<E, Element16F16>, "fp8 GEMVs write fp16");
  extern __shared__ uint4 quantised_x[];  // kFused: [m][num_chunks] 16-byte chunks of e4m3 codes
  __shared__ float partial[kWarpsPerBlock][kRows][kCols];
  __shared__ float fused_scale[kRows];
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int groups_per_block = kWarpsPerBlock / a.k_splits;
  const int col0 = (blockIdx.x * groups_per_block + warp / a.k_splits) * kCols;
  const int chunk_begin = (warp % a.k_splits) * a.chunks_per_split;
  const int chunk_end = min(chunk_begin + a.chunks_per_split, a.num_chunks);
  const uint4* w_rows[kCols];
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    // Columns past n re-read the last row (results discarded) so no warp leaves before the barriers.
    w_rows[c] = reinterpret_cast<const uint4*>(a.w + min(col0 + c, a.n - 1) * a.w_stride_bytes);
  }
  uint4 wv[kCols][kLoadsInFlight];
  auto load_weights = [&](int base) {
#pragma unroll
    for (int i = 0; i < kLoadsInFlight; ++i) {
      const int chunk = base + i * 32;
#pragma unroll
      for (int c = 0; c < kCols; ++c) wv[c][i] = chunk < chunk_end ? __ldcs(w_rows[c] + chunk) : make_uint4(0, 0, 0, 0);
    }
  };
  const int first = chunk_begin + lane;
  load_weights(first);  // in flight while the previous kernel finishes and the fused quantisation runs
  // Programmatic launch: only weights (which no kernel writes) are read above this line.
  wait_for_prior_kernels();
  allow_dependent_launch();
  const uint4* x_chunks;
  int64_t x_row_chunks;  // row stride of x in chunks
  if constexpr (kFused) {
    quantise_rows_to_shared<kRows>(a, reinterpret_cast<uint8_t*>(quantised_x), fused_scale);
    x_chunks = quantised_x;
    x_row_chunks = a.num_chunks;
  } else {
    x_chunks = reinterpret_cast<const uint4*>(a.x);
    x_row_chunks = a.x_stride_bytes / 16;
  }
  float acc[kRows][kCols] = {};
  for (int base = first; base < chunk_end; base += 32 * kLoadsInFlight) {
    if (base != first) load_weights(base);
#pragma unroll
    for (int i = 0; i < kLoadsInFlight; ++i) {
      const int chunk = base + i * 32;
      if (chunk >= chunk_end) break;
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        if (r >= a.m) break;
        const uint4 x_bits = kFused ? x_chunks[r * x_row_chunks + chunk] : __ldg(x_chunks + r * x_row_chunks + chunk);
        const Chunk<kFp8, E> xc(x_bits);
#pragma unroll
        for (int c = 0; c < kCols; ++c) {
          const Chunk<kFp8, E> wc(wv[c][i]);  // re-derived per row; the compiler keeps it for m == 1
#pragma unroll
          for (int e = 0; e < Chunk<kFp8, E>::kValues; ++e) acc[r][c] = fmaf(wc.v[e], xc.v[e], acc[r][c]);
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      float v = acc[r][c];
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
      if (lane == 0) partial[warp][r][c] = v;
    }
  }
  __syncthreads();
  // One thread per (group, row, column) adds the group's slices in split order.
  for (int idx = threadIdx.x; idx < groups_per_block * kRows * kCols; idx += kThreads) {
    const int group = idx / (kRows * kCols), r = idx / kCols % kRows, c = idx % kCols;
    const int col = (blockIdx.x * groups_per_block + group) * kCols + c;
    if (r >= a.m || col >= a.n) continue;
    float v = 0.f;
    for (int s = 0; s < a.k_splits; ++s) v += partial[group * a.k_splits + s][r][c];
    if constexpr (kFp8) v *= (kFused ? fused_scale[r] : a.x_scale[r]) * a.w_scale[col];
    a.y[r * a.y_stride + col] = E::from_float(v);
  }
}

// e4m3 tensor-core MMA, 16 x 8 x 32, fp32 accumulate (sm_89 and later).
__device__ __forceinline__ void mma_e4m3_16x8x32(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                                 uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
  __trap();  // the host launches this kernel only on sm_89+
#endif
}

// fp8 GEMV on tensor cores: a warp owns 16 weight rows (output columns n0 .. n0 + 15) over
// one K slice, streamed in steps of 64 bytes: lane (g = lane / 4, t = lane % 4) loads the 16
// bytes at k = step * 64 + 16 t of rows n0 + g and n0 + g + 8, which are its A fragments
// for two m16n8k32 MMAs (A row g: bytes 0-3 and 4-7 / 8-11 and 12-15; row g + 8 likewise).
// The B fragment of lane (g, t) is the same 16 bytes of activation row g, so each MMA pairs
// the same k values on both sides (a permutation of k inside the step, which a dot product
// does not see) and activation rows 0 .. 7 are the MMA's 8 columns: m <= 8 costs as m = 1.
// Each step's MMAs start from zero and are added to fp32 registers, so the tensor core's
// own accumulation never spans more than 64 products.
// kTiles token tiles of 8: 1 for m <= 8; 2 for m <= 16, where every weight fragment, loaded
// once, feeds one MMA per tile (activation rows g and g + 8 as the two B fragments).
// Two blocks per SM (at most 128 registers a thread) keep 16 warps streaming; the second
// token tile's activations and accumulators would otherwise take the kernel just past that.
template <bool kFused, int kTiles>
__global__ void __launch_bounds__(kThreads, 2) mma_gemv_kernel(const GemvArgs a) {
  static_assert(kTiles == 1 || !kFused, "the fused quantisation serves at most 8 rows");
  constexpr int kSteps = 8;               // 64-byte steps loaded before use: 16 16-byte loads per lane in flight
  extern __shared__ uint4 quantised_x[];  // kFused: [m][num_chunks] 16-byte chunks of e4m3 codes
  __shared__ float partial[kWarpsPerBlock][kTiles * 4][32];  // each lane's accumulator fragments
  __shared__ float fused_scale[kGemvMaxRows];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  const int groups_per_block = kWarpsPerBlock / a.k_splits;
  const int num_tiles = (a.n + groups_per_block * 16 - 1) / (groups_per_block * 16);  // 16 x groups columns each
  const int num_steps = (a.num_chunks + 3) / 4;
  const int steps_per_split = a.chunks_per_split / 4;
  const int step_begin = (warp % a.k_splits) * steps_per_split;
  const int step_end = min(step_begin + steps_per_split, num_steps);
  const uint4* w_lo;  // weight rows n0 + g and n0 + g + 8 of the current tile
  const uint4* w_hi;
  auto point_at_tile = [&](int tile) {
    // Rows past n re-read the last row (results discarded) so no warp leaves before the barriers.
    const int n0 = (tile * groups_per_block + warp / a.k_splits) * 16;
    w_lo = reinterpret_cast<const uint4*>(a.w + min(n0 + g, a.n - 1) * a.w_stride_bytes);
    w_hi = reinterpret_cast<const uint4*>(a.w + min(n0 + g + 8, a.n - 1) * a.w_stride_bytes);
  };
  uint4 wv_lo[kSteps], wv_hi[kSteps];
  auto load_weights = [&](int step0) {
#pragma unroll
    for (int i = 0; i < kSteps; ++i) {
      const int chunk = (step0 + i) * 4 + t;
      const bool valid = step0 + i < step_end && chunk < a.num_chunks;
      wv_lo[i] = valid ? __ldcs(w_lo + chunk) : make_uint4(0, 0, 0, 0);
      wv_hi[i] = valid ? __ldcs(w_hi + chunk) : make_uint4(0, 0, 0, 0);
    }
  };
  point_at_tile(blockIdx.x);
  load_weights(step_begin);  // in flight while the previous kernel finishes and the fused quantisation runs
  // Programmatic launch: only weights (which no kernel writes) are read above this line.
  wait_for_prior_kernels();
  allow_dependent_launch();
  const uint4* x_row[kTiles];  // activation row 8 q + g (B column g of token tile q), or nullptr past m
  if constexpr (kFused) {
    // Once per block, however many tiles it then streams.
    quantise_rows_to_shared<kGemvMaxRows>(a, reinterpret_cast<uint8_t*>(quantised_x), fused_scale);
    x_row[0] = g < a.m ? quantised_x + g * a.num_chunks : nullptr;
  } else {
#pragma unroll
    for (int q = 0; q < kTiles; ++q) {
      const int row = 8 * q + g;
      x_row[q] = row < a.m ? reinterpret_cast<const uint4*>(a.x + row * a.x_stride_bytes) : nullptr;
    }
  }
  // The grid is at most one wave; each block walks the tiles blockIdx.x, + gridDim.x, ...
  for (int tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
    float acc[kTiles][4] = {};
    for (int step0 = step_begin; step0 < step_end; step0 += kSteps) {
      if (step0 != step_begin) load_weights(step0);
#pragma unroll
      for (int i = 0; i < kSteps; ++i) {
        if (step0 + i >= step_end) break;
        const int chunk = (step0 + i) * 4 + t;
#pragma unroll
        for (int q = 0; q < kTiles; ++q) {
          uint4 xv = make_uint4(0, 0, 0, 0);
          if (x_row[q] != nullptr && chunk < a.num_chunks) xv = kFused ? x_row[q][chunk] : __ldg(x_row[q] + chunk);
          float d[4] = {0.f, 0.f, 0.f, 0.f};
          mma_e4m3_16x8x32(d, wv_lo[i].x, wv_hi[i].x, wv_lo[i].y, wv_hi[i].y, xv.x, xv.y);
          mma_e4m3_16x8x32(d, wv_lo[i].z, wv_hi[i].z, wv_lo[i].w, wv_hi[i].w, xv.z, xv.w);
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[q][j] += d[j];
        }
      }
    }
    // The next tile's first loads go out before this tile's reduction.
    if (tile + static_cast<int>(gridDim.x) < num_tiles) {
      point_at_tile(tile + gridDim.x);
      load_weights(step_begin);
    }
#pragma unroll
    for (int q = 0; q < kTiles; ++q) {
#pragma unroll
      for (int j = 0; j < 4; ++j) partial[warp][q * 4 + j][lane] = acc[q][j];
    }
    __syncthreads();
    // D fragment of token tile q: d[0], d[1] = (weight row n0 + g, activation rows 8 q + 2t,
    // + 1); d[2], d[3] the same for weight row n0 + g + 8. One thread per (group, q, lane, j)
    // adds the slices in order.
    for (int idx = threadIdx.x; idx < groups_per_block * kTiles * 128; idx += kThreads) {
      const int group = idx / (kTiles * 128), q = idx / 128 % kTiles, src_lane = idx / 4 % 32, j = idx % 4;
      const int col = (tile * groups_per_block + group) * 16 + src_lane / 4 + (j >= 2 ? 8 : 0);
      const int r = 8 * q + 2 * (src_lane % 4) + (j & 1);
      if (r >= a.m || col >= a.n) continue;
      float v = 0.f;
      for (int s = 0; s < a.k_splits; ++s) v += partial[group * a.k_splits + s][q * 4 + j][src_lane];
      v *= (kFused ? fused_scale[r] : a.x_scale[r]) * a.w_scale[col];
      a.y[r * a.y_stride + col] = __half_as_ushort(__float2half_rn(v));
    }
    __syncthreads();  // partial is rewritten by the next tile
  }
}

int device_max_shared_bytes() {
  static const int bytes = [] {
    int device = 0, optin = 48 * 1024;
    if (cudaGetDevice(&device) == cudaSuccess)
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    return optin;
  }();
  return bytes;
}

// What launch errors call the operation.
template <bool kFp8, bool kFused>
constexpr const char* launch_error_name() {
  return kFused ? "fp8_gemv_from_fp16 launch" : kFp8 ? "fp8_gemv launch" : "fp16_gemv launch";
}

// Dynamic shared memory per block: the fused kernels keep the [m, k] e4m3 codes there.
template <bool kFused>
size_t codes_shared_bytes(const GemvArgs& a) {
  return kFused ? static_cast<size_t>(a.m) * a.num_chunks * 16 : 0;
}

// Above 48 KiB of dynamic shared memory a kernel has to opt in (only the fused kernels need
// that much).
template <typename... KernelArgs>
Status allow_shared_bytes(void (*kernel)(KernelArgs...), size_t shared_bytes) {
  if (shared_bytes <= 48 * 1024) return Status::ok();
  return cuda_status(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared_bytes)),
      "fp8_gemv_from_fp16 shared memory attribute");
}

// Programmatic launch (sm_90): the first weight loads overlap the previous kernel's tail.
template <bool kFp8, bool kFused, typename... KernelArgs>
Status launch_gemv_kernel(void (*kernel)(KernelArgs...), int num_blocks, size_t shared_bytes, cudaStream_t stream,
                          const GemvArgs& a) {
  return cuda_status(launch_programmatic(kernel, dim3(num_blocks), dim3(kThreads), shared_bytes, stream, a),
                     launch_error_name<kFp8, kFused>());
}

template <bool kFp8, bool kFused, int kRows, class E>
Status launch_rows(const GemvArgs& a, const GemvPlan& plan, cudaStream_t stream) {
  constexpr int kCols = kFp8 ? 4 : 2;
  auto* kernel = gemv_kernel<kFp8, kFused, kRows, kCols, E>;
  const size_t shared_bytes = codes_shared_bytes<kFused>(a);
  CROSSPOINT_RETURN_IF_ERROR(allow_shared_bytes(kernel, shared_bytes));
  return launch_gemv_kernel<kFp8, kFused>(kernel, plan.num_blocks, shared_bytes, stream, a);
}

template <bool kFused, int kTiles>
Status launch_mma(GemvArgs a, int k_splits, cudaStream_t stream) {
  GemvPlan plan = plan_fp8_mma_gemv(a.n, a.num_chunks * 16, cuda_device_info().num_sms, k_splits);
  a.k_splits = plan.k_splits;
  a.chunks_per_split = plan.chunks_per_split;
  auto* kernel = mma_gemv_kernel<kFused, kTiles>;
  const size_t shared_bytes = codes_shared_bytes<kFused>(a);
  CROSSPOINT_RETURN_IF_ERROR(allow_shared_bytes(kernel, shared_bytes));
  // At most one wave of blocks, each walking several tiles: the fused quantisation runs once
  // per block, not once per 16 columns.
  int blocks_per_sm = 0;
  CROSSPOINT_CUDA_RETURN_IF_ERROR(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kThreads, shared_bytes),
      "fp8 GEMV occupancy");
  plan.num_blocks = std::min(plan.num_blocks, std::max(blocks_per_sm, 1) * cuda_device_info().num_sms);
  return launch_gemv_kernel<true, kFused>(kernel, plan.num_blocks, shared_bytes, stream, a);
}

template <bool kFp8, bool kFused, class E = Element16F16>
Status launch_gemv(GemvArgs a, GemvOptions options, cudaStream_t stream) {
  if constexpr (kFp8) {
    if (!options.fp8_on_cuda_cores && fp8_gemv_on_tensor_cores()) {
      if (kFused || a.m <= 8) return launch_mma<kFused, 1>(a, options.k_splits, stream);
      if constexpr (!kFused) return launch_mma<false, 2>(a, options.k_splits, stream);
    }
  }
  const GemvPlan plan =
      plan_gemv(kFp8, a.n, a.num_chunks * (kFp8 ? 16 : 8), cuda_device_info().num_sms, options.k_splits);
  a.k_splits = plan.k_splits;
  a.chunks_per_split = plan.chunks_per_split;
  if (a.m == 1) return launch_rows<kFp8, kFused, 1, E>(a, plan, stream);
  if constexpr (!kFused) {
    // The fused CUDA-core kernel is only a fallback (GPUs without e4m3 MMA) whose e4m3
    // conversions are software on sm_80: two instantiations keep the sm_80 build short.
    if (a.m == 2) return launch_rows<kFp8, kFused, 2, E>(a, plan, stream);
    if (a.m <= 4) return launch_rows<kFp8, kFused, 4, E>(a, plan, stream);
  }
  return launch_rows<kFp8, kFused, 8, E>(a, plan, stream);
}

// The fields every GEMV sets: activation and weight rows (byte strides), output, sizes. The
// fp8 scales and the fused kernels' optional outputs are the callers' to add.
GemvArgs gemv_args(const void* x, int64_t x_stride_bytes, const uint8_t* w, int64_t w_stride_bytes, uint16_t* y,
                   int64_t y_stride, int m, int n, int num_chunks) {
  GemvArgs a{};
  a.x = static_cast<const uint8_t*>(x);
  a.x_stride_bytes = x_stride_bytes;
  a.w = w;
  a.w_stride_bytes = w_stride_bytes;
  a.y = y;
  a.y_stride = y_stride;
  a.m = m;
  a.n = n;
  a.num_chunks = num_chunks;
  return a;
}

Status check_shape(const char* op, int m, int n, int k, int k_multiple, int k_splits, int max_rows = kGemvMaxRows) {
  if (m < 1 || m > max_rows) {
    return invalid_argument(std::string(op) + ": m = " + std::to_string(m) + " outside [1, " +
                            std::to_string(max_rows) + "]");
  }
  if (n <= 0 || k <= 0 || k % k_multiple != 0) {
    return unsupported(std::string(op) + ": k = " + std::to_string(k) + " must be a positive multiple of " +
                       std::to_string(k_multiple));
  }
  if (k_splits != 0 && k_splits != 1 && k_splits != 2 && k_splits != 4 && k_splits != 8) {
    return invalid_argument(std::string(op) + ": k_splits = " + std::to_string(k_splits) + " is not 0, 1, 2, 4 or 8");
  }
  return Status::ok();
}

}  // namespace

bool fp8_gemv_on_tensor_cores() { return cuda_device_info().capability() >= 89; }  // e4m3 mma: sm_89+

namespace {

// The tensor-core kernel: 16 columns per warp, K in 64-byte steps of 4 chunks.
GemvPlan plan_mma_gemv(int n, int num_chunks, int num_sms, int force_k_splits) {
  GemvPlan plan;
  plan.cols_per_warp = 16;
  const int num_steps = (num_chunks + 3) / 4;  // 64-byte steps per weight row
  const int64_t col_groups = (static_cast<int64_t>(n) + 15) / 16;
  const int64_t target_warps = static_cast<int64_t>(std::max(num_sms, 1)) * kMmaTargetWarpsPerSm;
  int splits = 1;
  if (force_k_splits > 0) {
    splits = force_k_splits;
  } else {
    while (splits < kWarpsPerBlock && col_groups * splits < target_warps &&
           num_steps / (2 * splits) >= kMinStepsPerSplit) {
      splits *= 2;
    }
  }
  plan.k_splits = splits;
  plan.chunks_per_split = (num_steps + splits - 1) / splits * 4;
  plan.cols_per_block = kWarpsPerBlock / splits * 16;
  plan.num_blocks = static_cast<int>((static_cast<int64_t>(n) + plan.cols_per_block - 1) / plan.cols_per_block);
  return plan;
}

}  // namespace

GemvPlan plan_fp8_mma_gemv(int n, int k, int num_sms, int force_k_splits) {
  return plan_mma_gemv(n, k / 16, num_sms, force_k_splits);
}

GemvPlan plan_gemv(bool fp8_weights, int n, int k, int num_sms, int force_k_splits) {
  GemvPlan plan;
  plan.cols_per_warp = fp8_weights ? 4 : 2;
  const int num_chunks = k / (fp8_weights ? 16 : 8);
  const int64_t col_groups = (static_cast<int64_t>(n) + plan.cols_per_warp - 1) / plan.cols_per_warp;
  const int64_t target_warps = static_cast<int64_t>(std::max(num_sms, 1)) * kTargetWarpsPerSm;
  int splits = 1;
  if (force_k_splits > 0) {
    splits = force_k_splits;
  } else {
    while (splits < kWarpsPerBlock && col_groups * splits < target_warps &&
           num_chunks / (2 * splits) >= kMinChunksPerSplit) {
      splits *= 2;
    }
  }
  plan.k_splits = splits;
  plan.chunks_per_split = (num_chunks + splits - 1) / splits;
  plan.cols_per_block = kWarpsPerBlock / splits * plan.cols_per_warp;
  plan.num_blocks = static_cast<int>((static_cast<int64_t>(n) + plan.cols_per_block - 1) / plan.cols_per_block);
  return plan;
}

Status fp16_gemv(const uint16_t* x, int64_t x_stride, const uint16_t* w, int64_t w_stride, uint16_t* y,
                 int64_t y_stride, int m, int n, int k, cudaStream_t stream, int k_splits, DType dtype) {
  CROSSPOINT_RETURN_IF_ERROR(check_shape("fp16_gemv", m, n, k, 8, k_splits));
  if (!is_element16(dtype)) return invalid_argument("fp16_gemv: the activations must be fp16 or bf16");
  if (x_stride % 8 != 0 || w_stride % 8 != 0 || x_stride < k || w_stride < k) {
    return invalid_argument("fp16_gemv: row strides must be multiples of 8 elements and >= k");
  }
  const GemvArgs a =
      gemv_args(x, x_stride * 2, reinterpret_cast<const uint8_t*>(w), w_stride * 2, y, y_stride, m, n, k / 8);
  const GemvOptions options{k_splits, false};
  return dtype == DType::kBF16 ? launch_gemv<false, false, Element16BF16>(a, options, stream)
                               : launch_gemv<false, false>(a, options, stream);
}

Status fp8_gemv(const uint8_t* xq, int64_t xq_stride, const float* x_scale, const uint8_t* wq, int64_t w_stride,
                const float* w_scale, uint16_t* y, int64_t y_stride, int m, int n, int k, cudaStream_t stream,
                GemvOptions options) {
  const bool mma = !options.fp8_on_cuda_cores && fp8_gemv_on_tensor_cores();
  CROSSPOINT_RETURN_IF_ERROR(
      check_shape("fp8_gemv", m, n, k, 16, options.k_splits, mma ? kMmaGemvMaxRows : kGemvMaxRows));
  if (xq_stride % 16 != 0 || w_stride % 16 != 0 || xq_stride < k || w_stride < k) {
    return invalid_argument("fp8_gemv: row strides must be multiples of 16 bytes and >= k");
  }
  GemvArgs a = gemv_args(xq, xq_stride, wq, w_stride, y, y_stride, m, n, k / 16);
  a.x_scale = x_scale;
  a.w_scale = w_scale;
  return launch_gemv<true, false>(a, options, stream);
}

Status fp8_gemv_from_fp16(const uint16_t* x, int64_t x_stride, const uint8_t* wq, int64_t w_stride,
                          const float* w_scale, uint16_t* y, int64_t y_stride, int m, int n, int k, cudaStream_t stream,
                          uint8_t* xq_out, int64_t xq_out_stride, float* x_scale_out, GemvOptions options) {
  CROSSPOINT_RETURN_IF_ERROR(check_shape("fp8_gemv_from_fp16", m, n, k, 16, options.k_splits));
  if (x_stride % 8 != 0 || w_stride % 16 != 0 || x_stride < k || w_stride < k ||
      reinterpret_cast<uintptr_t>(x) % 16 != 0) {
    return invalid_argument(
        "fp8_gemv_from_fp16: x must be 16-byte aligned with a row stride a multiple of 8 elements, "
        "w a row stride a multiple of 16 bytes, both >= k");
  }
  if (xq_out != nullptr &&
      (xq_out_stride < k || xq_out_stride % 8 != 0 || reinterpret_cast<uintptr_t>(xq_out) % 8 != 0)) {
    return invalid_argument(
        "fp8_gemv_from_fp16: xq_out must be 8-byte aligned with a row stride a multiple of 8 bytes, >= k");
  }
  const int64_t shared_bytes = static_cast<int64_t>(m) * k;
  const int64_t static_bytes = 2048;  // the kernel's partial sums, amax and scales
  if (shared_bytes + static_bytes > device_max_shared_bytes()) {
    return unsupported("fp8_gemv_from_fp16: m * k = " + std::to_string(shared_bytes) +
                       " bytes of e4m3 activations exceed the device's shared memory per block");
  }
  GemvArgs a = gemv_args(x, x_stride * 2, wq, w_stride, y, y_stride, m, n, k / 16);
  a.w_scale = w_scale;
  a.xq_out = xq_out;
  a.xq_out_stride = xq_out_stride;
  a.x_scale_out = x_scale_out;
  return launch_gemv<true, true>(a, options, stream);
}

}  // namespace crosspoint::cuda
