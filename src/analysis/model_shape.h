// The few numbers of a decoder-only transformer that the roofline needs, read from a
// Hugging Face config.json (Llama/Qwen2/Mistral style keys) or given directly. Kept apart from
// formats/ on purpose: analysis must also run on configs of models the engine cannot load.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace crosspoint::analysis {

struct ModelShape {
  int64_t num_layers = 0;           // num_hidden_layers, L
  int64_t hidden_size = 0;          // d
  int64_t intermediate_size = 0;    // MLP width (gate, up and down projections)
  int64_t num_attention_heads = 0;  // H
  int64_t num_kv_heads = 0;         // H_kv (GQA)
  int64_t head_dim = 0;             // D
  int64_t vocab_size = 0;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q, k, v biases (always for Qwen2, config flag for Llama)

  // Parameters of every transformer-block linear (q, k, v, o, gate, up, down), P_lin.
  int64_t linear_params() const;
  // lm_head [vocab, d], P_head; streamed every decode step even when tied to the embedding.
  int64_t head_params() const;
  // Token embedding [vocab, d]; gathered (B rows per step), not streamed.
  int64_t embedding_params() const;
  // All weights stored in the checkpoint, norms included (a tied head counted once).
  int64_t total_params() const;
  // K and V elements cached per token of context: 2 * L * H_kv * D.
  int64_t kv_elements_per_token() const;
  // Attention FLOPs per generated token per token of context: 4 * L * H * D (QK^T and PV).
  int64_t attention_flops_per_context_token() const;
};

// Parses config.json text. Missing or non-positive sizes are errors naming source and field.
Result<ModelShape> parse_model_shape(const std::string& json_text, const std::string& source_name);
// Reads a config.json file, or DIR/config.json when path is a directory.
Result<ModelShape> load_model_shape(const std::string& path);

}  // namespace crosspoint::analysis
