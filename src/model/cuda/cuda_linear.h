// One linear layer of the CUDA model, in the precision its checkpoint stores, with the
// checkpoint linears that share an input fused along the output dimension (q|k|v, gate|up):
//   fp16    weight [N, K] fp16 (f32/bf16 checkpoints converted on the host)
//   w8a8    weight [N, K] e4m3 + weight_scale [N] f32; activations quantised per token
//           (fp8_linear_from_fp16: fused into the GEMV at small M, else
//           fp8_quantize_per_token before fp8_linear; or by the step before, which writes
//           them quantised: run_cuda_linear_fp8)
//   int8    weight [N, K] int8 + weight_scale [N] f32 (W8A8-INT8); activations quantised to int8
//           per token, or with input_scale when the checkpoint has a static one
//           (int8_linear_from_fp16)
//   fp8-block weight [N, K] e4m3 + weight_scale f32, one per 128 x 128 block
//           [ceil(N / 128), fp8_block_weight_scale_row(K)]; activations quantised per token
//           and group of 128 (fp8_block_linear_from_fp16)
//   w4a16   GPTQ int4 re-laid-out by w4a16_repack (weight, scales, zeros when asymmetric, k_perm for
//           act-order, whose activations go through w4a16_permute_columns first); from
//           kW4A16DequantMinRows rows dequantised into scratch and run as fp16 (cuBLASLt)
// Outputs are fp16 [M, N]. The optional bias is fp16 [N]; run_cuda_linear does not add it
// (the fused qkv bias is added by rope_kv_write).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/w4a16_gemm.h"
#include "model/cuda/device_buffer.h"
#include "model/model.h"

namespace crosspoint::cuda {

enum class CudaLinearFormat { kFp16, kFp8, kFp8Block, kInt8, kW4A16 };

const char* cuda_linear_format_name(CudaLinearFormat format);

struct CudaLinear {
  std::string name;  // "model.layers.3.self_attn.qkv" for errors and logs
  CudaLinearFormat format = CudaLinearFormat::kFp16;
  int32_t in_features = 0;        // K
  int32_t out_features = 0;       // N (sum of the fused parts)
  int32_t group_size = 0;         // w4a16: G (K for one group)
  DeviceBuffer weight;            // fp16 [N, K] | e4m3 or int8 [N, K] | uint32 W4A16 packed [N/16][K/64][32][4]
  DeviceBuffer weight_scale;      // w8a8 / int8: f32 [N] | fp8-block: f32 blocks | w4a16: packed half2 | fp16: empty
  DeviceBuffer weight_scale_m64;  // fp8-block: the same scales per 64 channels (fp8_block_scales_m64), else empty
  DeviceBuffer k_perm;            // w4a16 act-order: int32 [K], else empty
  DeviceBuffer zeros;             // w4a16 with zero points other than 8: packed half2 (1024 + z), else empty
  DeviceBuffer input_scale;       // w8a8 / int8 with a static activation scale: f32 [1], else empty (per token)
  DeviceBuffer bias;              // fp16 [N] (bf16 with dtype kBF16) or empty
  DType dtype = DType::kF16;      // of activations, dense weights and bias: kBF16 only for dense linears

