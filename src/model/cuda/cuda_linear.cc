#include "model/cuda/cuda_linear.h"

#include <cstring>
#include <nlohmann/json.hpp>

#include "common/thread_pool.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/fp8_quant.h"
#include "kernels/cuda/linear.h"
#include "kernels/cuda/w4a16_gemm.h"
#include "kernels/weight_dtype.h"

namespace crosspoint::cuda {
namespace {

// Element i of a float tensor (f32/f16/bf16) as fp16 bits; safe on unaligned mmap data.
uint16_t element_as_fp16(const uint8_t* data, DType dtype, int64_t i) {
  if (dtype == DType::kF16) {
    uint16_t h;
    std::memcpy(&h, data + i * 2, 2);
    return h;
  }
  if (dtype == DType::kBF16) {
    uint16_t b;
    std::memcpy(&b, data + i * 2, 2);
    return f32_to_f16(bf16_to_f32(b));
  }
  float f;
  std::memcpy(&f, data + i * 4, 4);
  return f32_to_f16(f);
}

float element_as_f32(const uint8_t* data, DType dtype, int64_t i) {
  return f16_to_f32(element_as_fp16(data, dtype, i));
}

float scale_as_f32(const uint8_t* data, DType dtype, int64_t i) {
  if (dtype == DType::kF32) {
    float f;
    std::memcpy(&f, data + i * 4, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, data + i * 2, 2);
  return dtype == DType::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
}

enum class PartKind { kDense, kFp8, kGptq, kOther };

PartKind kind_of(const LinearWeight& w) {
  if (dynamic_cast<const DenseLinearWeight*>(&w) != nullptr) return PartKind::kDense;
  const std::string name = w.format_name();
  if (name == "w8a8-fp8") return PartKind::kFp8;
  if (name.rfind("w4a16", 0) == 0) return PartKind::kGptq;
  return PartKind::kOther;
}

Result<const TensorInfo*> require_dtype(const SafetensorsModel& t, const std::string& name, DType dtype,
                                        const std::vector<int64_t>& shape) {
  CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* tensor, t.require(name));
  CROSSPOINT_RETURN_IF_ERROR(check_tensor(*tensor, shape, {dtype}));
  return tensor;
}

Status upload_fp16_parts(const Model& model, const std::vector<LinearPart>& parts, CudaLinear& out) {
  const int64_t K = out.in_features;
  CROSSPOINT_ASSIGN_OR_RETURN(out.weight,
                              DeviceBuffer::allocate(static_cast<size_t>(out.out_features) * K * 2, out.name));
  size_t row = 0;
  for (const LinearPart& p : parts) {
    const int64_t N = p.weight->out_features();
    CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* w,
                                require_float_tensor(model.tensors(), p.prefix + ".weight", {N, K}));
    auto* dst = out.weight.as<uint8_t>() + row * K * 2;
    if (w->dtype == DType::kF16) {
      CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemcpy(dst, w->data, w->num_bytes, cudaMemcpyHostToDevice), "upload weight");
    } else {
      const std::vector<uint16_t> converted = tensor_to_fp16(*w);
      CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemcpy(dst, converted.data(), converted.size() * 2, cudaMemcpyHostToDevice),
                                      "upload weight");
    }
    row += static_cast<size_t>(N);
  }
  return Status::ok();
}

Status upload_fp8_parts(const Model& model, const std::vector<LinearPart>& parts, CudaLinear& out) {
  const int64_t K = out.in_features;
  const SafetensorsModel& t = model.tensors();
  CROSSPOINT_ASSIGN_OR_RETURN(out.weight, DeviceBuffer::allocate(static_cast<size_t>(out.out_features) * K, out.name));
  std::vector<float> scales;  // [N] f32
  size_t row = 0;
  for (const LinearPart& p : parts) {
    const int64_t N = p.weight->out_features();
    CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* w, require_dtype(t, p.prefix + ".weight", DType::kF8E4M3, {N, K}));
    CROSSPOINT_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(out.weight.as<uint8_t>() + row * K, w->data, w->num_bytes, cudaMemcpyHostToDevice), "upload weight");
    CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* s, t.require(p.prefix + ".weight_scale"));
    const int64_t num_scales = s->num_elements();
    if (!is_float_weight_dtype(s->dtype) || (num_scales != N && num_scales != 1))
      return corrupt(s->file + ": tensor " + s->name + " is not a float per-channel or per-tensor scale");
    for (int64_t n = 0; n < N; ++n) scales.push_back(scale_as_f32(s->data, s->dtype, num_scales == 1 ? 0 : n));
    row += static_cast<size_t>(N);
  }
  CROSSPOINT_ASSIGN_OR_RETURN(out.weight_scale, upload_bytes(scales.data(), scales.size() * 4, out.name + " scales"));
  return Status::ok();
}

