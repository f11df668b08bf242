#include "kernels/cuda/cutlass_fp8_block_gemm.h"

#include <cstdint>
#include <optional>
#include <string>

#include "kernels/cuda/cutlass_fp8_block_kernels.h"
#include "kernels/cuda/device_info.h"

namespace crosspoint::cuda {

const char* cutlass_fp8_block_tile_name(CutlassFp8BlockTile tile) {
  switch (tile) {
    case CutlassFp8BlockTile::k64x16: return "64x16";
    case CutlassFp8BlockTile::k64x32: return "64x32";
    case CutlassFp8BlockTile::k64x64: return "64x64";
    case CutlassFp8BlockTile::k64x128: return "64x128";
  }
  return "?";
}

int cutlass_fp8_block_tile_tokens(CutlassFp8BlockTile tile) {
  switch (tile) {
    case CutlassFp8BlockTile::k64x16: return 16;
    case CutlassFp8BlockTile::k64x32: return 32;
    case CutlassFp8BlockTile::k64x64: return 64;
    case CutlassFp8BlockTile::k64x128: return 128;
  }
  return 0;
}

std::optional<CutlassFp8BlockTile> cutlass_fp8_block_tile_for(int m, int n, int num_sms) {
  if (m < 1 || m > kCutlassFp8BlockMaxRows) return std::nullopt;
  if (m <= 16) return CutlassFp8BlockTile::k64x16;
  if (m <= 32) return CutlassFp8BlockTile::k64x32;
  const bool halves_fit = 2 * static_cast<int64_t>((n + 63) / 64) <= num_sms;
  if (m <= 64) return halves_fit ? CutlassFp8BlockTile::k64x32 : CutlassFp8BlockTile::k64x64;
  return halves_fit ? CutlassFp8BlockTile::k64x64 : CutlassFp8BlockTile::k64x128;
}

Status cutlass_fp8_block_gemm_on(CutlassFp8BlockTile tile, const CutlassFp8BlockArgs& a, cudaStream_t stream) {
  if (a.m < 0 || a.n <= 0 || a.k <= 0 || a.m % 4 != 0 || a.n % 8 != 0 || a.k % 128 != 0) {
    return invalid_argument("cutlass_fp8_block_gemm: m = " + std::to_string(a.m) + " must be a multiple of 4, n = " +
                            std::to_string(a.n) + " of 8 and k = " + std::to_string(a.k) + " of 128");
  }
  if (a.m == 0 && !a.check_only) return Status::ok();
  const int num_sms = a.check_only ? 1 : cuda_device_info().num_sms;
  switch (tile) {
    case CutlassFp8BlockTile::k64x16: return cutlass_fp8_block::gemm_64x16(a, num_sms, stream);
    case CutlassFp8BlockTile::k64x32: return cutlass_fp8_block::gemm_64x32(a, num_sms, stream);
    case CutlassFp8BlockTile::k64x64: return cutlass_fp8_block::gemm_64x64(a, num_sms, stream);
    case CutlassFp8BlockTile::k64x128: return cutlass_fp8_block::gemm_64x128(a, num_sms, stream);
  }
  return internal_error("cutlass_fp8_block_gemm: unknown tile");
}

Status cutlass_fp8_block_gemm(const CutlassFp8BlockArgs& a, cudaStream_t stream) {
  if (a.m == 0 && !a.check_only) return Status::ok();
  const std::optional<CutlassFp8BlockTile> tile =
      cutlass_fp8_block_tile_for(a.m, a.n, a.check_only ? 1 << 20 : cuda_device_info().num_sms);
  if (!tile) {
    return unsupported("cutlass_fp8_block_gemm: " + std::to_string(a.m) + " rows; its tiles serve at most " +
                       std::to_string(kCutlassFp8BlockMaxRows));
  }
  return cutlass_fp8_block_gemm_on(*tile, a, stream);
}

std::vector<float> fp8_block_scales_m64(const float* blocks, int64_t row_floats, int n, int k) {
  const int64_t m_blocks = (n + 63) / 64, k_blocks = k / 128;
  std::vector<float> out(static_cast<size_t>(m_blocks * k_blocks));
  for (int64_t kb = 0; kb < k_blocks; ++kb)
    for (int64_t mb = 0; mb < m_blocks; ++mb) out[kb * m_blocks + mb] = blocks[(mb / 2) * row_floats + kb];
  return out;
}

}  // namespace crosspoint::cuda
