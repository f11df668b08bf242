#include "kernels/cuda/cutlass_fp8_gemm.h"

#include <algorithm>
#include <string>

#include "kernels/cuda/cutlass_fp8_kernels.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/split_k_reduce.h"

namespace crosspoint::cuda {
namespace {

struct TileShape {
  int channels, tokens, k;
};
TileShape tile_shape(CutlassFp8Tile tile) {
  switch (tile) {
    case CutlassFp8Tile::k64x16: return {64, 16, 256};
    case CutlassFp8Tile::k64x32: return {64, 32, 256};
    case CutlassFp8Tile::k64x64: return {64, 64, 256};
    case CutlassFp8Tile::k128x128: return {128, 128, 128};
  }
  return {64, 16, 256};
}

// Whether K cuts into `splits` slices TMA can address (16-byte slice starts) that keep at least
// two k-blocks each.
bool k_splits_fit(int k, int splits, const TileShape& t) {
  return splits == 1 || (k % splits == 0 && (k / splits) % 16 == 0 && k / splits >= 2 * t.k);
}

}  // namespace

const char* cutlass_fp8_tile_name(CutlassFp8Tile tile) {
  switch (tile) {
    case CutlassFp8Tile::k64x16: return "64x16";
    case CutlassFp8Tile::k64x32: return "64x32";
    case CutlassFp8Tile::k64x64: return "64x64";
    case CutlassFp8Tile::k128x128: return "128x128";
  }
  return "?";
}

CutlassFp8Plan cutlass_fp8_plan(int m, int n, int k, int num_sms, int force_k_splits) {
  CutlassFp8Plan plan;
  plan.tile = m <= 16   ? CutlassFp8Tile::k64x16
              : m <= 32 ? CutlassFp8Tile::k64x32
              : m <= 64 ? CutlassFp8Tile::k64x64
                        : CutlassFp8Tile::k128x128;
  if (plan.tile == CutlassFp8Tile::k128x128) return plan;  // no fp32-partial instantiation of that tile
  const TileShape t = tile_shape(plan.tile);
  if (force_k_splits > 0) {
    if (k_splits_fit(k, force_k_splits, t)) plan.k_splits = force_k_splits;
    return plan;
  }
  // Tiles of one slice; split while the whole batch still fits in one wave of CTAs (one per SM:
  // each takes most of an SM's shared memory for its ring).
  const int64_t tiles = static_cast<int64_t>((n + t.channels - 1) / t.channels) * ((m + t.tokens - 1) / t.tokens);
  for (int splits : {8, 6, 4, 3, 2}) {
    if (tiles * splits <= num_sms && k_splits_fit(k, splits, t)) {
      plan.k_splits = splits;
      break;
    }
  }
  return plan;
}

size_t cutlass_fp8_workspace_bytes(const CutlassFp8Plan& plan, int m, int n) {
  return plan.k_splits > 1 ? static_cast<size_t>(plan.k_splits) * m * n * sizeof(float) : 0;
}

bool cutlass_fp8_available() {
#if defined(CROSSPOINT_CUTLASS_SM90)
  const CudaDeviceInfo& d = cuda_device_info();
  return d.major == 9 && d.minor == 0;
#else
  return false;
#endif
}

namespace {

// The launcher's refusals, then the tile's entry point (with args.check_only, CUTLASS's own
// can_implement alone).
Status validate_and_run(const cutlass_fp8::Args& args, const CutlassFp8Plan& plan, cudaStream_t stream) {
  const int m = args.m, n = args.n, k = args.k;
  if (m < 0 || n <= 0 || k <= 0) {
    return invalid_argument("cutlass_fp8_gemm: bad sizes m " + std::to_string(m) + ", n " + std::to_string(n) +
                            ", k " + std::to_string(k));
  }
  const bool split = plan.k_splits > 1;
  const int64_t y_stride = split ? 0 : args.out_stride;
  if (k % 16 != 0 || args.xq_stride % 16 != 0 || args.w_stride % 16 != 0 || n % 8 != 0 || y_stride % 8 != 0) {
    return invalid_argument("cutlass_fp8_gemm: k (" + std::to_string(k) + ") and the xq/w strides must be multiples of " +
                            "16 bytes, n (" + std::to_string(n) + ") and y's stride multiples of 8 elements (TMA)");
  }
  const TileShape t = tile_shape(plan.tile);
  if (!k_splits_fit(k, plan.k_splits, t) || (split && plan.tile == CutlassFp8Tile::k128x128)) {
    return invalid_argument("cutlass_fp8_gemm: k = " + std::to_string(k) + " does not split into " +
                            std::to_string(plan.k_splits) + " slices on the " + cutlass_fp8_tile_name(plan.tile) +
                            " tile");
  }
  if (m == 0 && !args.check_only) return Status::ok();
  switch (plan.tile) {
    case CutlassFp8Tile::k64x16: return cutlass_fp8::gemm_64x16(args, split, stream);
    case CutlassFp8Tile::k64x32: return cutlass_fp8::gemm_64x32(args, split, stream);
    case CutlassFp8Tile::k64x64: return cutlass_fp8::gemm_64x64(args, split, stream);
    case CutlassFp8Tile::k128x128: return cutlass_fp8::gemm_128x128(args, stream);
  }
  return internal_error("cutlass_fp8_gemm: unknown tile");
}

cutlass_fp8::Args make_args(const uint8_t* xq, int64_t xq_stride, const float* x_scale, const uint8_t* wq,
                            int64_t w_stride, const float* w_scale, uint16_t* y, int64_t y_stride, int m, int n, int k,
                            const CutlassFp8Plan& plan, float* workspace) {
  const bool split = plan.k_splits > 1;
  return {xq,
          xq_stride,
          x_scale,
          wq,
          w_stride,
          w_scale,
          split ? static_cast<void*>(workspace) : static_cast<void*>(y),
          split ? n : y_stride,
          // Between K slices; TMA wants every stride a multiple of 16 bytes even where there is
          // one slice.
          split ? static_cast<int64_t>(m) * n : y_stride * std::max(m, 1),
          m,
          n,
          k,
          plan.k_splits};
}

}  // namespace

Status cutlass_fp8_gemm_check(int m, int n, int k, int64_t xq_stride, int64_t w_stride, int64_t y_stride,
                              const CutlassFp8Plan& plan) {
  cutlass_fp8::Args args = make_args(nullptr, xq_stride, nullptr, nullptr, w_stride, nullptr, nullptr, y_stride, m, n,
                                     k, plan, nullptr);
  args.check_only = true;
  return validate_and_run(args, plan, nullptr);
}

Status cutlass_fp8_gemm(const uint8_t* xq, int64_t xq_stride, const float* x_scale, const uint8_t* wq,
                        int64_t w_stride, const float* w_scale, uint16_t* y, int64_t y_stride, int m, int n, int k,
                        const CutlassFp8Plan& plan, float* workspace, size_t workspace_bytes, cudaStream_t stream) {
  if (plan.k_splits > 1 && (workspace == nullptr || workspace_bytes < cutlass_fp8_workspace_bytes(plan, m, n))) {
    return invalid_argument("cutlass_fp8_gemm: a " + std::to_string(plan.k_splits) + "-way K split needs " +
                            std::to_string(cutlass_fp8_workspace_bytes(plan, m, n)) + " bytes of workspace, got " +
                            std::to_string(workspace_bytes));
  }
  if (!cutlass_fp8_available()) {
    CROSSPOINT_RETURN_IF_ERROR(cutlass_fp8_gemm_check(m, n, k, xq_stride, w_stride, y_stride, plan));
    return unsupported("cutlass_fp8_gemm: needs a compute capability 9.0 GPU and a build for sm_90a");
  }
  const cutlass_fp8::Args args =
      make_args(xq, xq_stride, x_scale, wq, w_stride, w_scale, y, y_stride, m, n, k, plan, workspace);
  CROSSPOINT_RETURN_IF_ERROR(validate_and_run(args, plan, stream));
  if (plan.k_splits == 1 || m == 0) return Status::ok();
  return split_k_sum_to_f16(workspace, plan.k_splits, static_cast<int64_t>(m) * n, y, y_stride, m, n, stream);
}

}  // namespace crosspoint::cuda
