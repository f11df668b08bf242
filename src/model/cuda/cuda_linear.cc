#include "model/cuda/cuda_linear.h"

#include <algorithm>
#include <cstring>
#include <variant>

#include "common/thread_pool.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/cutlass_fp8_block_gemm.h"
#include "kernels/cuda/fp8_block_quant.h"
#include "kernels/cuda/fp8_quant.h"
#include "kernels/cuda/linear.h"
#include "kernels/cuda/w4a16_dequantize.h"
#include "kernels/cuda/w4a16_gemm.h"
#include "kernels/weight_dtype.h"

namespace crosspoint::cuda {
namespace {

// Element i of f32/f16/bf16 data as fp16 bits, or bf16 bits with `bf16`; safe on unaligned mmap
// data. A 16-bit source of the wanted type is copied; every other value is rounded from f32
// (exact for the other 16-bit type's value).
uint16_t element_as_16bit(const void* data, DType dtype, int64_t i, bool bf16) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  float f;
  if (dtype == DType::kF16 || dtype == DType::kBF16) {
    uint16_t h;
    std::memcpy(&h, bytes + i * 2, 2);
    if ((dtype == DType::kBF16) == bf16) return h;
    f = dtype == DType::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
  } else {
    std::memcpy(&f, bytes + i * 4, 4);
  }
  return bf16 ? f32_to_bf16(f) : f32_to_f16(f);
}

template <typename Storage>
Storage storage_of(const LinearPart& p) {
  return std::get<Storage>(p.weight->view().storage);
}

Status upload_dense_parts(const std::vector<LinearPart>& parts, CudaLinear& out) {
  const DType element = out.dtype;
  const int64_t K = out.in_features;
  CROSSPOINT_ASSIGN_OR_RETURN(out.weight,
                              DeviceBuffer::allocate(static_cast<size_t>(out.out_features) * K * 2, out.name));
  size_t row = 0;
  for (const LinearPart& p : parts) {
    const int64_t N = p.weight->out_features();
    const DenseWeightStorage w = storage_of<DenseWeightStorage>(p);
    if (w.weight == nullptr) return internal_error(p.prefix + ": the dense weight is not materialised");
    auto* dst = out.weight.as<uint8_t>() + row * K * 2;
    const size_t bytes = static_cast<size_t>(N * K) * 2;
    if (w.dtype == element) {
      CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemcpy(dst, w.weight, bytes, cudaMemcpyHostToDevice), "upload weight");
    } else {
      const std::vector<uint16_t> converted = to_element16(w.weight, w.dtype, N * K, element);
      CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemcpy(dst, converted.data(), bytes, cudaMemcpyHostToDevice),
                                      "upload weight");
    }
    row += static_cast<size_t>(N);
  }
  return Status::ok();
}

Status upload_fp8_parts(const std::vector<LinearPart>& parts, CudaLinear& out) {
  const int64_t K = out.in_features;
  CROSSPOINT_ASSIGN_OR_RETURN(out.weight, DeviceBuffer::allocate(static_cast<size_t>(out.out_features) * K, out.name));
  std::vector<float> scales;  // [N] f32
  size_t row = 0;
  for (const LinearPart& p : parts) {
    const int64_t N = p.weight->out_features();
    const Fp8WeightStorage w = storage_of<Fp8WeightStorage>(p);
    CROSSPOINT_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(out.weight.as<uint8_t>() + row * K, w.weight, static_cast<size_t>(N * K), cudaMemcpyHostToDevice),
        "upload weight");
    scales.insert(scales.end(), w.weight_scale, w.weight_scale + N);
    row += static_cast<size_t>(N);
  }
  CROSSPOINT_ASSIGN_OR_RETURN(out.weight_scale, upload_bytes(scales.data(), scales.size() * 4, out.name + " scales"));
  // Static activation scales: the parts were loaded with their fused maximum (fp8_linear_weight.h).
  const float input_scale = storage_of<Fp8WeightStorage>(parts[0]).input_scale;
  for (const LinearPart& p : parts)
    if (storage_of<Fp8WeightStorage>(p).input_scale != input_scale)
      return unsupported(out.name + ": " + p.prefix + " and " + parts[0].prefix +
                         " have different static activation scales; fused linears need one");
  if (input_scale > 0.0f) {
    CROSSPOINT_ASSIGN_OR_RETURN(out.input_scale,
                                upload_bytes(&input_scale, sizeof input_scale, out.name + " input_scale"));
  }
  return Status::ok();
}

