#include "analysis/model_shape.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace crosspoint::analysis {

int64_t ModelShape::linear_params() const {
  const int64_t q_dim = num_attention_heads * head_dim;
  const int64_t kv_dim = num_kv_heads * head_dim;
  const int64_t attention = hidden_size * q_dim + 2 * hidden_size * kv_dim + q_dim * hidden_size;
  const int64_t mlp = 3 * hidden_size * intermediate_size;
  return num_layers * (attention + mlp);
}

int64_t ModelShape::head_params() const { return vocab_size * hidden_size; }

int64_t ModelShape::embedding_params() const { return vocab_size * hidden_size; }

int64_t ModelShape::total_params() const {
  const int64_t norms = num_layers * 2 * hidden_size + hidden_size;
  const int64_t biases = attention_bias ? num_layers * (num_attention_heads + 2 * num_kv_heads) * head_dim : 0;
  return biases + linear_params() + embedding_params() + (tie_word_embeddings ? 0 : head_params()) + norms;
}

int64_t ModelShape::kv_elements_per_token() const { return 2 * num_layers * num_kv_heads * head_dim; }

int64_t ModelShape::attention_flops_per_context_token() const {
  return 4 * num_layers * num_attention_heads * head_dim;
}

namespace {

Result<int64_t> positive_int(const nlohmann::json& config, const char* key, const std::string& source) {
  auto it = config.find(key);
  if (it == config.end()) return invalid_argument(source + ": missing field '" + key + "'");
  if (!it->is_number_integer() || it->get<int64_t>() <= 0)
    return invalid_argument(source + ": field '" + key + "' must be a positive integer");
  return it->get<int64_t>();
}

}  // namespace

Result<ModelShape> parse_model_shape(const std::string& json_text, const std::string& source_name) {
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) { return corrupt(source_name + ": not valid JSON: " + e.what()); }
  if (!config.is_object()) return corrupt(source_name + ": expected a JSON object");
  // Multimodal configs (Qwen2-VL, Llama 4) keep the language model under text_config.
  if (config.contains("text_config") && config["text_config"].is_object() && !config.contains("hidden_size"))
    config = config["text_config"];
  ModelShape shape;
  CROSSPOINT_ASSIGN_OR_RETURN(shape.num_layers, positive_int(config, "num_hidden_layers", source_name));
  CROSSPOINT_ASSIGN_OR_RETURN(shape.hidden_size, positive_int(config, "hidden_size", source_name));
  CROSSPOINT_ASSIGN_OR_RETURN(shape.intermediate_size, positive_int(config, "intermediate_size", source_name));
  CROSSPOINT_ASSIGN_OR_RETURN(shape.num_attention_heads, positive_int(config, "num_attention_heads", source_name));
  CROSSPOINT_ASSIGN_OR_RETURN(shape.vocab_size, positive_int(config, "vocab_size", source_name));
  shape.num_kv_heads = shape.num_attention_heads;
  if (config.contains("num_key_value_heads") && !config["num_key_value_heads"].is_null()) {
    CROSSPOINT_ASSIGN_OR_RETURN(shape.num_kv_heads, positive_int(config, "num_key_value_heads", source_name));
  }
  if (config.contains("head_dim") && !config["head_dim"].is_null()) {
    CROSSPOINT_ASSIGN_OR_RETURN(shape.head_dim, positive_int(config, "head_dim", source_name));
  } else {
    if (shape.hidden_size % shape.num_attention_heads != 0)
      return invalid_argument(source_name + ": hidden_size is not a multiple of num_attention_heads");
    shape.head_dim = shape.hidden_size / shape.num_attention_heads;
  }
  if (shape.num_attention_heads % shape.num_kv_heads != 0)
    return invalid_argument(source_name + ": num_attention_heads is not a multiple of num_key_value_heads");
  auto tie = config.find("tie_word_embeddings");
  shape.tie_word_embeddings = tie != config.end() && tie->is_boolean() && tie->get<bool>();
  auto bias = config.find("attention_bias");
  auto model_type = config.find("model_type");
  shape.attention_bias =
      (bias != config.end() && bias->is_boolean() && bias->get<bool>()) ||
      (model_type != config.end() && model_type->is_string() && model_type->get<std::string>().rfind("qwen2", 0) == 0);
  return shape;
}

Result<ModelShape> load_model_shape(const std::string& path) {
  std::string file = path;
  if (std::filesystem::is_directory(path)) file = (std::filesystem::path(path) / "config.json").string();
  std::ifstream in(file, std::ios::binary);
  if (!in) return not_found(file + ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  return parse_model_shape(text.str(), file);
}

}  // namespace crosspoint::analysis