  size_t device_bytes() const {
    return weight.bytes() + weight_scale.bytes() + weight_scale_m64.bytes() + k_perm.bytes() + zeros.bytes() +
           input_scale.bytes() + bias.bytes();
  }
};

// Batch-invariant mode (serve --deterministic) runs every linear on slabs of this many rows, the
// last one padded: each launch has the same shape whatever the batch, so the kernel, its tiles
// and its K split (all chosen from the shape) never depend on how many rows share the step.
// 64 is the smallest slab at which every precision already runs its large-batch kernel
// (cuBLASLt, the FP8 GEMM, the W4A16 wgmma); buffers a linear reads or writes are rounded up to
// a multiple of it.
inline constexpr int kBatchInvariantRows = 64;

// Calls launch(first_row, rows) once for all m rows, or, with slab_rows > 0, once per slab of
// slab_rows rows (the last slab padded past m: the caller's buffers must hold the padding).
template <typename Launch>
Status for_each_row_slab(int m, int slab_rows, Launch&& launch) {
  if (slab_rows <= 0) return launch(0, m);
  for (int first = 0; first < m; first += slab_rows) CROSSPOINT_RETURN_IF_ERROR(launch(first, slab_rows));
  return Status::ok();
}

// Scratch shared by every linear of the model, sized for max_rows rows of the widest layer.
struct CudaLinearScratch {
  CublasLtContext* cublas = nullptr;
  uint8_t* xq = nullptr;           // w8a8 / int8: [max_rows, max_K] e4m3 or int8
  float* x_scale = nullptr;        // w8a8 / int8: [max_rows] f32
  int32_t* int8_sums = nullptr;    // int8: [max_rows, max_N] int32, the GEMM's sums before scaling
  float* group_x_scale = nullptr;  // fp8-block: [max_K / 128, max_rows] f32
  float* fp8_epilogue = nullptr;   // w8a8 on the cuBLASLt epilogue path: [max_rows, max_N] f32, else nullptr
  uint16_t* x_perm = nullptr;      // w4a16 act-order: [max_rows, max_K] fp16
  // w4a16 at >= kW4A16DequantMinRows rows: [max N * K] fp16, the layer dequantised for cuBLASLt;
  // nullptr: those rows stay on w4a16_gemm.
  uint16_t* w4a16_weight_fp16 = nullptr;
  int slab_rows = 0;  // > 0: batch-invariant mode, every linear in slabs of this many rows
};

// One checkpoint linear to fuse: its tensor prefix and the model's loaded view of it.
struct LinearPart {
  std::string prefix;  // "model.layers.0.self_attn.q_proj"
  const LinearWeight* weight = nullptr;
};

// Builds and uploads the fused linear of `parts` (same in_features; outputs concatenated in
// order) from their parsed form (LinearWeight::view()). All parts must share one storage
// family. with_bias uploads every part's bias. dtype: the activations' (kF16, or kBF16 for dense
// parts only: quantised ones are refused). Errors name the layer.
Result<CudaLinear> upload_fused_linear(const std::vector<LinearPart>& parts, bool with_bias, const std::string& name,
                                       DType dtype = DType::kF16);

// The host half of a W4A16 upload (no GPU needed; tests check it): the parts' int4 storage
// concatenated along N (one group size, one row order) and re-laid-out by w4a16_repack, with
// the zero points packed by w4a16_pack_zeros (none when they are all 8).
Result<W4A16PackedWeight> assemble_fused_gptq(const std::vector<LinearPart>& parts, const std::string& name);

// The host half of a block-wise FP8 upload (no GPU needed; tests check it): the parts' 128 x 128
// block scales, a row per 128 output channels in fused order, each row padded to
// fp8_block_weight_scale_row(K) floats (cublaslt_gemm.h). Refuses other block sizes, K not a
// multiple of 128, and parts other than the last whose outputs are not a multiple of 128.
Result<std::vector<float>> assemble_fused_fp8_block_scales(const std::vector<LinearPart>& parts,
                                                           const std::string& name);

// y[M, N] = x[M, K] · Wᵀ. x dense fp16 [M, K] (row stride K), y dense fp16 [M, N]; with
// scratch.slab_rows > 0 both hold M rounded up to a multiple of it.
Status run_cuda_linear(const CudaLinear& linear, const CudaLinearScratch& scratch, const uint16_t* x, int m,
                       uint16_t* y, cudaStream_t stream);

// Whether `linear` at m rows of fp16 input x would quantise x per token before its GEMM (a W8A8
// linear outside the fused GEMV), so that the step producing x may write it already quantised
// (decoder_ops.h's Fp8Rows into scratch.xq / scratch.x_scale) for run_cuda_linear_fp8.
bool cuda_linear_takes_fp8_rows(const CudaLinear& linear, const CudaLinearScratch& scratch, const uint16_t* x, int m);

// y[M, N] = x · Wᵀ for a W8A8 linear whose input the step before quantised: scratch.xq [M, K]
// e4m3 (row stride K) and scratch.x_scale [M]; y as run_cuda_linear. Only where
// cuda_linear_takes_fp8_rows.
Status run_cuda_linear_fp8(const CudaLinear& linear, const CudaLinearScratch& scratch, int m, uint16_t* y,
                           cudaStream_t stream);

// n elements of f32/f16/bf16 data as `element` bits (kF16 or kBF16; round to nearest even),
// converted on the host (threaded); a copy where dtype == element.
std::vector<uint16_t> to_element16(const void* data, DType dtype, int64_t n, DType element);

// Copies host bytes into a new device buffer (synchronously).
Result<DeviceBuffer> upload_bytes(const void* host, size_t bytes, const std::string& what);

}  // namespace crosspoint::cuda