Status upload_fp8_block_parts(const std::vector<LinearPart>& parts, CudaLinear& out) {
  const int64_t K = out.in_features;
  CROSSPOINT_ASSIGN_OR_RETURN(std::vector<float> scales, assemble_fused_fp8_block_scales(parts, out.name));
  CROSSPOINT_ASSIGN_OR_RETURN(out.weight, DeviceBuffer::allocate(static_cast<size_t>(out.out_features) * K, out.name));
  size_t row = 0;
  for (const LinearPart& p : parts) {
    const int64_t N = p.weight->out_features();
    const Fp8BlockWeightStorage w = storage_of<Fp8BlockWeightStorage>(p);
    CROSSPOINT_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(out.weight.as<uint8_t>() + row * K, w.weight, static_cast<size_t>(N * K), cudaMemcpyHostToDevice),
        "upload weight");
    row += static_cast<size_t>(N);
  }
  CROSSPOINT_ASSIGN_OR_RETURN(out.weight_scale, upload_bytes(scales.data(), scales.size() * 4, out.name + " scales"));
  const std::vector<float> m64 =
      fp8_block_scales_m64(scales.data(), fp8_block_weight_scale_row(K), out.out_features, static_cast<int>(K));
  CROSSPOINT_ASSIGN_OR_RETURN(out.weight_scale_m64,
                              upload_bytes(m64.data(), m64.size() * 4, out.name + " scales per 64 channels"));
  return Status::ok();
}

Status upload_int8_parts(const std::vector<LinearPart>& parts, CudaLinear& out) {
  const int64_t K = out.in_features;
  CROSSPOINT_ASSIGN_OR_RETURN(out.weight, DeviceBuffer::allocate(static_cast<size_t>(out.out_features) * K, out.name));
  std::vector<float> scales;  // [N] f32
  size_t row = 0;
  for (const LinearPart& p : parts) {
    const int64_t N = p.weight->out_features();
    const Int8WeightStorage w = storage_of<Int8WeightStorage>(p);
    CROSSPOINT_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(out.weight.as<uint8_t>() + row * K, w.weight, static_cast<size_t>(N * K), cudaMemcpyHostToDevice),
        "upload weight");
    scales.insert(scales.end(), w.weight_scale, w.weight_scale + N);
    row += static_cast<size_t>(N);
  }
  CROSSPOINT_ASSIGN_OR_RETURN(out.weight_scale, upload_bytes(scales.data(), scales.size() * 4, out.name + " scales"));
  // Static activation scales: the parts were loaded with their fused maximum (int8_linear_weight.h).
  const float input_scale = storage_of<Int8WeightStorage>(parts[0]).input_scale;
  for (const LinearPart& p : parts)
    if (storage_of<Int8WeightStorage>(p).input_scale != input_scale)
      return unsupported(out.name + ": " + p.prefix + " and " + parts[0].prefix +
                         " have different static activation scales; fused linears need one");
  if (input_scale > 0.0f) {
    CROSSPOINT_ASSIGN_OR_RETURN(out.input_scale,
                                upload_bytes(&input_scale, sizeof input_scale, out.name + " input_scale"));
  }
  return Status::ok();
}

