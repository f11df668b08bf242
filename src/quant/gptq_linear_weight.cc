#include "quant/gptq_linear_weight.h"

#include <cstring>

#include "common/dtype.h"
#include "kernels/w4a16_linear.h"
#include "kernels/weight_dtype.h"
#include "quant/awq_format.h"
#include "quant/fp8_block_linear_weight.h"
#include "quant/fp8_linear_weight.h"
#include "quant/int8_linear_weight.h"
#include "quant/packed_int4_format.h"
#include "quant/quant_config.h"
#include "quant/tensor_checks.h"

namespace crosspoint {

GptqLinearWeight::GptqLinearWeight(Parts parts) : p_(std::move(parts)) {
  if (!p_.owned_qweight.empty()) p_.qweight = p_.owned_qweight.data();
  CROSSPOINT_CHECK(p_.qweight != nullptr, "GptqLinearWeight: no qweight");
}

Status GptqLinearWeight::forward(const float* x, int64_t num_rows, int64_t x_row_stride, float* y) const {
  W4A16LinearArgs args;
  args.x = x;
  args.x_row_stride = x_row_stride;
  args.qweight = p_.qweight;
  args.scales = p_.scales.data();
  args.zeros = p_.zeros.data();
  args.k_perm = p_.k_perm.empty() ? nullptr : p_.k_perm.data();
  args.bias = p_.bias.empty() ? nullptr : p_.bias.data();
  args.y = y;
  args.num_rows = num_rows;
  args.in_features = p_.in_features;
  args.out_features = p_.out_features;
  args.group_size = p_.group_size;
  return w4a16_linear(args);
}

size_t GptqLinearWeight::weight_bytes() const {
  return static_cast<size_t>(p_.in_features) * p_.out_features / 2 + p_.scales.size() * sizeof(uint16_t) +
         p_.zeros.size() + p_.k_perm.size() * sizeof(int32_t) + p_.bias.size() * sizeof(float);
}

std::string GptqLinearWeight::format_name() const {
  return "w4a16-g" + std::to_string(p_.group_size) + (p_.k_perm.empty() ? "" : "-act");
}

LinearWeightView GptqLinearWeight::view() const {
  return {Int4GroupWeightStorage{p_.qweight, p_.scales.data(), p_.zeros.data(),
                                 p_.k_perm.empty() ? nullptr : p_.k_perm.data(), p_.group_size},
          p_.bias.empty() ? nullptr : p_.bias.data()};
}

std::vector<float> GptqLinearWeight::dequantize() const {
  const int64_t K = p_.in_features, N = p_.out_features;
  std::vector<float> w(static_cast<size_t>(K * N));
  for (int64_t i = 0; i < K; ++i) {
    const int64_t k = p_.k_perm.empty() ? i : p_.k_perm[i];
    const int64_t g = i / p_.group_size;
    for (int64_t n = 0; n < N; ++n) {
      const uint32_t q = (static_cast<uint32_t>(p_.qweight[(i / 8) * N + n]) >> (4 * (i % 8))) & 0xFu;
      w[k * N + n] = f16_to_f32(p_.scales[g * N + n]) * (static_cast<float>(q) - p_.zeros[g * N + n]);
    }
  }
  return w;
}

Status sort_rows_by_g_idx(const SafetensorsModel& tensors, const std::string& g_idx_name,
                          GptqLinearWeight::Parts& parts) {
  if (tensors.find(g_idx_name) == nullptr) return Status::ok();
  const int64_t K = parts.in_features, groups = K / parts.group_size;
  CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* g_idx_tensor, require_tensor(tensors, g_idx_name, DType::kI32, {K}));
  std::vector<int32_t> g_idx(static_cast<size_t>(K));
  std::memcpy(g_idx.data(), g_idx_tensor->data, g_idx.size() * sizeof(int32_t));
  for (int64_t k = 0; k < K; ++k)
    if (g_idx[k] < 0 || g_idx[k] >= groups)
      return corrupt(g_idx_tensor->file + ": tensor " + g_idx_name + " holds group " + std::to_string(g_idx[k]) +
                     " at row " + std::to_string(k) + ", outside [0, " + std::to_string(groups) + ")");
  if (w4a16_g_idx_is_trivial(g_idx.data(), K, parts.group_size)) return Status::ok();
  CROSSPOINT_ASSIGN_OR_RETURN(
      W4A16SortedRows sorted,
      w4a16_sort_rows_by_group(parts.qweight, g_idx.data(), K, parts.out_features, parts.group_size, g_idx_name));
  parts.owned_qweight = std::move(sorted.qweight);
  parts.qweight = parts.owned_qweight.data();
  parts.k_perm = std::move(sorted.k_perm);
  return Status::ok();
}

