// GGUF (llama / qwen2 architectures) -> Hugging Face directory: config.json,
// generation_config.json and an fp16 model.safetensors with HF tensor names and PyTorch
// shapes. The tokenizer files are written by the tokenizer library
// (tokenizer/hf_tokenizer_writer.h); `crosspoint convert` calls both.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "formats/gguf.h"

namespace crosspoint {

struct GgufConversionSummary {
  std::string architecture_name;  // "LlamaForCausalLM" / "Qwen2ForCausalLM"
  size_t num_tensors = 0;         // tensors written to model.safetensors
  uint64_t num_bytes = 0;         // bytes of tensor data written (fp16)
  double seconds = 0;             // wall time of the whole conversion
};

// The config.json object (pretty-printed JSON text) that describes the GGUF's model:
// every size from the `{arch}.*` keys, vocab_size from token_embd, tie_word_embeddings
// when there is no output.weight, bos/eos from the tokenizer keys, torch_dtype float16.
// Unsupported: other architectures, RoPE scaling, partial rotary dimensions.
Result<std::string> hf_config_json_from_gguf(const GgufFile& gguf);

// The HF name of a GGUF tensor ("blk.3.attn_q.weight" -> "model.layers.3.self_attn.q_proj.weight"),
// or an empty string for a tensor crosspoint does not map.
std::string hf_tensor_name(const std::string& gguf_name);

// llama.cpp's HF->GGUF converter reorders the rows of q_proj and k_proj (weights and
// biases) of `llama` models so that each head's rotary pairs are adjacent: HF row
// h*D + j*(D/2) + i is stored at GGUF row h*D + 2*i + j (D = head_dim, j in {0,1},
// i < D/2). This undoes it, giving the HF (rotate-half) order.
// in/out: [num_rows, row_elements] fp32 row-major; num_rows = num_heads * head_dim.
void unpermute_llama_rope_rows(const float* in, float* out, int64_t num_rows, int64_t row_elements, int64_t num_heads);

// Writes config.json, generation_config.json and model.safetensors into out_dir (created
// if missing; existing files of those names are replaced). Logs progress.
Status convert_gguf_to_hf(const GgufFile& gguf, const std::string& out_dir, GgufConversionSummary* summary);

}  // namespace crosspoint