Status upload_int4_parts(const std::vector<LinearPart>& parts, CudaLinear& out) {
  CROSSPOINT_ASSIGN_OR_RETURN(W4A16PackedWeight packed, assemble_fused_gptq(parts, out.name));
  out.group_size = packed.group_size;
  CROSSPOINT_ASSIGN_OR_RETURN(out.weight, upload_bytes(packed.weight.data(), packed.weight.size() * 4, out.name));
  CROSSPOINT_ASSIGN_OR_RETURN(out.weight_scale,
                              upload_bytes(packed.scales.data(), packed.scales.size() * 4, out.name + " scales"));
  if (!packed.k_perm.empty()) {
    CROSSPOINT_ASSIGN_OR_RETURN(out.k_perm,
                                upload_bytes(packed.k_perm.data(), packed.k_perm.size() * 4, out.name + " k_perm"));
  }
  if (!packed.zeros.empty()) {
    CROSSPOINT_ASSIGN_OR_RETURN(out.zeros,
                                upload_bytes(packed.zeros.data(), packed.zeros.size() * 4, out.name + " zeros"));
  }
  return Status::ok();
}

}  // namespace

Result<W4A16PackedWeight> assemble_fused_gptq(const std::vector<LinearPart>& parts, const std::string& name) {
  CROSSPOINT_CHECK(!parts.empty(), "assemble_fused_gptq: no parts");
  const int64_t K = parts[0].weight->in_features();
  const int64_t G = storage_of<Int4GroupWeightStorage>(parts[0]).group_size;
  if (G <= 0)  // linear_shard.h: an act-order row shard, a group index per row
    return unsupported(name +
                       ": a tensor-parallel row shard of an act-order GPTQ weight keeps a group index per "
                       "row, which the GPU's W4A16 kernels do not take (it runs on --device cpu)");
  const int64_t groups = K / G;
  int64_t N_total = 0;
  for (const LinearPart& p : parts) N_total += p.weight->out_features();
  std::vector<int32_t> qweight(static_cast<size_t>(K / 8) * N_total);   // [K/8, N_total]
  std::vector<uint16_t> scales(static_cast<size_t>(groups) * N_total);  // [groups, N_total] fp16
  std::vector<uint8_t> zeros(static_cast<size_t>(groups) * N_total);    // [groups, N_total] 0..16
  const int32_t* k_perm = storage_of<Int4GroupWeightStorage>(parts[0]).k_perm;
  int64_t col = 0;
  for (const LinearPart& p : parts) {
    const int64_t N = p.weight->out_features();
    const Int4GroupWeightStorage w = storage_of<Int4GroupWeightStorage>(p);
    if (w.group_size != G)
      return unsupported(name + ": " + p.prefix + " has group size " + std::to_string(w.group_size) + ", " +
                         parts[0].prefix + " has " + std::to_string(G) + "; fused linears need one group size");
    const bool same_order =
        (w.k_perm == nullptr) == (k_perm == nullptr) && (k_perm == nullptr || std::equal(k_perm, k_perm + K, w.k_perm));
    if (!same_order)
      return unsupported(p.prefix + ".g_idx differs from " + parts[0].prefix +
                         ".g_idx: fused linears with different act-order permutations are not supported on cuda");
    for (int64_t r = 0; r < K / 8; ++r)
      std::memcpy(qweight.data() + r * N_total + col, w.qweight + r * N, static_cast<size_t>(N) * 4);
    for (int64_t g = 0; g < groups; ++g) {
      std::memcpy(scales.data() + g * N_total + col, w.scales + g * N, static_cast<size_t>(N) * 2);
      std::memcpy(zeros.data() + g * N_total + col, w.zeros + g * N, static_cast<size_t>(N));
    }
    col += N;
  }
  // The parsed rows are already sorted by group, so the repack needs no g_idx; the order they
  // were sorted in is the activations' permutation.
  CROSSPOINT_ASSIGN_OR_RETURN(W4A16PackedWeight packed,
                              w4a16_repack(qweight.data(), scales.data(), nullptr, static_cast<int>(K),
                                           static_cast<int>(N_total), static_cast<int>(G), name.c_str()));
  if (k_perm != nullptr) packed.k_perm.assign(k_perm, k_perm + K);
  CROSSPOINT_ASSIGN_OR_RETURN(
      packed.zeros, w4a16_pack_zeros(zeros.data(), static_cast<int>(groups), static_cast<int>(N_total), name.c_str()));
  return packed;
}

