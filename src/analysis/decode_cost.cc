#include "analysis/decode_cost.h"

#include <fmt/format.h>

namespace crosspoint::analysis {

DecodeCost decode_cost_from_shape(const ModelShape& shape, Precision precision, double kv_bytes_per_element,
                                  int64_t group_size) {
  const int64_t d = shape.hidden_size;
  const int64_t q_dim = shape.num_attention_heads * shape.head_dim;
  const int64_t kv_dim = shape.num_kv_heads * shape.head_dim;
  const int64_t ffn = shape.intermediate_size;
  // Per layer: q, k, v, o, gate, up, down as [num_out, num_in].
  const double layer_bytes =
      linear_weight_bytes(precision, q_dim, d, group_size) + 2 * linear_weight_bytes(precision, kv_dim, d, group_size) +
      linear_weight_bytes(precision, d, q_dim, group_size) + 2 * linear_weight_bytes(precision, ffn, d, group_size) +
      linear_weight_bytes(precision, d, ffn, group_size);
  const Precision head_precision = precision == Precision::kFp32 ? Precision::kFp32 : Precision::kFp16;
  DecodeCost cost;
  cost.weight_bytes_per_step =
      static_cast<double>(shape.num_layers) * layer_bytes + linear_weight_bytes(head_precision, shape.vocab_size, d);
  cost.flops_per_token = 2.0 * static_cast<double>(shape.linear_params() + shape.head_params());
  cost.kv_bytes_per_context_token = static_cast<double>(shape.kv_elements_per_token()) * kv_bytes_per_element;
  cost.attention_flops_per_context_token = static_cast<double>(shape.attention_flops_per_context_token());
  cost.description =
      fmt::format("from model shapes: {:.3f} G linear params at {}, lm_head {:.3f} G at {}, embedding gathered",
                  static_cast<double>(shape.linear_params()) / 1e9, precision_name(precision),
                  static_cast<double>(shape.head_params()) / 1e9, precision_name(head_precision));
  return cost;
}

DecodeCost split_decode_cost(const DecodeCost& cost, const ModelShape* shape, int n) {
  if (n <= 1) return cost;
  DecodeCost rank = cost;
  rank.tensor_parallel_size = n;
  rank.weight_bytes_per_step = cost.weight_bytes_per_step / n;
  rank.flops_per_token = cost.flops_per_token / n;
  rank.attention_flops_per_context_token = cost.attention_flops_per_context_token / n;
  double kv_share = 1.0 / n;
  if (shape != nullptr && shape->num_kv_heads > 0 && n > shape->num_kv_heads)
    kv_share = 1.0 / static_cast<double>(shape->num_kv_heads);  // each rank holds one whole KV head
  rank.kv_bytes_per_context_token = cost.kv_bytes_per_context_token * kv_share;
  if (shape != nullptr) {
    const double ring = 2.0 * (n - 1) / n;
    // Plus the logits gather: each rank sends (n - 1) / n of a vocab-wide fp16 row in a ring.
    rank.all_reduce_bytes_per_token =
        2.0 * static_cast<double>(shape->num_layers) * static_cast<double>(shape->hidden_size) * 2.0 * ring +
        static_cast<double>(shape->vocab_size) * 2.0 * (n - 1) / n;
  }
  rank.description = fmt::format("{}; one of {} ranks' share", cost.description, n);
  return rank;
}

DecodeCost decode_cost_from_params(double num_params, Precision precision, double weight_bytes_override) {
  DecodeCost cost;
  cost.flops_per_token = 2.0 * num_params;
  if (weight_bytes_override > 0) {
    cost.weight_bytes_per_step = weight_bytes_override;
    cost.description =
        fmt::format("{:.3f} G params, {:.2f} GB of weights as loaded", num_params / 1e9, weight_bytes_override / 1e9);
  } else {
    cost.weight_bytes_per_step = num_params * bytes_per_weight(precision);
    cost.description = fmt::format("{:.3f} G params at {} ({:.3f} bytes each)", num_params / 1e9,
                                   precision_name(precision), bytes_per_weight(precision));
  }
  return cost;
}

}  // namespace crosspoint::analysis
