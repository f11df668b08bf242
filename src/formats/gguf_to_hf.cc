// GGUF -> Hugging Face conversion of llama and qwen2 models (see gguf_to_hf.h).
#include "formats/gguf_to_hf.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>

#include "common/dtype.h"
#include "common/log.h"
#include "common/progress_bar.h"
#include "formats/safetensors.h"

namespace crosspoint {

namespace {

// The model hyper-parameters read from GGUF metadata.
struct GgufModelParams {
  std::string gguf_architecture;  // "llama" / "qwen2"
  std::string hf_architecture;    // "LlamaForCausalLM" / "Qwen2ForCausalLM"
  std::string model_type;         // "llama" / "qwen2"
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t vocab_size = 0;
  int64_t context_length = 0;
  double rms_norm_eps = 0;
  double rope_theta = 10000.0;
  bool tie_word_embeddings = false;
  bool attention_bias = false;
  std::optional<int64_t> bos_token_id;
  std::optional<int64_t> eos_token_id;
};

// GGUF stores these as f32; print the shortest decimal that round-trips the f32 (1e-05,
// not 9.999999747378752e-06) as the HF config does.
double shortest_f32(double value) { return std::stod(fmt::format("{}", static_cast<float>(value))); }

Result<int64_t> positive_key(const GgufFile& gguf, const std::string& key) {
  CROSSPOINT_ASSIGN_OR_RETURN(int64_t value, gguf.get_int(key));
  if (value <= 0)
    return invalid_argument(gguf.path() + ": metadata key '" + key + "' must be positive, got " +
                            std::to_string(value));
  return value;
}

Result<GgufModelParams> read_params(const GgufFile& gguf) {
  GgufModelParams p;
  CROSSPOINT_ASSIGN_OR_RETURN(p.gguf_architecture, gguf.get_string("general.architecture"));
  if (p.gguf_architecture == "llama") {
    p.hf_architecture = "LlamaForCausalLM";
  } else if (p.gguf_architecture == "qwen2") {
    p.hf_architecture = "Qwen2ForCausalLM";
  } else {
    return unsupported(gguf.path() + ": general.architecture \"" + p.gguf_architecture +
                       "\" is not supported (convert reads llama and qwen2)");
  }
  p.model_type = p.gguf_architecture;
  const std::string a = p.gguf_architecture + ".";
  CROSSPOINT_ASSIGN_OR_RETURN(p.hidden_size, positive_key(gguf, a + "embedding_length"));
  CROSSPOINT_ASSIGN_OR_RETURN(p.intermediate_size, positive_key(gguf, a + "feed_forward_length"));
  CROSSPOINT_ASSIGN_OR_RETURN(p.num_layers, positive_key(gguf, a + "block_count"));
  CROSSPOINT_ASSIGN_OR_RETURN(p.num_heads, positive_key(gguf, a + "attention.head_count"));
  CROSSPOINT_ASSIGN_OR_RETURN(p.context_length, positive_key(gguf, a + "context_length"));
  p.num_kv_heads = p.num_heads;
  if (gguf.has(a + "attention.head_count_kv")) {
    CROSSPOINT_ASSIGN_OR_RETURN(p.num_kv_heads, positive_key(gguf, a + "attention.head_count_kv"));
  }
  if (p.num_heads % p.num_kv_heads != 0) {
    return invalid_argument(gguf.path() + ": " + a + "attention.head_count_kv " + std::to_string(p.num_kv_heads) +
                            " does not divide head_count " + std::to_string(p.num_heads));
  }
  if (gguf.has(a + "attention.key_length")) {
    CROSSPOINT_ASSIGN_OR_RETURN(p.head_dim, positive_key(gguf, a + "attention.key_length"));
  } else {
    if (p.hidden_size % p.num_heads != 0) {
      return invalid_argument(gguf.path() + ": " + a + "attention.head_count does not divide embedding_length");
    }
    p.head_dim = p.hidden_size / p.num_heads;
  }
  if (gguf.has(a + "rope.dimension_count")) {
    CROSSPOINT_ASSIGN_OR_RETURN(int64_t rope_dims, positive_key(gguf, a + "rope.dimension_count"));
    if (rope_dims != p.head_dim) {
      return unsupported(gguf.path() + ": " + a + "rope.dimension_count " + std::to_string(rope_dims) +
                         " != head_dim " + std::to_string(p.head_dim) + " (partial rotary is not implemented)");
    }
  }
  if (gguf.has(a + "rope.scaling.type")) {
    CROSSPOINT_ASSIGN_OR_RETURN(std::string scaling, gguf.get_string(a + "rope.scaling.type"));
    if (scaling != "none") {
      return unsupported(gguf.path() + ": " + a + "rope.scaling.type \"" + scaling + "\" is not implemented");
    }
  }
  if (gguf.find_tensor("rope_freqs.weight") != nullptr) {
    return unsupported(gguf.path() + ": tensor 'rope_freqs.weight' (llama3 RoPE scaling) is not implemented");
  }
  CROSSPOINT_ASSIGN_OR_RETURN(p.rms_norm_eps, gguf.get_float(a + "attention.layer_norm_rms_epsilon"));
  if (!(p.rms_norm_eps > 0))
    return invalid_argument(gguf.path() + ": " + a + "attention.layer_norm_rms_epsilon must be positive");
  p.rms_norm_eps = shortest_f32(p.rms_norm_eps);
  if (gguf.has(a + "rope.freq_base")) {
    CROSSPOINT_ASSIGN_OR_RETURN(p.rope_theta, gguf.get_float(a + "rope.freq_base"));
    if (!(p.rope_theta > 0)) return invalid_argument(gguf.path() + ": " + a + "rope.freq_base must be positive");
    p.rope_theta = shortest_f32(p.rope_theta);
  }
  const GgufTensor* embed = gguf.find_tensor("token_embd.weight");
  if (embed == nullptr) return not_found(gguf.path() + ": tensor 'token_embd.weight' is missing");
  if (embed->dims.size() != 2) return corrupt(gguf.path() + ": tensor 'token_embd.weight' is not 2-D");
  p.vocab_size = static_cast<int64_t>(embed->dims[1]);
  p.tie_word_embeddings = gguf.find_tensor("output.weight") == nullptr;
  p.attention_bias = p.gguf_architecture == "qwen2" || gguf.find_tensor("blk.0.attn_q.bias") != nullptr;
  for (auto [key, field] : {std::pair{"tokenizer.ggml.bos_token_id", &p.bos_token_id},
                            std::pair{"tokenizer.ggml.eos_token_id", &p.eos_token_id}}) {
    if (gguf.has(key)) {
      CROSSPOINT_ASSIGN_OR_RETURN(int64_t id, gguf.get_int(key));
      *field = id;
    }
  }
  return p;
}

nlohmann::ordered_json config_json(const GgufModelParams& p) {
  nlohmann::ordered_json c;
  c["architectures"] = {p.hf_architecture};
  c["model_type"] = p.model_type;
  c["hidden_size"] = p.hidden_size;
  c["intermediate_size"] = p.intermediate_size;
  c["num_hidden_layers"] = p.num_layers;
  c["num_attention_heads"] = p.num_heads;
  c["num_key_value_heads"] = p.num_kv_heads;
  c["head_dim"] = p.head_dim;
  c["vocab_size"] = p.vocab_size;
  c["max_position_embeddings"] = p.context_length;
  c["rms_norm_eps"] = p.rms_norm_eps;
  c["rope_theta"] = p.rope_theta;
  c["rope_scaling"] = nullptr;
  c["hidden_act"] = "silu";
  c["tie_word_embeddings"] = p.tie_word_embeddings;
  if (p.model_type == "llama") {
    c["attention_bias"] = p.attention_bias;
    c["mlp_bias"] = false;
  } else {
    c["use_sliding_window"] = false;
  }
  if (p.bos_token_id) c["bos_token_id"] = *p.bos_token_id;
  if (p.eos_token_id) c["eos_token_id"] = *p.eos_token_id;
  c["torch_dtype"] = "float16";
  c["use_cache"] = true;
  return c;
}

// Splits "<prefix><digits>.<rest>" into the layer index text and rest; false otherwise.
bool split_layer_name(const std::string& name, const std::string& prefix, std::string* layer, std::string* rest) {
  if (name.compare(0, prefix.size(), prefix) != 0) return false;
  const size_t dot = name.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size()) return false;
  for (size_t i = prefix.size(); i < dot; ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
  }
  *layer = name.substr(prefix.size(), dot - prefix.size());
  *rest = name.substr(dot + 1);
  return true;
}

// PyTorch shape each HF tensor must have, from the config; empty when the name is unknown.
std::vector<int64_t> expected_shape(const GgufModelParams& p, const std::string& hf_name) {
  const int64_t d = p.hidden_size, q_rows = p.num_heads * p.head_dim, kv_rows = p.num_kv_heads * p.head_dim;
  const int64_t ff = p.intermediate_size, v = p.vocab_size;
  if (hf_name == "model.embed_tokens.weight" || hf_name == "lm_head.weight") return {v, d};
  if (hf_name == "model.norm.weight") return {d};
  std::string layer, part;
  if (!split_layer_name(hf_name, "model.layers.", &layer, &part)) return {};
  if (part == "input_layernorm.weight" || part == "post_attention_layernorm.weight") return {d};
  if (part == "self_attn.q_proj.weight") return {q_rows, d};
  if (part == "self_attn.k_proj.weight" || part == "self_attn.v_proj.weight") return {kv_rows, d};
  if (part == "self_attn.q_proj.bias") return {q_rows};
  if (part == "self_attn.k_proj.bias" || part == "self_attn.v_proj.bias") return {kv_rows};
  if (part == "self_attn.o_proj.weight") return {d, q_rows};
  if (part == "mlp.gate_proj.weight" || part == "mlp.up_proj.weight") return {ff, d};
  if (part == "mlp.down_proj.weight") return {d, ff};
  return {};
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

Status write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return io_error(path + ": write failed");
  return Status::ok();
}

// Every tensor the model needs must be present (the model loader checks again, but a
// converted directory missing a tensor should fail here, naming the GGUF).
Status check_required_tensors(const GgufFile& gguf, const GgufModelParams& p) {
  std::vector<std::string> required = {"token_embd.weight", "output_norm.weight"};
  for (int64_t layer = 0; layer < p.num_layers; ++layer) {
    for (const char* part :
         {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"}) {
      required.push_back(fmt::format("blk.{}.{}.weight", layer, part));
    }
    if (p.gguf_architecture == "qwen2") {
      for (const char* part : {"attn_q", "attn_k", "attn_v"})
        required.push_back(fmt::format("blk.{}.{}.bias", layer, part));
    }
  }
  for (const std::string& name : required) {
    if (gguf.find_tensor(name) == nullptr) return not_found(gguf.path() + ": tensor '" + name + "' is missing");
  }
  return Status::ok();
}

// One GGUF tensor -> fp16 bytes in HF order.
Result<TensorToWrite> convert_tensor(const GgufFile& gguf, const GgufModelParams& p, const GgufTensor& tensor,
                                     const std::string& hf_name) {
  const std::string where = gguf.path() + ": tensor '" + tensor.name + "'";
  TensorToWrite out;
  out.name = hf_name;
  out.dtype = DType::kF16;
  out.shape = tensor.shape();
  const std::vector<int64_t> want = expected_shape(p, hf_name);
  if (out.shape != want) {
    return corrupt(where + ": shape " + shape_text(out.shape) + " contradicts the metadata, which implies " +
                   shape_text(want) + " for " + hf_name);
  }
  auto values_or = gguf_dequantize(tensor);
  if (!values_or.is_ok()) return corrupt(gguf.path() + ": " + values_or.status().message());
  std::vector<float> values = std::move(values_or).value();  // [shape] fp32, row-major
  const bool is_q = hf_name.find("self_attn.q_proj.") != std::string::npos;
  const bool is_k = hf_name.find("self_attn.k_proj.") != std::string::npos;
  if (p.gguf_architecture == "llama" && (is_q || is_k)) {
    std::vector<float> unpermuted(values.size());
    const int64_t num_rows = out.shape[0];
    const int64_t row_elements = out.shape.size() == 2 ? out.shape[1] : 1;
    unpermute_llama_rope_rows(values.data(), unpermuted.data(), num_rows, row_elements,
                              is_q ? p.num_heads : p.num_kv_heads);
    values.swap(unpermuted);
  }
  out.bytes.resize(values.size() * 2);
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isfinite(values[i]) && std::fabs(values[i]) > 65504.0f) {
      return unsupported(where + ": value " + fmt::format("{}", values[i]) + " at element " + std::to_string(i) +
                         " does not fit in fp16");
    }
    const uint16_t h = f32_to_f16(values[i]);
    std::memcpy(out.bytes.data() + 2 * i, &h, 2);
  }
  return out;
}

}  // namespace

