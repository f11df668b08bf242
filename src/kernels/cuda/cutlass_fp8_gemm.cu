#include "kernels/cuda/cutlass_fp8_gemm.h"

#include <cstdint>
#include <string>

#include "kernels/cuda/cutlass_fp8_kernels.h"
#include "kernels/cuda/device_info.h"

namespace crosspoint::cuda {
namespace {

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The launcher's refusals, then the tile's entry point (with args.check_only, CUTLASS's own
// can_implement alone).
Status validate_and_run(CutlassFp8Tile tile, const cutlass_fp8::Args& a, cudaStream_t stream) {
  if (a.m < 0 || a.n <= 0 || a.k <= 0) {
    return invalid_argument("cutlass_fp8_gemm: bad sizes m " + std::to_string(a.m) + ", n " + std::to_string(a.n) +
                            ", k " + std::to_string(a.k));
  }
  if (a.k % 16 != 0 || a.xq_stride % 16 != 0 || a.w_stride % 16 != 0 || a.n % 8 != 0 || a.y_stride % 8 != 0) {
    return invalid_argument("cutlass_fp8_gemm: k (" + std::to_string(a.k) +
                            ") and the xq/w strides must be multiples " + "of 16 bytes, n (" + std::to_string(a.n) +
                            ") and y's stride multiples of 8 elements (TMA)");
  }
  if (!a.check_only && (!aligned16(a.xq) || !aligned16(a.wq) || !aligned16(a.y))) {
    return invalid_argument("cutlass_fp8_gemm: xq, wq and y must be 16-byte aligned (TMA)");
  }
  if (a.m == 0 && !a.check_only) return Status::ok();
  cutlass_fp8::Args args = a;
  args.num_sms = cuda_device_info().num_sms;
  switch (tile) {
    case CutlassFp8Tile::k64x16: return cutlass_fp8::gemm_64x16(args, stream);
    case CutlassFp8Tile::k64x32: return cutlass_fp8::gemm_64x32(args, stream);
    case CutlassFp8Tile::k64x64: return cutlass_fp8::gemm_64x64(args, stream);
    case CutlassFp8Tile::k64x128: return cutlass_fp8::gemm_64x128(args, stream);
    case CutlassFp8Tile::kPingpong64x16: return cutlass_fp8::gemm_pingpong_64x16(args, stream);
    case CutlassFp8Tile::kPingpong64x32: return cutlass_fp8::gemm_pingpong_64x32(args, stream);
    case CutlassFp8Tile::kPingpong64x64: return cutlass_fp8::gemm_pingpong_64x64(args, stream);
    case CutlassFp8Tile::kPingpong64x128: return cutlass_fp8::gemm_pingpong_64x128(args, stream);
    case CutlassFp8Tile::kStreamK128x16: return cutlass_fp8::gemm_streamk_128x16(args, stream);
    case CutlassFp8Tile::kStreamK128x32: return cutlass_fp8::gemm_streamk_128x32(args, stream);
    case CutlassFp8Tile::kStreamK128x64: return cutlass_fp8::gemm_streamk_128x64(args, stream);
    case CutlassFp8Tile::kStreamK128x128: return cutlass_fp8::gemm_streamk_128x128(args, stream);
    case CutlassFp8Tile::kStreamK128x256: return cutlass_fp8::gemm_streamk_128x256(args, stream);
  }
  return internal_error("cutlass_fp8_gemm: unknown tile");
}

}  // namespace

const char* cutlass_fp8_tile_name(CutlassFp8Tile tile) {
  switch (tile) {
    case CutlassFp8Tile::k64x16: return "64x16";
    case CutlassFp8Tile::k64x32: return "64x32";
    case CutlassFp8Tile::k64x64: return "64x64";
    case CutlassFp8Tile::k64x128: return "64x128";
    case CutlassFp8Tile::kPingpong64x16: return "pingpong_64x16";
    case CutlassFp8Tile::kPingpong64x32: return "pingpong_64x32";
    case CutlassFp8Tile::kPingpong64x64: return "pingpong_64x64";
    case CutlassFp8Tile::kPingpong64x128: return "pingpong_64x128";
    case CutlassFp8Tile::kStreamK128x16: return "streamk_128x16";
    case CutlassFp8Tile::kStreamK128x32: return "streamk_128x32";
    case CutlassFp8Tile::kStreamK128x64: return "streamk_128x64";
    case CutlassFp8Tile::kStreamK128x128: return "streamk_128x128";
    case CutlassFp8Tile::kStreamK128x256: return "streamk_128x256";
  }
  return "?";
}

bool cutlass_fp8_tile_built(CutlassFp8Tile tile) {
#if defined(CROSSPOINT_CUTLASS_SM90) && defined(CROSSPOINT_CUTLASS_CANDIDATES)
  return true;
#elif defined(CROSSPOINT_CUTLASS_SM90)
  return tile == CutlassFp8Tile::k64x16 || tile == CutlassFp8Tile::k64x32 || tile == CutlassFp8Tile::k64x64 ||
         tile == CutlassFp8Tile::k64x128;
#else
  return false;
#endif
}

int cutlass_fp8_tile_tokens(CutlassFp8Tile tile) {
  switch (tile) {
    case CutlassFp8Tile::k64x16:
    case CutlassFp8Tile::kPingpong64x16:
    case CutlassFp8Tile::kStreamK128x16: return 16;
    case CutlassFp8Tile::k64x32:
    case CutlassFp8Tile::kPingpong64x32:
    case CutlassFp8Tile::kStreamK128x32: return 32;
    case CutlassFp8Tile::k64x64:
    case CutlassFp8Tile::kPingpong64x64:
    case CutlassFp8Tile::kStreamK128x64: return 64;
    case CutlassFp8Tile::k64x128:
    case CutlassFp8Tile::kPingpong64x128:
    case CutlassFp8Tile::kStreamK128x128: return 128;
    case CutlassFp8Tile::kStreamK128x256: return 256;
  }
  return 0;
}

CutlassFp8Tile cutlass_fp8_tile_for(int m) {
  return m <= 16   ? CutlassFp8Tile::k64x16
         : m <= 32 ? CutlassFp8Tile::k64x32
         : m <= 64 ? CutlassFp8Tile::k64x64
                   : CutlassFp8Tile::k64x128;
}

bool cutlass_fp8_available() {
#if defined(CROSSPOINT_CUTLASS_SM90)
  const CudaDeviceInfo& d = cuda_device_info();
  return d.major == 9 && d.minor == 0;
#else
  return false;
#endif
}

Status cutlass_fp8_gemm_check(int m, int n, int k, int64_t xq_stride, int64_t w_stride, int64_t y_stride) {
  cutlass_fp8::Args args{nullptr, xq_stride, nullptr, nullptr, w_stride, nullptr, nullptr, y_stride, m, n, k};
  args.check_only = true;
  return validate_and_run(cutlass_fp8_tile_for(m), args, nullptr);
}

Result<size_t> cutlass_fp8_workspace_bytes(CutlassFp8Tile tile, int m, int n, int k, int splits) {
  size_t bytes = 0;
  cutlass_fp8::Args args{nullptr, k, nullptr, nullptr, k, nullptr, nullptr, n, m, n, k};
  args.check_only = true;
  args.workspace_bytes_needed = &bytes;
  args.splits = splits;
  CROSSPOINT_RETURN_IF_ERROR(validate_and_run(tile, args, nullptr));
  return bytes;
}

Status cutlass_fp8_gemm_with(CutlassFp8Tile tile, const uint8_t* xq, int64_t xq_stride, const float* x_scale,
                             const uint8_t* wq, int64_t w_stride, const float* w_scale, uint16_t* y, int64_t y_stride,
                             int m, int n, int k, void* workspace, size_t workspace_bytes, cudaStream_t stream,
                             int splits) {
  if (!cutlass_fp8_available())
    return unsupported("cutlass_fp8_gemm: needs a compute capability 9.0 GPU and a build for sm_90a");
  cutlass_fp8::Args args{xq, xq_stride, x_scale, wq, w_stride, w_scale, y, y_stride, m, n, k};
  args.workspace = workspace;
  args.workspace_bytes = workspace_bytes;
  args.splits = splits;
  return validate_and_run(tile, args, stream);
}

Status cutlass_fp8_gemm(const uint8_t* xq, int64_t xq_stride, const float* x_scale, const uint8_t* wq, int64_t w_stride,
                        const float* w_scale, uint16_t* y, int64_t y_stride, int m, int n, int k, cudaStream_t stream) {
  if (!cutlass_fp8_available()) {
    CROSSPOINT_RETURN_IF_ERROR(cutlass_fp8_gemm_check(m, n, k, xq_stride, w_stride, y_stride));
    return unsupported("cutlass_fp8_gemm: needs a compute capability 9.0 GPU and a build for sm_90a");
  }
  return validate_and_run(cutlass_fp8_tile_for(m),
                          {xq, xq_stride, x_scale, wq, w_stride, w_scale, y, y_stride, m, n, k}, stream);
}

}  // namespace crosspoint::cuda
