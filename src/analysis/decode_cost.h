// What one decode step costs a model at one precision, independent of any device: bytes
// streamed from memory and FLOPs computed. The roofline divides these by the ceilings.
#pragma once

#include <cstdint>
#include <string>

#include "analysis/model_shape.h"
#include "analysis/precision.h"

namespace crosspoint::analysis {

struct DecodeCost {
  // Weight bytes streamed once per decode step, shared by the whole batch.
  double weight_bytes_per_step = 0;
  // Weight FLOPs per generated token: 2 * (parameters the token passes through).
  double flops_per_token = 0;
  // K and V bytes read per sequence per token of context (all layers); 0 when unknown.
  double kv_bytes_per_context_token = 0;
  // Attention FLOPs per generated token per token of context; 0 when unknown.
  double attention_flops_per_context_token = 0;
  // Ranks the model is split over; the numbers above are then one rank's (split_decode_cost).
  int tensor_parallel_size = 1;
  // Bytes each rank sends per generated token in the all-reduces after o_proj and down_proj
  // (an fp16 row of d per layer and all-reduce, 2 (n - 1) / n of it in a ring) and the logits
  // gather (an fp16 row of vocab, (n - 1) / n of it); 0 at one rank.
  double all_reduce_bytes_per_token = 0;
  // How the numbers were obtained, for the report ("from config.json: ...").
  std::string description;
};

// From the model's shapes: transformer linears at `precision`, lm_head at fp16 (quantised
// checkpoints keep it unquantised), embedding gathered and not counted; KV elements of
// kv_bytes_per_element (2 for an fp16/bf16 KV cache).
DecodeCost decode_cost_from_shape(const ModelShape& shape, Precision precision, double kv_bytes_per_element = 2,
                                  int64_t group_size = 128);

// One rank's share of `cost` for a model split over n ranks as model/tensor_parallel_plan.h
// splits it: the linears, lm_head and attention's FLOPs by n, the KV cache by n (a whole KV
// head a rank past their count), plus the all-reduces' bytes. Without the shape (a parameter
// count only) everything divides by n and the all-reduce is unknown (0).
DecodeCost split_decode_cost(const DecodeCost& cost, const ModelShape* shape, int n);

// From a parameter count only: every parameter streamed at bytes_per_weight(precision) and
// 2 FLOPs per parameter per token. Coarse (it streams the embedding too), but it is what
// the study did; weight_bytes_override > 0 replaces the streamed bytes with a measured
// figure (e.g. the engine's "weights loaded" line).
DecodeCost decode_cost_from_params(double num_params, Precision precision, double weight_bytes_override = 0);

}  // namespace crosspoint::analysis