Result<std::vector<float>> assemble_fused_fp8_block_scales(const std::vector<LinearPart>& parts,
                                                           const std::string& name) {
  CROSSPOINT_CHECK(!parts.empty(), "assemble_fused_fp8_block_scales: no parts");
  const int64_t K = parts[0].weight->in_features();
  int64_t N_total = 0;
  for (const LinearPart& p : parts) N_total += p.weight->out_features();
  if (K % kFp8BlockGroup != 0 || N_total % 16 != 0) {
    return unsupported(name + ": block-wise FP8 on cuda needs in_features a multiple of 128 and out_features of 16 " +
                       "(cuBLASLt's block-scaled GEMM); this layer is " + std::to_string(N_total) + " x " +
                       std::to_string(K));
  }
  const int64_t row_floats = fp8_block_weight_scale_row(K), k_blocks = K / kFp8BlockGroup;
  std::vector<float> scales;
  for (size_t i = 0; i < parts.size(); ++i) {
    const LinearPart& p = parts[i];
    const int64_t N = p.weight->out_features();
    const Fp8BlockWeightStorage w = storage_of<Fp8BlockWeightStorage>(p);
    if (w.block_n != kFp8BlockGroup || w.block_k != kFp8BlockGroup) {
      return unsupported(p.prefix + ": weight blocks of " + std::to_string(w.block_n) + " x " +
                         std::to_string(w.block_k) + "; cuda runs block-wise FP8 with 128 x 128 blocks only");
    }
    if (i + 1 < parts.size() && N % kFp8BlockGroup != 0) {
      return unsupported(name + ": " + p.prefix + " has " + std::to_string(N) +
                         " outputs, not a multiple of 128: its last weight block would span two fused layers");
    }
    for (int64_t b = 0; b < (N + kFp8BlockGroup - 1) / kFp8BlockGroup; ++b) {
      scales.insert(scales.end(), w.weight_scale + b * k_blocks, w.weight_scale + (b + 1) * k_blocks);
      scales.resize(scales.size() + static_cast<size_t>(row_floats - k_blocks), 0.0f);
    }
  }
  return scales;
}

const char* cuda_linear_format_name(CudaLinearFormat format) {
  switch (format) {
    case CudaLinearFormat::kFp16: return "fp16";
    case CudaLinearFormat::kFp8: return "w8a8-fp8";
    case CudaLinearFormat::kFp8Block: return "w8a8-fp8-block";
    case CudaLinearFormat::kInt8: return "w8a8-int8";
    case CudaLinearFormat::kW4A16: return "w4a16";
  }
  return "?";
}

std::vector<uint16_t> to_element16(const void* data, DType dtype, int64_t n, DType element) {
  std::vector<uint16_t> out(static_cast<size_t>(n));
  const bool bf16 = element == DType::kBF16;
  global_thread_pool().parallel_for(
      static_cast<size_t>(n),
      [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) out[i] = element_as_16bit(data, dtype, static_cast<int64_t>(i), bf16);
      },
      1 << 16);
  return out;
}

Result<DeviceBuffer> upload_bytes(const void* host, size_t bytes, const std::string& what) {
  CROSSPOINT_ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::allocate(bytes, what));
  if (bytes > 0)
    CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemcpy(buffer.as(), host, bytes, cudaMemcpyHostToDevice), "upload");
  return buffer;
}