// The stored qzeros nibble that means zero point 8: v1 ("gptq") stores z - 1.
Result<uint32_t> gptq_stored_zero(const Model& model) {
  const auto q = nlohmann::json::parse(model.config().quantization_config_json, nullptr, false);
  std::string format = "gptq";
  if (q.is_object() && q.contains("checkpoint_format") && q["checkpoint_format"].is_string())
    format = q["checkpoint_format"].get<std::string>();
  if (format == "gptq") return 7u;
  if (format == "gptq_v2") return 8u;
  return unsupported("config.json: quantization_config.checkpoint_format '" + format + "' is not gptq or gptq_v2");
}

Status upload_gptq_parts(const Model& model, const std::vector<LinearPart>& parts, CudaLinear& out) {
  CROSSPOINT_ASSIGN_OR_RETURN(W4A16PackedWeight packed, assemble_fused_gptq(model, parts, out.name));
  out.group_size = packed.group_size;
  CROSSPOINT_ASSIGN_OR_RETURN(out.weight, upload_bytes(packed.weight.data(), packed.weight.size() * 4, out.name));
  CROSSPOINT_ASSIGN_OR_RETURN(out.weight_scale,
                              upload_bytes(packed.scales.data(), packed.scales.size() * 4, out.name + " scales"));
  if (!packed.k_perm.empty()) {
    CROSSPOINT_ASSIGN_OR_RETURN(out.k_perm,
                                upload_bytes(packed.k_perm.data(), packed.k_perm.size() * 4, out.name + " k_perm"));
  }
  return Status::ok();
}

}  // namespace

Result<W4A16PackedWeight> assemble_fused_gptq(const Model& model, const std::vector<LinearPart>& parts,
                                              const std::string& name) {
  CROSSPOINT_CHECK(!parts.empty(), "assemble_fused_gptq: no parts");
  const int64_t K = parts[0].weight->in_features();
  int64_t N_total = 0;
  for (const LinearPart& p : parts) N_total += p.weight->out_features();
  const SafetensorsModel& t = model.tensors();
  CROSSPOINT_ASSIGN_OR_RETURN(const uint32_t stored_zero, gptq_stored_zero(model));
  std::vector<int32_t> qweight(static_cast<size_t>(K / 8) * N_total);  // [K/8, N_total]
  std::vector<uint16_t> scales;                                        // [groups, N_total] fp16
  std::vector<int32_t> g_idx;                                          // [K] or empty
  int64_t groups = -1;
  int64_t col = 0;
  for (const LinearPart& p : parts) {
    const int64_t N = p.weight->out_features();
    CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* qw, require_dtype(t, p.prefix + ".qweight", DType::kI32, {K / 8, N}));
    CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* sc, t.require(p.prefix + ".scales"));
    if (sc->shape.size() != 2 || sc->shape[1] != N || (groups >= 0 && sc->shape[0] != groups) ||
        !is_float_weight_dtype(sc->dtype))
      return corrupt(sc->file + ": tensor " + sc->name + " is not a float [groups, " + std::to_string(N) +
                     "] scale with the same groups as the other fused parts");
    groups = sc->shape[0];
    CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* qz,
                                require_dtype(t, p.prefix + ".qzeros", DType::kI32, {groups, N / 8}));
    for (int64_t i = 0; i < groups * (N / 8); ++i) {
      uint32_t word;
      std::memcpy(&word, qz->data + i * 4, 4);
      for (int j = 0; j < 8; ++j)
        if (((word >> (4 * j)) & 0xFu) != stored_zero)
          return unsupported(qz->file + ": tensor " + qz->name + " holds a zero point other than 8: the CUDA W4A16 " +
                             "kernel supports symmetric GPTQ only");
    }
    for (int64_t r = 0; r < K / 8; ++r)
      std::memcpy(qweight.data() + r * N_total + col, qw->data + (r * N) * 4, static_cast<size_t>(N) * 4);
    scales.resize(static_cast<size_t>(groups) * N_total);
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t n = 0; n < N; ++n) scales[g * N_total + col + n] = element_as_fp16(sc->data, sc->dtype, g * N + n);
    std::vector<int32_t> part_g_idx;
    if (const TensorInfo* gi = t.find(p.prefix + ".g_idx")) {
      CROSSPOINT_ASSIGN_OR_RETURN(gi, require_dtype(t, p.prefix + ".g_idx", DType::kI32, {K}));
      part_g_idx.resize(static_cast<size_t>(K));
      std::memcpy(part_g_idx.data(), gi->data, static_cast<size_t>(K) * 4);
    }
    if (col == 0) g_idx = part_g_idx;
    else if (part_g_idx != g_idx)
      return unsupported(p.prefix + ".g_idx differs from " + parts[0].prefix +
                         ".g_idx: fused linears with different act-order permutations are not supported on cuda");
    col += N;
  }
  const int group_size = groups == 1 ? -1 : static_cast<int>(K / groups);
  return w4a16_repack(qweight.data(), scales.data(), g_idx.empty() ? nullptr : g_idx.data(), static_cast<int>(K),
                      static_cast<int>(N_total), group_size, name.c_str());
}