namespace {

Result<std::unique_ptr<LinearWeight>> load_gptq(const LinearWeightRequest& r, const GptqConfig& c) {
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
  CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* qweight, require_tensor(t, qweight_name, DType::kI32, {K / 8, N}));
  CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* qzeros,
                              require_tensor(t, r.prefix + ".qzeros", DType::kI32, {groups, N / 8}));
  CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* scales, require_float_tensor(t, r.prefix + ".scales", {groups, N}));

  GptqLinearWeight::Parts parts;
  parts.in_features = K;
  parts.out_features = N;
  parts.group_size = G;
  parts.scales.resize(static_cast<size_t>(groups * N));
  for (int64_t i = 0; i < groups * N; ++i)
    parts.scales[i] = scales->dtype == DType::kF16 ? reinterpret_cast<const uint16_t*>(scales->data)[i]
                                                   : f32_to_f16(load_weight(scales->data, scales->dtype, i));
  parts.zeros.resize(static_cast<size_t>(groups * N));
  const uint8_t zero_offset = c.zero_point_minus_one ? 1 : 0;
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t n = 0; n < N; ++n) {
      int32_t word;
      std::memcpy(&word, qzeros->data + ((g * (N / 8) + n / 8) * sizeof(int32_t)), sizeof word);
      parts.zeros[g * N + n] =
          static_cast<uint8_t>(((static_cast<uint32_t>(word) >> (4 * (n % 8))) & 0xFu) + zero_offset);
    }
  }
  // qweight: zero copy when aligned; a copy otherwise (int32 reads must be aligned).
  const auto* qweight_words = reinterpret_cast<const int32_t*>(qweight->data);
  std::vector<int32_t> aligned_copy;
  if (reinterpret_cast<uintptr_t>(qweight->data) % alignof(int32_t) != 0) {
    aligned_copy.resize(static_cast<size_t>(K / 8 * N));
    std::memcpy(aligned_copy.data(), qweight->data, aligned_copy.size() * sizeof(int32_t));
    qweight_words = aligned_copy.data();
  }
  parts.qweight = qweight_words;
  CROSSPOINT_RETURN_IF_ERROR(sort_rows_by_g_idx(t, r.prefix + ".g_idx", parts));
  if (parts.owned_qweight.empty() && !aligned_copy.empty()) parts.owned_qweight = std::move(aligned_copy);
  CROSSPOINT_ASSIGN_OR_RETURN(parts.bias, load_bias(r));
  return std::unique_ptr<LinearWeight>(new GptqLinearWeight(std::move(parts)));
}

class GptqFormat final : public LinearWeightFormat {
 public:
  std::string name() const override { return "w4a16-gptq"; }
  bool matches(const ModelConfig& config) const override {
    return quant_method_of(config.quantization_config_json) == "gptq";
  }
  Result<std::unique_ptr<LinearWeight>> load(const LinearWeightRequest& r) const override {
    CROSSPOINT_ASSIGN_OR_RETURN(QuantConfig q, parse_quant_config(r.config->quantization_config_json));
    // GPTQ checkpoints keep the head (and embeddings) in fp16.
    if (r.is_lm_head) return load_dense_linear_weight(r);
    return load_gptq(r, q.gptq);
  }
};

}  // namespace

std::shared_ptr<const LinearWeightFormat> gptq_linear_weight_format() {
  static const auto format = std::make_shared<const GptqFormat>();
  return format;
}

std::vector<std::shared_ptr<const LinearWeightFormat>> quantized_linear_weight_formats() {
  return {gptq_linear_weight_format(),      packed_int4_linear_weight_format(), awq_linear_weight_format(),
          fp8_block_linear_weight_format(), int8_linear_weight_format(),        fp8_linear_weight_format()};
}

}  // namespace crosspoint