Result<CudaLinear> upload_fused_linear(const std::vector<LinearPart>& parts, bool with_bias, const std::string& name,
                                       DType dtype) {
  CROSSPOINT_CHECK(!parts.empty(), "upload_fused_linear: no parts");
  CudaLinear out;
  out.name = name;
  out.dtype = dtype;
  out.in_features = static_cast<int32_t>(parts[0].weight->in_features());
  const size_t family = parts[0].weight->view().storage.index();
  for (const LinearPart& p : parts) {
    if (p.weight->in_features() != out.in_features || p.weight->view().storage.index() != family)
      return unsupported(name + ": " + p.prefix + " is " + p.weight->format_name() + " but " + parts[0].prefix +
                         " is " + parts[0].weight->format_name() +
                         "; fused linears need one format and one input width");
    out.out_features += static_cast<int32_t>(p.weight->out_features());
  }
  const LinearWeightStorage& first = parts[0].weight->view().storage;
  if (dtype == DType::kBF16 && !std::holds_alternative<DenseWeightStorage>(first))
    return unsupported(name + ": " + parts[0].weight->format_name() +
                       " linears run on float16 activations on the GPU; bfloat16 serves unquantised checkpoints "
                       "(use --dtype float16)");
  if (dtype != DType::kF16 && dtype != DType::kBF16)
    return invalid_argument(name + ": activations must be float16 or bfloat16");
  if (std::holds_alternative<Fp8BlockWeightStorage>(first)) {
    out.format = CudaLinearFormat::kFp8Block;
    CROSSPOINT_RETURN_IF_ERROR(upload_fp8_block_parts(parts, out));
  } else if (std::holds_alternative<Int8WeightStorage>(first)) {
    out.format = CudaLinearFormat::kInt8;
    CROSSPOINT_RETURN_IF_ERROR(upload_int8_parts(parts, out));
  } else if (std::holds_alternative<DenseWeightStorage>(first)) {
    out.format = CudaLinearFormat::kFp16;
    CROSSPOINT_RETURN_IF_ERROR(upload_dense_parts(parts, out));
  } else if (std::holds_alternative<Fp8WeightStorage>(first)) {
    out.format = CudaLinearFormat::kFp8;
    CROSSPOINT_RETURN_IF_ERROR(upload_fp8_parts(parts, out));
  } else {
    out.format = CudaLinearFormat::kW4A16;
    CROSSPOINT_RETURN_IF_ERROR(upload_int4_parts(parts, out));
  }
  if (with_bias) {
    std::vector<uint16_t> bias;  // [N] fp16 or bf16
    for (const LinearPart& p : parts) {
      const float* b = p.weight->view().bias;
      if (b == nullptr) return not_found(p.prefix + ".bias is missing (the config says the layer has one)");
      for (int64_t n = 0; n < p.weight->out_features(); ++n)
        bias.push_back(dtype == DType::kBF16 ? f32_to_bf16(b[n]) : f32_to_f16(b[n]));
    }
    CROSSPOINT_ASSIGN_OR_RETURN(out.bias, upload_bytes(bias.data(), bias.size() * 2, name + " bias"));
  }
  return out;
}