std::string hf_tensor_name(const std::string& gguf_name) {
  if (gguf_name == "token_embd.weight") return "model.embed_tokens.weight";
  if (gguf_name == "output_norm.weight") return "model.norm.weight";
  if (gguf_name == "output.weight") return "lm_head.weight";
  std::string layer, rest;
  if (!split_layer_name(gguf_name, "blk.", &layer, &rest)) return "";
  const size_t dot = rest.rfind('.');
  if (dot == std::string::npos) return "";
  const std::string part = rest.substr(0, dot), kind = rest.substr(dot + 1);
  if (kind != "weight" && kind != "bias") return "";
  static const std::pair<const char*, const char*> kParts[] = {
      {"attn_norm", "input_layernorm"}, {"attn_q", "self_attn.q_proj"},      {"attn_k", "self_attn.k_proj"},
      {"attn_v", "self_attn.v_proj"},   {"attn_output", "self_attn.o_proj"}, {"ffn_norm", "post_attention_layernorm"},
      {"ffn_gate", "mlp.gate_proj"},    {"ffn_up", "mlp.up_proj"},           {"ffn_down", "mlp.down_proj"},
  };
  for (const auto& [gguf_part, hf_part] : kParts) {
    if (part == gguf_part) return "model.layers." + layer + "." + hf_part + "." + kind;
  }
  return "";
}

