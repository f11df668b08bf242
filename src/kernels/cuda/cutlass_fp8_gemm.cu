#include "kernels/cuda/cutlass_fp8_gemm.h"

#include <cstdint>
#include <optional>
#include <string>

#include "kernels/cuda/cutlass_fp8_kernels.h"
#include "kernels/cuda/device_info.h"

namespace crosspoint::cuda {
namespace {

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The launcher's refusals, then the tile's entry point for e4m3 or int8 operands (with
// args.check_only, CUTLASS's own can_implement alone).
Status validate_and_run(CutlassFp8Tile tile, const cutlass_fp8::Args& a, bool int8, cudaStream_t stream) {
  const std::string name = int8 ? "cutlass_int8_gemm" : "cutlass_fp8_gemm";
  if (a.m < 0 || a.n <= 0 || a.k <= 0) {
    return invalid_argument(name + ": bad sizes m " + std::to_string(a.m) + ", n " + std::to_string(a.n) + ", k " +
                            std::to_string(a.k));
  }
  if (a.k % 16 != 0 || a.xq_stride % 16 != 0 || a.w_stride % 16 != 0 || a.n % 8 != 0 || a.y_stride % 8 != 0) {
    return invalid_argument(name + ": k (" + std::to_string(a.k) + ") and the xq/w strides must be multiples " +
                            "of 16 bytes, n (" + std::to_string(a.n) +
                            ") and y's stride multiples of 8 elements (TMA)");
  }
  if (!a.check_only && (!aligned16(a.xq) || !aligned16(a.wq) || !aligned16(a.y))) {
    return invalid_argument(name + ": xq, wq and y must be 16-byte aligned (TMA)");
  }
  if (a.m == 0 && !a.check_only) return Status::ok();
  cutlass_fp8::Args args = a;
  args.num_sms = cuda_device_info().num_sms;
  if (int8) {
    switch (tile) {
      case CutlassFp8Tile::k64x16: return cutlass_fp8::int8_gemm_64x16(args, stream);
      case CutlassFp8Tile::k64x32: return cutlass_fp8::int8_gemm_64x32(args, stream);
      case CutlassFp8Tile::k64x64: return cutlass_fp8::int8_gemm_64x64(args, stream);
      case CutlassFp8Tile::k64x128: return cutlass_fp8::int8_gemm_64x128(args, stream);
      case CutlassFp8Tile::kPingpong64x16: return cutlass_fp8::int8_gemm_pingpong_64x16(args, stream);
      case CutlassFp8Tile::kPingpong64x32: return cutlass_fp8::int8_gemm_pingpong_64x32(args, stream);
      case CutlassFp8Tile::kPingpong64x64: return cutlass_fp8::int8_gemm_pingpong_64x64(args, stream);
      case CutlassFp8Tile::kCooperative128x128: return cutlass_fp8::int8_gemm_cooperative_128x128(args, stream);
      case CutlassFp8Tile::kCooperative128x256: return cutlass_fp8::int8_gemm_cooperative_128x256(args, stream);
    }
    return internal_error(name + ": unknown tile");
  }
  switch (tile) {
    case CutlassFp8Tile::k64x16: return cutlass_fp8::gemm_64x16(args, stream);
    case CutlassFp8Tile::k64x32: return cutlass_fp8::gemm_64x32(args, stream);
    case CutlassFp8Tile::k64x64: return cutlass_fp8::gemm_64x64(args, stream);
    case CutlassFp8Tile::k64x128: return cutlass_fp8::gemm_64x128(args, stream);
    case CutlassFp8Tile::kPingpong64x16: return cutlass_fp8::gemm_pingpong_64x16(args, stream);
    case CutlassFp8Tile::kPingpong64x32: return cutlass_fp8::gemm_pingpong_64x32(args, stream);
    case CutlassFp8Tile::kPingpong64x64: return cutlass_fp8::gemm_pingpong_64x64(args, stream);
    case CutlassFp8Tile::kCooperative128x128:
    case CutlassFp8Tile::kCooperative128x256:
      return unsupported(name + ": the cooperative tiles are int8's only (FP8 lost on them to cuBLASLt and its " +
                         "64-channel tiles; at 256 tokens its second, promotion accumulator would spill)");
  }
  return internal_error(name + ": unknown tile");
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
    case CutlassFp8Tile::kCooperative128x128: return "cooperative_128x128";
    case CutlassFp8Tile::kCooperative128x256: return "cooperative_128x256";
  }
  return "?";
}

int cutlass_fp8_tile_tokens(CutlassFp8Tile tile) {
  switch (tile) {
    case CutlassFp8Tile::k64x16:
    case CutlassFp8Tile::kPingpong64x16: return 16;
    case CutlassFp8Tile::k64x32:
    case CutlassFp8Tile::kPingpong64x32: return 32;
    case CutlassFp8Tile::k64x64:
    case CutlassFp8Tile::kPingpong64x64: return 64;
    case CutlassFp8Tile::k64x128:
    case CutlassFp8Tile::kCooperative128x128: return 128;
    case CutlassFp8Tile::kCooperative128x256: return 256;
  }
  return 0;
}

std::optional<CutlassFp8Tile> cutlass_fp8_tile_for(int m, int n, int num_sms) {
  if (m < 1 || m > kFp8CutlassMaxRows) return std::nullopt;
  const int64_t channel_tiles = (n + 63) / 64;
  const auto tiles = [&](int tokens) { return channel_tiles * ((m + tokens - 1) / tokens); };
  if (m <= 64) {
    const bool pingpong = channel_tiles > num_sms;
    if (m <= 16) return pingpong ? CutlassFp8Tile::kPingpong64x16 : CutlassFp8Tile::k64x16;
    if (m <= 32) return pingpong ? CutlassFp8Tile::kPingpong64x32 : CutlassFp8Tile::k64x32;
    return pingpong ? CutlassFp8Tile::kPingpong64x64 : CutlassFp8Tile::k64x64;
  }
  if (m <= 128) {
    const bool spills = tiles(64) > num_sms && tiles(64) <= 2 * num_sms && tiles(128) <= num_sms;
    return spills ? CutlassFp8Tile::k64x128 : CutlassFp8Tile::kPingpong64x64;
  }
  if (tiles(128) <= num_sms) return CutlassFp8Tile::k64x128;
  return std::nullopt;
}

std::optional<CutlassFp8Tile> cutlass_int8_tile_for(int m, int n, int num_sms) {
  if (m < 1) return std::nullopt;
  if (m >= kInt8WideTileMinRows) return CutlassFp8Tile::kCooperative128x256;
  const std::optional<CutlassFp8Tile> fp8 = cutlass_fp8_tile_for(m, n, num_sms);
  if (m > 128 && !fp8) return CutlassFp8Tile::kCooperative128x128;
  return fp8;
}

bool cutlass_fp8_available() {
#if defined(CROSSPOINT_CUTLASS_SM90)
  const CudaDeviceInfo& d = cuda_device_info();
  return d.major == 9 && d.minor == 0;
#else
  return false;
#endif
}

Status cutlass_fp8_gemm_check(CutlassFp8Tile tile, int m, int n, int k, int64_t xq_stride, int64_t w_stride,
                              int64_t y_stride) {
  cutlass_fp8::Args args{nullptr, xq_stride, nullptr, nullptr, w_stride, nullptr, nullptr, y_stride, m, n, k};
  args.check_only = true;
  return validate_and_run(tile, args, /*int8=*/false, nullptr);
}

Status cutlass_fp8_gemm(CutlassFp8Tile tile, const uint8_t* xq, int64_t xq_stride, const float* x_scale,
                        const uint8_t* wq, int64_t w_stride, const float* w_scale, uint16_t* y, int64_t y_stride, int m,
                        int n, int k, cudaStream_t stream) {
  if (!cutlass_fp8_available()) {
    CROSSPOINT_RETURN_IF_ERROR(cutlass_fp8_gemm_check(tile, m, n, k, xq_stride, w_stride, y_stride));
    return unsupported("cutlass_fp8_gemm: needs a compute capability 9.0 GPU and a build for sm_90a");
  }
  return validate_and_run(tile, {xq, xq_stride, x_scale, wq, w_stride, w_scale, y, y_stride, m, n, k},
                          /*int8=*/false, stream);
}

Status cutlass_int8_gemm_check(CutlassFp8Tile tile, int m, int n, int k, int64_t xq_stride, int64_t w_stride,
                               int64_t y_stride) {
  cutlass_fp8::Args args{nullptr, xq_stride, nullptr, nullptr, w_stride, nullptr, nullptr, y_stride, m, n, k};
  args.check_only = true;
  return validate_and_run(tile, args, /*int8=*/true, nullptr);
}

Status cutlass_int8_gemm(CutlassFp8Tile tile, const int8_t* xq, int64_t xq_stride, const float* x_scale,
                         const int8_t* wq, int64_t w_stride, const float* w_scale, uint16_t* y, int64_t y_stride, int m,
                         int n, int k, cudaStream_t stream) {
  if (!cutlass_fp8_available()) {
    CROSSPOINT_RETURN_IF_ERROR(cutlass_int8_gemm_check(tile, m, n, k, xq_stride, w_stride, y_stride));
    return unsupported("cutlass_int8_gemm: needs a compute capability 9.0 GPU and a build for sm_90a");
  }
  return validate_and_run(tile,
                          {reinterpret_cast<const uint8_t*>(xq), xq_stride, x_scale,
                           reinterpret_cast<const uint8_t*>(wq), w_stride, w_scale, y, y_stride, m, n, k},
                          /*int8=*/true, stream);
}

}  // namespace crosspoint::cuda