namespace {

Status run_linear_rows(const CudaLinear& l, const CudaLinearScratch& s, const uint16_t* x, int m, uint16_t* y,
                       cudaStream_t stream) {
  const int K = l.in_features, N = l.out_features;
  switch (l.format) {
    case CudaLinearFormat::kFp16:
      return fp16_linear(*s.cublas, x, K, l.weight.as<uint16_t>(), K, y, N, m, N, K, stream, l.dtype);
    case CudaLinearFormat::kFp8:
      if (!l.input_scale.empty()) {
        CROSSPOINT_RETURN_IF_ERROR(
            fp8_quantize_static(x, K, s.xq, K, s.x_scale, l.input_scale.as<float>(), m, K, stream));
        return fp8_linear(*s.cublas, s.xq, K, s.x_scale, l.weight.as<uint8_t>(), K, l.weight_scale.as<float>(), y, N, m,
                          N, K, s.fp8_epilogue, stream);
      }
      // Small M: one fused kernel quantises x and runs the GEMV (s.xq / s.x_scale untouched).
      return fp8_linear_from_fp16(*s.cublas, x, K, s.xq, K, s.x_scale, l.weight.as<uint8_t>(), K,
                                  l.weight_scale.as<float>(), y, N, m, N, K, s.fp8_epilogue, stream);
    case CudaLinearFormat::kFp8Block:
      return fp8_block_linear_from_fp16(*s.cublas, x, s.xq, s.group_x_scale, l.weight.as<uint8_t>(),
                                        l.weight_scale.as<float>(), y, m, N, K, stream, l.weight_scale_m64.as<float>());
    case CudaLinearFormat::kInt8:
      return int8_linear_from_fp16(*s.cublas, x, K, reinterpret_cast<int8_t*>(s.xq), K, s.x_scale,
                                   l.input_scale.empty() ? nullptr : l.input_scale.as<float>(), l.weight.as<int8_t>(),
                                   K, l.weight_scale.as<float>(), y, N, m, N, K, s.int8_sums, stream);
    case CudaLinearFormat::kW4A16: {
      const uint16_t* input = x;
      if (!l.k_perm.empty()) {
        CROSSPOINT_RETURN_IF_ERROR(w4a16_permute_columns(x, l.k_perm.as<int32_t>(), s.x_perm, m, K, stream));
        input = s.x_perm;
      }
      const uint32_t* zeros = l.zeros.empty() ? nullptr : l.zeros.as<uint32_t>();
      if (m >= kW4A16DequantMinRows && s.w4a16_weight_fp16 != nullptr) {
        CROSSPOINT_RETURN_IF_ERROR(w4a16_dequantize(l.weight.as<uint32_t>(), l.weight_scale.as<uint32_t>(), N, K,
                                                    l.group_size, s.w4a16_weight_fp16, K, stream, zeros));
        return fp16_linear(*s.cublas, input, K, s.w4a16_weight_fp16, K, y, N, m, N, K, stream);
      }
      return w4a16_gemm(input, K, l.weight.as<uint32_t>(), l.weight_scale.as<uint32_t>(), y, N, m, N, K, l.group_size,
                        stream, zeros);
    }
  }
  return internal_error(l.name + ": unknown CUDA linear format");
}

}  // namespace

Status run_cuda_linear(const CudaLinear& l, const CudaLinearScratch& s, const uint16_t* x, int m, uint16_t* y,
                       cudaStream_t stream) {
  const int64_t K = l.in_features, N = l.out_features;
  return for_each_row_slab(m, s.slab_rows, [&](int first, int rows) {
    return run_linear_rows(l, s, x + first * K, rows, y + first * N, stream);
  });
}

bool cuda_linear_takes_fp8_rows(const CudaLinear& l, const CudaLinearScratch& s, const uint16_t* x, int m) {
  // A static activation scale is applied by run_cuda_linear itself, not by a per-token producer.
  if (l.format != CudaLinearFormat::kFp8 || !l.input_scale.empty() || s.xq == nullptr || m <= 0) return false;
  const int64_t K = l.in_features;
  const int rows = s.slab_rows > 0 ? s.slab_rows : m;  // what each launch of run_cuda_linear sees
  return !fp8_linear_fuses_quantisation(x, K, K, rows, static_cast<int>(K));
}

Status run_cuda_linear_fp8(const CudaLinear& l, const CudaLinearScratch& s, int m, uint16_t* y, cudaStream_t stream) {
  if (l.format != CudaLinearFormat::kFp8 || s.xq == nullptr || s.x_scale == nullptr)
    return internal_error(l.name + ": run_cuda_linear_fp8 on a linear without fp8 scratch");
  const int64_t K = l.in_features, N = l.out_features;
  return for_each_row_slab(m, s.slab_rows, [&](int first, int rows) {
    return fp8_linear(*s.cublas, s.xq + first * K, K, s.x_scale + first, l.weight.as<uint8_t>(), K,
                      l.weight_scale.as<float>(), y + first * N, N, rows, static_cast<int>(N), static_cast<int>(K),
                      s.fp8_epilogue, stream);
  });
}

}  // namespace crosspoint::cuda