void unpermute_llama_rope_rows(const float* in, float* out, int64_t num_rows, int64_t row_elements, int64_t num_heads) {
  const int64_t head_dim = num_rows / num_heads;
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < num_heads; ++h) {
    for (int64_t j = 0; j < 2; ++j) {
      for (int64_t i = 0; i < half; ++i) {
        const int64_t hf_row = h * head_dim + j * half + i;
        const int64_t gguf_row = h * head_dim + 2 * i + j;
        std::memcpy(out + hf_row * row_elements, in + gguf_row * row_elements, row_elements * sizeof(float));
      }
    }
  }
}

Result<std::string> hf_config_json_from_gguf(const GgufFile& gguf) {
  CROSSPOINT_ASSIGN_OR_RETURN(GgufModelParams params, read_params(gguf));
  return config_json(params).dump(2) + "\n";
}

Status convert_gguf_to_hf(const GgufFile& gguf, const std::string& out_dir, GgufConversionSummary* summary) {
  const auto start = std::chrono::steady_clock::now();
  CROSSPOINT_ASSIGN_OR_RETURN(GgufModelParams p, read_params(gguf));
  CROSSPOINT_RETURN_IF_ERROR(check_required_tensors(gguf, p));
  if (p.num_heads * p.head_dim % 2 != 0 || p.head_dim % 2 != 0) {
    return unsupported(gguf.path() + ": head_dim " + std::to_string(p.head_dim) + " is odd");
  }
  log_info("converting {} ({} -> {}): {} layers, hidden {}, {} heads / {} kv heads of {}, vocab {}, {} tensors",
           gguf.path(), p.gguf_architecture, p.hf_architecture, p.num_layers, p.hidden_size, p.num_heads,
           p.num_kv_heads, p.head_dim, p.vocab_size, gguf.tensors().size());

  std::vector<TensorToWrite> tensors;
  tensors.reserve(gguf.tensors().size());
  ProgressBar progress("convert", gguf.tensors().size());
  for (const GgufTensor& tensor : gguf.tensors()) {
    const std::string hf_name = hf_tensor_name(tensor.name);
    if (hf_name.empty()) {
      return unsupported(gguf.path() + ": tensor '" + tensor.name +
                         "' has no Hugging Face equivalent crosspoint knows");
    }
    log_debug("{} ({}, dims {}) -> {}", tensor.name, ggml_type_name(tensor.type), shape_text(tensor.shape()), hf_name);
    CROSSPOINT_ASSIGN_OR_RETURN(TensorToWrite converted, convert_tensor(gguf, p, tensor, hf_name));
    tensors.push_back(std::move(converted));
    progress.update(tensors.size());
  }
  progress.finish();

  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return io_error(out_dir + ": cannot create directory: " + ec.message());
  const std::filesystem::path dir(out_dir);
  CROSSPOINT_RETURN_IF_ERROR(write_text((dir / "config.json").string(), config_json(p).dump(2) + "\n"));
  nlohmann::ordered_json generation;
  if (p.bos_token_id) generation["bos_token_id"] = *p.bos_token_id;
  if (p.eos_token_id) generation["eos_token_id"] = *p.eos_token_id;
  CROSSPOINT_RETURN_IF_ERROR(
      write_text((dir / "generation_config.json").string(),
                 (generation.empty() ? nlohmann::ordered_json::object() : generation).dump(2) + "\n"));
  uint64_t num_bytes = 0;
  for (const TensorToWrite& t : tensors) num_bytes += t.bytes.size();
  CROSSPOINT_RETURN_IF_ERROR(write_safetensors((dir / "model.safetensors").string(), tensors));

  if (summary != nullptr) {
    summary->architecture_name = p.hf_architecture;
    summary->num_tensors = tensors.size();
    summary->num_bytes = num_bytes;
    summary->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return Status::ok();
}

}  // namespace crosspoint