const char* cuda_linear_format_name(CudaLinearFormat format) {
  switch (format) {
    case CudaLinearFormat::kFp16: return "fp16";
    case CudaLinearFormat::kFp8: return "w8a8-fp8";
    case CudaLinearFormat::kW4A16: return "w4a16";
  }
  return "?";
}

std::vector<uint16_t> tensor_to_fp16(const TensorInfo& tensor) {
  const int64_t n = tensor.num_elements();
  std::vector<uint16_t> out(static_cast<size_t>(n));
  global_thread_pool().parallel_for(
      static_cast<size_t>(n),
      [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i)
          out[i] = element_as_fp16(tensor.data, tensor.dtype, static_cast<int64_t>(i));
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

Result<CudaLinear> upload_fused_linear(const Model& model, const std::vector<LinearPart>& parts, bool with_bias,
                                       const std::string& name) {
  CROSSPOINT_CHECK(!parts.empty(), "upload_fused_linear: no parts");
  CudaLinear out;
  out.name = name;
  out.in_features = static_cast<int32_t>(parts[0].weight->in_features());
  const PartKind kind = kind_of(*parts[0].weight);
  for (const LinearPart& p : parts) {
    if (p.weight->in_features() != out.in_features || kind_of(*p.weight) != kind)
      return unsupported(name + ": " + p.prefix + " is " + p.weight->format_name() + " but " + parts[0].prefix +
                         " is " + parts[0].weight->format_name() +
                         "; fused linears need one format and one input width");
    out.out_features += static_cast<int32_t>(p.weight->out_features());
  }
  switch (kind) {
    case PartKind::kDense:
      out.format = CudaLinearFormat::kFp16;
      CROSSPOINT_RETURN_IF_ERROR(upload_fp16_parts(model, parts, out));
      break;
    case PartKind::kFp8:
      out.format = CudaLinearFormat::kFp8;
      CROSSPOINT_RETURN_IF_ERROR(upload_fp8_parts(model, parts, out));
      break;
    case PartKind::kGptq:
      out.format = CudaLinearFormat::kW4A16;
      CROSSPOINT_RETURN_IF_ERROR(upload_gptq_parts(model, parts, out));
      break;
    case PartKind::kOther:
      return unsupported(parts[0].prefix + ": weight format " + parts[0].weight->format_name() +
                         " has no CUDA implementation");
  }
  if (with_bias) {
    std::vector<uint16_t> bias;  // [N] fp16
    for (const LinearPart& p : parts) {
      const int64_t N = p.weight->out_features();
      CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* b, require_float_tensor(model.tensors(), p.prefix + ".bias", {N}));
      for (int64_t n = 0; n < N; ++n) bias.push_back(f32_to_f16(element_as_f32(b->data, b->dtype, n)));
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
      return fp16_linear(*s.cublas, x, K, l.weight.as<uint16_t>(), K, y, N, m, N, K, stream);
    case CudaLinearFormat::kFp8:
      // Small M: one fused kernel quantises x and runs the GEMV (s.xq / s.x_scale untouched).
      return fp8_linear_from_fp16(*s.cublas, x, K, s.xq, K, s.x_scale, l.weight.as<uint8_t>(), K,
                                  l.weight_scale.as<float>(), y, N, m, N, K, s.fp8_epilogue, stream);
    case CudaLinearFormat::kW4A16: {
      const uint16_t* input = x;
      if (!l.k_perm.empty()) {
        CROSSPOINT_RETURN_IF_ERROR(w4a16_permute_columns(x, l.k_perm.as<int32_t>(), s.x_perm, m, K, stream));
        input = s.x_perm;
      }
      return w4a16_gemm(input, K, l.weight.as<uint32_t>(), l.weight_scale.as<uint32_t>(), y, N, m, N, K, l.group_size,
                        s.w4a16_workspace, stream);
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

}  // namespace crosspoint::cuda
