#include "kernels/cuda/cutlass_w4a16_gemm.h"

#include <algorithm>
#include <string>

#include "kernels/cuda/cutlass_w4a16_kernels.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/split_k_reduce.h"

namespace crosspoint::cuda {
namespace {

constexpr int kTileK = 64;

int tile_channels(CutlassW4A16Tile t) { return t == CutlassW4A16Tile::k128x128 ? 128 : 64; }
int tile_tokens(CutlassW4A16Tile t) {
  switch (t) {
    case CutlassW4A16Tile::k64x16: return 16;
    case CutlassW4A16Tile::k64x32: return 32;
    case CutlassW4A16Tile::k64x64: return 64;
    case CutlassW4A16Tile::k128x128: return 128;
  }
  return 16;
}

// Slices of whole scale groups and whole k-blocks, at least two k-blocks each.
bool k_splits_fit(int k, int group_size, int splits) {
  if (splits == 1) return true;
  if (k % splits != 0) return false;
  const int slice = k / splits;
  return slice % group_size == 0 && slice % kTileK == 0 && slice >= 2 * kTileK;
}

}  // namespace

const char* cutlass_w4a16_tile_name(CutlassW4A16Tile tile) {
  switch (tile) {
    case CutlassW4A16Tile::k64x16: return "64x16";
    case CutlassW4A16Tile::k64x32: return "64x32";
    case CutlassW4A16Tile::k64x64: return "64x64";
    case CutlassW4A16Tile::k128x128: return "128x128";
  }
  return "?";
}

CutlassW4A16Plan cutlass_w4a16_plan(int m, int n, int k, int group_size, int num_sms, int force_k_splits) {
  CutlassW4A16Plan plan;
  plan.tile = m <= 16   ? CutlassW4A16Tile::k64x16
              : m <= 32 ? CutlassW4A16Tile::k64x32
              : m <= 64 ? CutlassW4A16Tile::k64x64
                        : CutlassW4A16Tile::k128x128;
  if (plan.tile == CutlassW4A16Tile::k128x128) return plan;
  const int g = group_size <= 0 ? k : group_size;
  if (force_k_splits > 0) {
    if (k_splits_fit(k, g, force_k_splits)) plan.k_splits = force_k_splits;
    return plan;
  }
  const int64_t tiles = static_cast<int64_t>((n + tile_channels(plan.tile) - 1) / tile_channels(plan.tile)) *
                        ((m + tile_tokens(plan.tile) - 1) / tile_tokens(plan.tile));
  for (int splits : {8, 6, 4, 3, 2}) {
    if (tiles * splits <= num_sms && k_splits_fit(k, g, splits)) {
      plan.k_splits = splits;
      break;
    }
  }
  return plan;
}

size_t cutlass_w4a16_workspace_bytes(const CutlassW4A16Plan& plan, int m, int n) {
  return plan.k_splits > 1 ? static_cast<size_t>(plan.k_splits) * m * n * sizeof(float) : 0;
}

bool cutlass_w4a16_available() {
#if defined(CROSSPOINT_CUTLASS_SM90)
  const CudaDeviceInfo& d = cuda_device_info();
  return d.major == 9 && d.minor == 0;
#else
  return false;
#endif
}

namespace {

Status validate_and_run(const cutlass_w4a16::Args& args, const CutlassW4A16Plan& plan, cudaStream_t stream) {
  const int m = args.m, n = args.n, k = args.k, g = args.group_size;
  if (m < 0 || n <= 0 || k <= 0 || n % 64 != 0 || k % kTileK != 0) {
    return invalid_argument("cutlass_w4a16_gemm: m " + std::to_string(m) + ", n " + std::to_string(n) + ", k " +
                            std::to_string(k) + ": n and k must be positive multiples of 64");
  }
  if (g != k && g % kTileK != 0) {
    return unsupported("cutlass_w4a16_gemm: group size " + std::to_string(g) + " is not a multiple of 64");
  }
  const bool split = plan.k_splits > 1;
  if (args.x_stride % 8 != 0 || (!split && args.out_stride % 8 != 0)) {
    return invalid_argument("cutlass_w4a16_gemm: x and y row strides must be multiples of 8 elements (TMA)");
  }
  if (!k_splits_fit(k, g, plan.k_splits) || (split && plan.tile == CutlassW4A16Tile::k128x128)) {
    return invalid_argument("cutlass_w4a16_gemm: k = " + std::to_string(k) + " with group " + std::to_string(g) +
                            " does not split into " + std::to_string(plan.k_splits) + " slices on the " +
                            cutlass_w4a16_tile_name(plan.tile) + " tile");
  }
  if (m == 0 && !args.check_only) return Status::ok();
  switch (plan.tile) {
    case CutlassW4A16Tile::k64x16: return cutlass_w4a16::gemm_64x16(args, split, stream);
    case CutlassW4A16Tile::k64x32: return cutlass_w4a16::gemm_64x32(args, split, stream);
    case CutlassW4A16Tile::k64x64: return cutlass_w4a16::gemm_64x64(args, split, stream);
    case CutlassW4A16Tile::k128x128: return cutlass_w4a16::gemm_128x128(args, stream);
  }
  return internal_error("cutlass_w4a16_gemm: unknown tile");
}

cutlass_w4a16::Args make_args(const uint16_t* x, int64_t x_stride, const uint8_t* weight, const uint16_t* scales,
                              uint16_t* y, int64_t y_stride, int m, int n, int k, int group_size,
                              const CutlassW4A16Plan& plan, float* workspace) {
  const bool split = plan.k_splits > 1;
  return {x,
          x_stride,
          weight,
          scales,
          split ? static_cast<void*>(workspace) : static_cast<void*>(y),
          split ? n : y_stride,
          // Between K slices; a multiple of 16 bytes for TMA even where there is one slice.
          split ? static_cast<int64_t>(m) * n : y_stride * std::max(m, 1),
          m,
          n,
          k,
          group_size <= 0 ? k : group_size,
          plan.k_splits};
}

}  // namespace

Status cutlass_w4a16_gemm_check(int m, int n, int k, int group_size, int64_t x_stride, int64_t y_stride,
                                const CutlassW4A16Plan& plan) {
  // CUTLASS tells its modes apart by which pointers are set (scale-only needs the scales), so
  // the check passes stand-ins it never dereferences, 256-byte aligned as real buffers are.
  const auto stand_in = [](auto* type) { return reinterpret_cast<decltype(type)>(uintptr_t{256}); };
  cutlass_w4a16::Args args =
      make_args(stand_in(static_cast<const uint16_t*>(nullptr)), x_stride, stand_in(static_cast<const uint8_t*>(nullptr)),
                stand_in(static_cast<const uint16_t*>(nullptr)), stand_in(static_cast<uint16_t*>(nullptr)), y_stride, m,
                n, k, group_size, plan, stand_in(static_cast<float*>(nullptr)));
  args.check_only = true;
  return validate_and_run(args, plan, nullptr);
}

Status cutlass_w4a16_gemm(const uint16_t* x, int64_t x_stride, const uint8_t* weight, const uint16_t* scales,
                          uint16_t* y, int64_t y_stride, int m, int n, int k, int group_size,
                          const CutlassW4A16Plan& plan, float* workspace, size_t workspace_bytes,
                          cudaStream_t stream) {
  if (plan.k_splits > 1 && (workspace == nullptr || workspace_bytes < cutlass_w4a16_workspace_bytes(plan, m, n))) {
    return invalid_argument("cutlass_w4a16_gemm: a " + std::to_string(plan.k_splits) + "-way K split needs " +
                            std::to_string(cutlass_w4a16_workspace_bytes(plan, m, n)) + " bytes of workspace, got " +
                            std::to_string(workspace_bytes));
  }
  if (!cutlass_w4a16_available()) {
    CROSSPOINT_RETURN_IF_ERROR(cutlass_w4a16_gemm_check(m, n, k, group_size, x_stride, y_stride, plan));
    return unsupported("cutlass_w4a16_gemm: needs a compute capability 9.0 GPU and a build for sm_90a");
  }
  const cutlass_w4a16::Args args =
      make_args(x, x_stride, weight, scales, y, y_stride, m, n, k, group_size, plan, workspace);
  CROSSPOINT_RETURN_IF_ERROR(validate_and_run(args, plan, stream));
  if (plan.k_splits == 1 || m == 0) return Status::ok();
  return split_k_sum_to_f16(workspace, plan.k_splits, static_cast<int64_t>(m) * n, y, y_stride, m, n, stream);
}

}  // namespace crosspoint::cuda
