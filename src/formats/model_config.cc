// config.json for Llama, Mistral, Qwen2 and Qwen3 causal LMs. Every refusal is one line naming
// the file and the field, because a wrong config is the most common way to load garbage.
#include "formats/model_config.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <filesystem>

#include "common/mapped_file.h"

namespace crosspoint {

namespace {

using nlohmann::json;

// Reads fields of one config object, remembering where errors should point.
class FieldReader {
 public:
  FieldReader(const json& object, std::string source) : object_(object), source_(std::move(source)) {}
  const std::string& source() const { return source_; }

  const json* find(const std::string& field) const {
    auto it = object_.find(field);
    if (it == object_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  Status error(StatusCode code, const std::string& field, const std::string& what) const {
    return {code, source_ + ": field '" + field + "': " + what};
  }

  // A required integer > 0.
  Result<int64_t> positive_int(const std::string& field) const {
    const json* value = find(field);
    if (value == nullptr) return error(StatusCode::kInvalidArgument, field, "missing");
    return positive_int_value(field, *value);
  }

  Result<int64_t> positive_int_value(const std::string& field, const json& value) const {
    if (!value.is_number_integer()) {
      return error(StatusCode::kInvalidArgument, field, "expected an integer, got " + value.dump());
    }
    const int64_t v = value.get<int64_t>();
    if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      return error(StatusCode::kInvalidArgument, field, "value too large");
    }
    if (v <= 0) return error(StatusCode::kInvalidArgument, field, "must be positive, got " + std::to_string(v));
    return v;
  }

  // An optional positive float with a default.
  Result<double> positive_double(const std::string& field, double fallback, const json* value) const {
    if (value == nullptr) return fallback;
    if (!value->is_number())
      return error(StatusCode::kInvalidArgument, field, "expected a number, got " + value->dump());
    const double v = value->get<double>();
    if (!(v > 0) || !std::isfinite(v)) return error(StatusCode::kInvalidArgument, field, "must be positive and finite");
    return v;
  }

  Result<bool> boolean(const std::string& field, bool fallback) const {
    const json* value = find(field);
    if (value == nullptr) return fallback;
    if (!value->is_boolean())
      return error(StatusCode::kInvalidArgument, field, "expected true/false, got " + value->dump());
    return value->get<bool>();
  }

  // int, list of ints, or absent/null (empty list).
  Result<std::vector<int64_t>> token_ids(const std::string& field) const {
    const json* value = find(field);
    std::vector<int64_t> ids;
    if (value == nullptr) return ids;
    auto push = [&](const json& item) -> Status {
      if (!item.is_number_integer() || item.get<int64_t>() < 0) {
        return error(StatusCode::kInvalidArgument, field,
                     "expected a token id or a list of them, got " + value->dump());
      }
      ids.push_back(item.get<int64_t>());
      return Status::ok();
    };
    if (value->is_array()) {
      for (const json& item : *value) CROSSPOINT_RETURN_IF_ERROR(push(item));
    } else {
      CROSSPOINT_RETURN_IF_ERROR(push(*value));
    }
    return ids;
  }

 private:
  const json& object_;
  std::string source_;
};

// compressed-tensors' kv_cache_scheme: what llm-compressor writes for an FP8 KV cache with one
// static e4m3 scale per layer for K and for V (self_attn.k_scale / v_scale); other schemes refused.
Status check_kv_cache_scheme(const json& scheme, const std::string& source) {
  const FieldReader reader(scheme, source + ": quantization_config.kv_cache_scheme");
  if (!scheme.is_object()) return {StatusCode::kUnsupported, reader.source() + ": expected an object"};
  auto expect = [&](const char* field, const json& want, bool required) -> Status {
    const json* value = reader.find(field);
    if (value == nullptr && !required) return Status::ok();
    if (value == nullptr || *value != want)
      return reader.error(StatusCode::kUnsupported, field,
                          "is " + (value ? value->dump() : std::string("missing")) + ", only " + want.dump() +
                              " is supported (an FP8 KV cache with static per-tensor scales)");
    return Status::ok();
  };
  CROSSPOINT_RETURN_IF_ERROR(expect("num_bits", 8, true));
  CROSSPOINT_RETURN_IF_ERROR(expect("type", "float", true));
  CROSSPOINT_RETURN_IF_ERROR(expect("strategy", "tensor", true));
  CROSSPOINT_RETURN_IF_ERROR(expect("dynamic", false, false));
  return expect("symmetric", true, false);
}

Result<Architecture> parse_architecture(const FieldReader& reader, ModelConfig* config) {
  std::string name;
  if (const json* architectures = reader.find("architectures")) {
    if (!architectures->is_array() || architectures->size() != 1 || !(*architectures)[0].is_string()) {
      return reader.error(StatusCode::kInvalidArgument, "architectures",
                          "expected a list with one class name, got " + architectures->dump());
    }
    name = (*architectures)[0].get<std::string>();
  } else if (const json* model_type = reader.find("model_type"); model_type && model_type->is_string()) {
    // Older or hand-written configs: model_type alone.
    const std::string type = model_type->get<std::string>();
    name = type == "llama"     ? "LlamaForCausalLM"
           : type == "mistral" ? "MistralForCausalLM"
           : type == "qwen2"   ? "Qwen2ForCausalLM"
           : type == "qwen3"   ? "Qwen3ForCausalLM"
                               : type;
  } else {
    return reader.error(StatusCode::kInvalidArgument, "architectures", "missing (and no model_type)");
  }
  config->architecture_name = name;
  if (name == "LlamaForCausalLM") return Architecture::kLlama;
  if (name == "MistralForCausalLM") return Architecture::kMistral;
  if (name == "Qwen2ForCausalLM") return Architecture::kQwen2;
  if (name == "Qwen3ForCausalLM") return Architecture::kQwen3;
  return reader.error(StatusCode::kUnsupported, "architectures",
                      "\"" + name +
                          "\" is not supported (crosspoint reads LlamaForCausalLM, MistralForCausalLM, "
                          "Qwen2ForCausalLM and Qwen3ForCausalLM)");
}

// YaRN's fields as transformers reads them: factor (absent: max_position_embeddings /
// original_max_position_embeddings), original_max_position_embeddings (absent:
// max_position_embeddings), and the optional beta_fast, beta_slow, truncate, attention_factor,
// mscale, mscale_all_dim.
Status parse_yarn(const FieldReader& params, ModelConfig* config) {
  RopeScaling& r = config->rope_scaling;
  const double max_position = static_cast<double>(config->max_position_embeddings);
  CROSSPOINT_ASSIGN_OR_RETURN(r.original_max_position_embeddings,
                              params.positive_double("original_max_position_embeddings", max_position,
                                                     params.find("original_max_position_embeddings")));
  CROSSPOINT_ASSIGN_OR_RETURN(
      r.factor,
      params.positive_double("factor", max_position / r.original_max_position_embeddings, params.find("factor")));
  if (r.factor < 1.0)
    return params.error(StatusCode::kInvalidArgument, "factor", "must be >= 1, got " + std::to_string(r.factor));
  CROSSPOINT_ASSIGN_OR_RETURN(r.beta_fast, params.positive_double("beta_fast", 32.0, params.find("beta_fast")));
  CROSSPOINT_ASSIGN_OR_RETURN(r.beta_slow, params.positive_double("beta_slow", 1.0, params.find("beta_slow")));
  CROSSPOINT_ASSIGN_OR_RETURN(r.truncate, params.boolean("truncate", true));
  CROSSPOINT_ASSIGN_OR_RETURN(r.attention_factor,
                              params.positive_double("attention_factor", 0.0, params.find("attention_factor")));
  CROSSPOINT_ASSIGN_OR_RETURN(r.mscale, params.positive_double("mscale", 0.0, params.find("mscale")));
  CROSSPOINT_ASSIGN_OR_RETURN(r.mscale_all_dim,
                              params.positive_double("mscale_all_dim", 0.0, params.find("mscale_all_dim")));
  return Status::ok();
}

// RoPE base and scaling: either the classic top-level rope_theta / rope_scaling, or the
// newer "rope_parameters" object. Unscaled RoPE and Llama 3's scaling are implemented.
Status parse_rope(const FieldReader& reader, ModelConfig* config) {
  const json* parameters = reader.find("rope_parameters");
  const json* theta = reader.find("rope_theta");
  std::string scaling_field = "rope_scaling";
  const json* scaling = reader.find("rope_scaling");
  if (parameters != nullptr && parameters->is_object()) {
    if (theta == nullptr && parameters->contains("rope_theta")) theta = &(*parameters)["rope_theta"];
    if (scaling == nullptr) {
      scaling = parameters;
      scaling_field = "rope_parameters";
    }
  }
  CROSSPOINT_ASSIGN_OR_RETURN(config->rope_theta, reader.positive_double("rope_theta", 10000.0, theta));
  if (scaling == nullptr) return Status::ok();
  if (!scaling->is_object()) {
    return reader.error(StatusCode::kInvalidArgument, scaling_field, "expected an object, got " + scaling->dump());
  }
  std::string type = "default";
  for (const char* key : {"rope_type", "type"}) {
    auto it = scaling->find(key);
    if (it != scaling->end() && it->is_string()) {
      type = it->get<std::string>();
      break;
    }
  }
  config->rope_scaling.type = type;
  if (type == "default") return Status::ok();
  RopeScaling& r = config->rope_scaling;
  FieldReader params(*scaling, reader.source() + ": " + scaling_field);
  if (type == "yarn") return parse_yarn(params, config);
  if (type != "llama3") {
    return reader.error(
        StatusCode::kUnsupported, scaling_field,
        "RoPE scaling type \"" + type + "\" is not implemented (unscaled, \"llama3\" and \"yarn\" are)");
  }
  for (auto [name, out] : {std::pair<const char*, double*>{"factor", &r.factor},
                           {"low_freq_factor", &r.low_freq_factor},
                           {"high_freq_factor", &r.high_freq_factor},
                           {"original_max_position_embeddings", &r.original_max_position_embeddings}}) {
    const json* value = params.find(name);
    if (value == nullptr)
      return params.error(StatusCode::kInvalidArgument, name, "missing (rope_type \"llama3\" needs it)");
    CROSSPOINT_ASSIGN_OR_RETURN(*out, params.positive_double(name, 0.0, value));
  }
  if (r.high_freq_factor <= r.low_freq_factor) {
    return params.error(StatusCode::kInvalidArgument, "high_freq_factor",
                        "must exceed low_freq_factor (" + std::to_string(r.low_freq_factor) + ")");
  }
  return Status::ok();
}

}  // namespace

Result<ModelConfig> parse_model_config(const std::string& json_text, const std::string& source_name) {
  const json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return corrupt(source_name + ": not valid JSON");
  if (!root.is_object()) return corrupt(source_name + ": not a JSON object");
  FieldReader reader(root, source_name);
  ModelConfig config;
  CROSSPOINT_ASSIGN_OR_RETURN(config.architecture, parse_architecture(reader, &config));

  CROSSPOINT_ASSIGN_OR_RETURN(config.hidden_size, reader.positive_int("hidden_size"));
  CROSSPOINT_ASSIGN_OR_RETURN(config.intermediate_size, reader.positive_int("intermediate_size"));
  CROSSPOINT_ASSIGN_OR_RETURN(config.num_hidden_layers, reader.positive_int("num_hidden_layers"));
  CROSSPOINT_ASSIGN_OR_RETURN(config.num_attention_heads, reader.positive_int("num_attention_heads"));
  CROSSPOINT_ASSIGN_OR_RETURN(config.vocab_size, reader.positive_int("vocab_size"));
  CROSSPOINT_ASSIGN_OR_RETURN(config.max_position_embeddings, reader.positive_int("max_position_embeddings"));

  // Sizes beyond any model this reads are refused before anything is allocated from them.
  for (auto [field, value, limit] :
       {std::tuple<const char*, int64_t, int64_t>{"hidden_size", config.hidden_size, 1 << 17},
        {"intermediate_size", config.intermediate_size, 1 << 20},
        {"num_hidden_layers", config.num_hidden_layers, 1024},
        {"num_attention_heads", config.num_attention_heads, 1024},
        {"vocab_size", config.vocab_size, 1 << 24},
        {"max_position_embeddings", config.max_position_embeddings, 1 << 24}}) {
    if (value > limit)
      return reader.error(
          StatusCode::kInvalidArgument, field,
          std::to_string(value) + " is beyond any model crosspoint reads (at most " + std::to_string(limit) + ")");
  }
  config.num_key_value_heads = config.num_attention_heads;
  if (const json* kv_heads = reader.find("num_key_value_heads")) {
    CROSSPOINT_ASSIGN_OR_RETURN(config.num_key_value_heads,
                                reader.positive_int_value("num_key_value_heads", *kv_heads));
  }
  if (config.num_attention_heads % config.num_key_value_heads != 0) {
    return reader.error(StatusCode::kInvalidArgument, "num_key_value_heads",
                        std::to_string(config.num_key_value_heads) + " does not divide num_attention_heads " +
                            std::to_string(config.num_attention_heads));
  }
  if (const json* head_dim = reader.find("head_dim")) {
    CROSSPOINT_ASSIGN_OR_RETURN(config.head_dim, reader.positive_int_value("head_dim", *head_dim));
  } else {
    if (config.hidden_size % config.num_attention_heads != 0) {
      return reader.error(StatusCode::kInvalidArgument, "num_attention_heads",
                          std::to_string(config.num_attention_heads) + " does not divide hidden_size " +
                              std::to_string(config.hidden_size) + " (and there is no head_dim)");
    }
    config.head_dim = config.hidden_size / config.num_attention_heads;
  }
  if (config.head_dim % 2 != 0) {
    return reader.error(StatusCode::kInvalidArgument, "head_dim",
                        "RoPE needs an even head_dim, got " + std::to_string(config.head_dim));
  }
  if (config.head_dim > 1024)
    return reader.error(StatusCode::kInvalidArgument, "head_dim",
                        std::to_string(config.head_dim) + " is beyond any model crosspoint reads (at most 1024)");

  CROSSPOINT_ASSIGN_OR_RETURN(config.rms_norm_eps,
                              reader.positive_double("rms_norm_eps", 1e-6, reader.find("rms_norm_eps")));
  CROSSPOINT_RETURN_IF_ERROR(parse_rope(reader, &config));

  if (const json* act = reader.find("hidden_act")) {
    if (!act->is_string() || act->get<std::string>() != "silu") {
      return reader.error(StatusCode::kUnsupported, "hidden_act", act->dump() + " is not supported (only \"silu\")");
    }
  }
  CROSSPOINT_ASSIGN_OR_RETURN(config.tie_word_embeddings, reader.boolean("tie_word_embeddings", false));
  if (config.architecture == Architecture::kQwen2 || config.architecture == Architecture::kQwen3) {
    // Qwen2Attention hard-wires the q/k/v bias; Qwen3's is a config flag (false in every release).
    config.attention_bias = true;
    if (config.architecture == Architecture::kQwen3) {
      CROSSPOINT_ASSIGN_OR_RETURN(config.attention_bias, reader.boolean("attention_bias", false));
      config.qk_norm = true;
    }
    CROSSPOINT_ASSIGN_OR_RETURN(bool sliding, reader.boolean("use_sliding_window", false));
    if (sliding) {
      return reader.error(StatusCode::kUnsupported, "use_sliding_window",
                          "sliding-window attention is not implemented");
    }
  } else if (config.architecture == Architecture::kMistral) {
    // MistralAttention and MistralMLP have no biases; the window is null since Mistral 7B v0.2.
    if (const json* window = reader.find("sliding_window"); window && !window->is_null()) {
      CROSSPOINT_ASSIGN_OR_RETURN(config.sliding_window, reader.positive_int("sliding_window"));
      config.max_position_embeddings = std::min(config.max_position_embeddings, config.sliding_window);
    }
  } else {
    CROSSPOINT_ASSIGN_OR_RETURN(config.attention_bias, reader.boolean("attention_bias", false));
    CROSSPOINT_ASSIGN_OR_RETURN(bool mlp_bias, reader.boolean("mlp_bias", false));
    if (mlp_bias) return reader.error(StatusCode::kUnsupported, "mlp_bias", "MLP biases are not implemented");
  }

  for (const char* field : {"torch_dtype", "dtype"}) {
    if (const json* dtype = reader.find(field); dtype && dtype->is_string()) {
      config.torch_dtype = dtype->get<std::string>();
      break;
    }
  }
  CROSSPOINT_ASSIGN_OR_RETURN(config.eos_token_ids, reader.token_ids("eos_token_id"));
  CROSSPOINT_ASSIGN_OR_RETURN(std::vector<int64_t> bos_ids, reader.token_ids("bos_token_id"));
  if (bos_ids.size() > 1) return reader.error(StatusCode::kInvalidArgument, "bos_token_id", "expected one token id");
  if (!bos_ids.empty()) config.bos_token_id = bos_ids[0];

  if (const json* quant = reader.find("quantization_config")) {
    if (!quant->is_object()) {
      return reader.error(StatusCode::kInvalidArgument, "quantization_config", "expected an object");
    }
    config.quantization_config_json = quant->dump();
    const auto scheme = quant->find("kv_cache_scheme");
    config.kv_cache_scheme = scheme != quant->end() && !scheme->is_null();
    if (config.kv_cache_scheme) CROSSPOINT_RETURN_IF_ERROR(check_kv_cache_scheme(*scheme, reader.source()));
  }
  return config;
}

Result<ModelConfig> load_model_config(const std::string& model_dir) {
  const std::string path = (std::filesystem::path(model_dir) / "config.json").string();
  CROSSPOINT_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  return parse_model_config(text, path);
}

}  // namespace crosspoint
