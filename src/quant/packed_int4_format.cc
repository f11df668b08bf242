#include "quant/packed_int4_format.h"

#include <cstring>

#include "common/dtype.h"
#include "common/thread_pool.h"
#include "kernels/weight_dtype.h"
#include "quant/gptq_linear_weight.h"
#include "quant/quant_config.h"
#include "quant/tensor_checks.h"

namespace crosspoint {
namespace {

uint32_t word_at(const TensorInfo& tensor, int64_t index) {
  uint32_t word;
  std::memcpy(&word, tensor.data + index * sizeof(word), sizeof word);
  return word;
}

// weight_shape must say [N, K]: the packed width alone cannot tell K from K rounded up to 8.
Status check_weight_shape(const SafetensorsModel& t, const std::string& name, int64_t N, int64_t K) {
  CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* shape, t.require(name));
  if ((shape->dtype != DType::kI64 && shape->dtype != DType::kI32) || shape->num_elements() != 2)
    return corrupt(shape->file + ": tensor " + name + " has dtype " + std::string(dtype_name(shape->dtype)) +
                   " and shape " + shape_string(shape->shape) + ", expected 2 integers");
  int64_t dims[2];
  for (int i = 0; i < 2; ++i) {
    if (shape->dtype == DType::kI64) {
      std::memcpy(&dims[i], shape->data + i * 8, 8);
    } else {
      int32_t d;
      std::memcpy(&d, shape->data + i * 4, 4);
      dims[i] = d;
    }
  }
  if (dims[0] != N || dims[1] != K)
    return corrupt(shape->file + ": tensor " + name + " says [" + std::to_string(dims[0]) + ", " +
                   std::to_string(dims[1]) + "] but config.json implies [" + std::to_string(N) + ", " +
                   std::to_string(K) + "]");
  return Status::ok();
}

Result<std::unique_ptr<LinearWeight>> load_packed(const LinearWeightRequest& r, const GptqConfig& c) {
  const SafetensorsModel& t = *r.tensors;
  const int64_t K = r.in_features, N = r.out_features;
  const std::string packed_name = r.prefix + ".weight_packed";
  if (K % 8 != 0 || N % 8 != 0)
    return unsupported(packed_name + ": in_features " + std::to_string(K) + " and out_features " + std::to_string(N) +
                       " must be multiples of 8 for int4 packing");
  const int64_t G = c.group_size == -1 ? K : c.group_size;
  if (K % G != 0)
    return unsupported(packed_name + ": group_size " + std::to_string(G) + " does not divide in_features " +
                       std::to_string(K));
  const int64_t groups = K / G;
  CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* packed, require_tensor(t, packed_name, DType::kI32, {N, K / 8}));
  CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* scales,
                              require_float_tensor(t, r.prefix + ".weight_scale", {N, groups}));
  CROSSPOINT_RETURN_IF_ERROR(check_weight_shape(t, r.prefix + ".weight_shape", N, K));
  const TensorInfo* zero_points = nullptr;
  if (!c.sym) {
    CROSSPOINT_ASSIGN_OR_RETURN(zero_points,
                                require_tensor(t, r.prefix + ".weight_zero_point", DType::kI32, {N / 8, groups}));
  }

  GptqLinearWeight::Parts parts;
  parts.in_features = K;
  parts.out_features = N;
  parts.group_size = G;
  // [N, K/8] words -> [K/8, N]: both layouts hold eight consecutive input rows per word, low
  // nibble first, as unsigned codes (value + 8), so the repack is a transpose of words.
  parts.owned_qweight.resize(static_cast<size_t>(K / 8 * N));
  global_thread_pool().parallel_for(
      static_cast<size_t>(N),
      [&](size_t begin, size_t end) {
        for (size_t n = begin; n < end; ++n)
          for (int64_t kw = 0; kw < K / 8; ++kw)
            parts.owned_qweight[kw * N + n] = static_cast<int32_t>(word_at(*packed, n * (K / 8) + kw));
      },
      64);
  parts.qweight = parts.owned_qweight.data();
  parts.scales.resize(static_cast<size_t>(groups * N));
  parts.zeros.assign(static_cast<size_t>(groups * N), 8);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t g = 0; g < groups; ++g) {
      parts.scales[g * N + n] = f32_to_f16(load_weight(scales->data, scales->dtype, n * groups + g));
      if (zero_points != nullptr)
        parts.zeros[g * N + n] =
            static_cast<uint8_t>((word_at(*zero_points, (n / 8) * groups + g) >> (4 * (n % 8))) & 0xFu);
    }
  }
  CROSSPOINT_RETURN_IF_ERROR(sort_rows_by_g_idx(t, r.prefix + ".weight_g_idx", parts));
  CROSSPOINT_ASSIGN_OR_RETURN(parts.bias, load_bias(r));
  return std::unique_ptr<LinearWeight>(new GptqLinearWeight(std::move(parts)));
}

class PackedInt4Format final : public LinearWeightFormat {
 public:
  std::string name() const override { return "w4a16-pack-quantized"; }
  bool matches(const ModelConfig& config) const override {
    return quant_method_of(config.quantization_config_json) == "compressed-tensors" &&
           compressed_tensors_format_of(config.quantization_config_json) == "pack-quantized";
  }
  Result<std::unique_ptr<LinearWeight>> load(const LinearWeightRequest& r) const override {
    CROSSPOINT_ASSIGN_OR_RETURN(QuantConfig q, parse_quant_config(r.config->quantization_config_json));
    const bool head_is_packed = r.tensors->find(r.prefix + ".weight_packed") != nullptr;
    if (r.is_lm_head && head_is_packed)
      return unsupported(r.prefix +
                         ".weight_packed: a quantised lm_head is not supported (llm-compressor keeps it "
                         "dense with ignore: [\"lm_head\"])");
    if (r.is_lm_head || q.is_ignored(r.prefix)) return load_dense_linear_weight(r);
    return load_packed(r, q.gptq);
  }
};

}  // namespace

std::shared_ptr<const LinearWeightFormat> packed_int4_linear_weight_format() {
  static const auto format = std::make_shared<const PackedInt4Format>();
  return format;
}

}  // namespace crosspoint
