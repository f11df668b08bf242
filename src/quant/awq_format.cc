#include "quant/awq_format.h"

#include <cstring>

#include "common/dtype.h"
#include "common/thread_pool.h"
#include "kernels/weight_dtype.h"
#include "quant/gptq_linear_weight.h"
#include "quant/quant_config.h"
#include "quant/tensor_checks.h"

namespace crosspoint {
namespace {

// AutoAWQ packs columns 8c + {0, 2, 4, 6, 1, 3, 5, 7} into nibbles 0..7; this is the inverse.
constexpr int kAwqNibbleOfColumn[8] = {0, 4, 1, 5, 2, 6, 3, 7};

// Column n's 4-bit code in row `row` of an AWQ-packed [rows, N/8] int32 tensor.
uint32_t awq_code(const TensorInfo& tensor, int64_t row, int64_t n, int64_t N) {
  uint32_t word;
  std::memcpy(&word, tensor.data + (row * (N / 8) + n / 8) * sizeof(word), sizeof word);
  return (word >> (4 * kAwqNibbleOfColumn[n % 8])) & 0xFu;
}

Result<std::unique_ptr<LinearWeight>> load_awq(const LinearWeightRequest& r, const GptqConfig& c) {
  const SafetensorsModel& t = *r.tensors;
  const int64_t K = r.in_features, N = r.out_features;
  const std::string qweight_name = r.prefix + ".qweight";
  if (K % 8 != 0 || N % 8 != 0)
    return unsupported(qweight_name + ": in_features " + std::to_string(K) + " and out_features " + std::to_string(N) +
                       " must be multiples of 8 for int4 packing");
  const int64_t G = c.group_size == -1 ? K : c.group_size;
  if (K % G != 0)
    return unsupported(qweight_name + ": group_size " + std::to_string(G) + " does not divide in_features " +
                       std::to_string(K));
  const int64_t groups = K / G;
  CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* qweight, require_tensor(t, qweight_name, DType::kI32, {K, N / 8}));
  CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* qzeros,
                              require_tensor(t, r.prefix + ".qzeros", DType::kI32, {groups, N / 8}));
  CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* scales, require_float_tensor(t, r.prefix + ".scales", {groups, N}));

  GptqLinearWeight::Parts parts;
  parts.in_features = K;
  parts.out_features = N;
  parts.group_size = G;
  parts.owned_qweight.resize(static_cast<size_t>(K / 8 * N));
  global_thread_pool().parallel_for(
      static_cast<size_t>(K / 8),
      [&](size_t begin, size_t end) {
        for (size_t kw = begin; kw < end; ++kw)
          for (int64_t n = 0; n < N; ++n) {
            uint32_t word = 0;
            for (int j = 0; j < 8; ++j) word |= awq_code(*qweight, static_cast<int64_t>(kw) * 8 + j, n, N) << (4 * j);
            parts.owned_qweight[kw * N + n] = static_cast<int32_t>(word);
          }
      },
      16);
  parts.qweight = parts.owned_qweight.data();
  parts.scales.resize(static_cast<size_t>(groups * N));
  parts.zeros.resize(static_cast<size_t>(groups * N));
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t n = 0; n < N; ++n) {
      parts.scales[g * N + n] = scales->dtype == DType::kF16
                                    ? reinterpret_cast<const uint16_t*>(scales->data)[g * N + n]
                                    : f32_to_f16(load_weight(scales->data, scales->dtype, g * N + n));
      parts.zeros[g * N + n] = static_cast<uint8_t>(awq_code(*qzeros, g, n, N));
    }
  CROSSPOINT_ASSIGN_OR_RETURN(parts.bias, load_bias(r));
  return std::unique_ptr<LinearWeight>(new GptqLinearWeight(std::move(parts)));
}

class AwqFormat final : public LinearWeightFormat {
 public:
  std::string name() const override { return "w4a16-awq"; }
  bool matches(const ModelConfig& config) const override {
    return quant_method_of(config.quantization_config_json) == "awq";
  }
  Result<std::unique_ptr<LinearWeight>> load(const LinearWeightRequest& r) const override {
    CROSSPOINT_ASSIGN_OR_RETURN(QuantConfig q, parse_quant_config(r.config->quantization_config_json));
    // AutoAWQ never quantises the head.
    if (r.is_lm_head || q.is_ignored(r.prefix)) return load_dense_linear_weight(r);
    return load_awq(r, q.gptq);
  }
};

}  // namespace

std::shared_ptr<const LinearWeightFormat> awq_linear_weight_format() {
  static const auto format = std::make_shared<const AwqFormat>();
  return format;
}

}  // namespace crosspoint
