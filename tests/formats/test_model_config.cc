// config.json parsing: real-looking Qwen2 and Llama configs, and every refusal.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "formats/model_config.h"
#include "formats_test_util.h"

namespace crosspoint {
namespace {

// Qwen2.5-7B-Instruct's config.json (values from ../shared/docs/reference/checkpoint-formats.md).
const char* kQwen25Config = R"({
  "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
  "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 3584, "initializer_range": 0.02,
  "intermediate_size": 18944, "max_position_embeddings": 32768, "max_window_layers": 28,
  "model_type": "qwen2", "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
  "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 131072, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "transformers_version": "4.43.1", "use_cache": true,
  "use_sliding_window": false, "vocab_size": 152064
})";

// A Llama 3.2-style config: tied embeddings, eos as a list, explicit head_dim.
const char* kLlamaConfig = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "bos_token_id": 128000,
  "eos_token_id": [128001, 128008, 128009], "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048,
  "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
  "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
  "rope_scaling": null, "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "vocab_size": 128256,
  "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": false, "sym": true}
})";

TEST(ModelConfig, ParsesQwen25) {
  auto config = parse_model_config(kQwen25Config, "qwen/config.json");
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  EXPECT_EQ(config->architecture, Architecture::kQwen2);
  EXPECT_EQ(config->architecture_name, "Qwen2ForCausalLM");
  EXPECT_EQ(config->hidden_size, 3584);
  EXPECT_EQ(config->intermediate_size, 18944);
  EXPECT_EQ(config->num_hidden_layers, 28);
  EXPECT_EQ(config->num_attention_heads, 28);
  EXPECT_EQ(config->num_key_value_heads, 4);
  EXPECT_EQ(config->head_dim, 128);
  EXPECT_EQ(config->vocab_size, 152064);
  EXPECT_EQ(config->max_position_embeddings, 32768);
  EXPECT_EQ(config->rope_theta, 1000000.0);
  EXPECT_EQ(config->rms_norm_eps, 1e-6);
  EXPECT_FALSE(config->tie_word_embeddings);
  EXPECT_TRUE(config->attention_bias);  // Qwen2: always
  EXPECT_EQ(config->torch_dtype, "bfloat16");
  EXPECT_EQ(config->eos_token_ids, (std::vector<int64_t>{151645}));
  EXPECT_EQ(config->bos_token_id, 151643);
  EXPECT_TRUE(config->quantization_config_json.empty());
}

TEST(ModelConfig, ParsesLlamaWithListEosTiedAndQuantizationConfig) {
  auto config = parse_model_config(kLlamaConfig, "llama/config.json");
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  EXPECT_EQ(config->architecture, Architecture::kLlama);
  EXPECT_EQ(config->head_dim, 64);
  EXPECT_EQ(config->num_key_value_heads, 8);
  EXPECT_TRUE(config->tie_word_embeddings);
  EXPECT_FALSE(config->attention_bias);
  EXPECT_EQ(config->eos_token_ids, (std::vector<int64_t>{128001, 128008, 128009}));
  const auto quant = nlohmann::json::parse(config->quantization_config_json);
  EXPECT_EQ(quant["quant_method"], "gptq");
  EXPECT_EQ(quant["group_size"], 128);
}

TEST(ModelConfig, DefaultsWhenOptionalFieldsAreAbsent) {
  auto config = parse_model_config(R"({"architectures":["LlamaForCausalLM"],"hidden_size":64,
      "intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100,
      "max_position_embeddings":512})",
                                   "min.json");
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  EXPECT_EQ(config->num_key_value_heads, 4);
  EXPECT_EQ(config->head_dim, 16);
  EXPECT_EQ(config->rope_theta, 10000.0);
  EXPECT_FALSE(config->tie_word_embeddings);
  EXPECT_TRUE(config->eos_token_ids.empty());
  EXPECT_FALSE(config->bos_token_id.has_value());
}

// compressed-tensors' kv_cache_scheme: static per-tensor e4m3 scales (llm-compressor's FP8 KV
// cache) accepted, anything else refused naming the field.
TEST(ModelConfig, KvCacheSchemeOfStaticFp8ScalesOnly) {
  auto with_scheme = [](const std::string& scheme) {
    return parse_model_config(R"({"architectures":["LlamaForCausalLM"],"hidden_size":64,
        "intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100,
        "max_position_embeddings":512,"quantization_config":{"quant_method":"compressed-tensors",
        "kv_cache_scheme":)" + scheme +
                                  "}}",
                              "kv.json");
  };
  auto accepted = with_scheme(R"({"num_bits":8,"type":"float","symmetric":true,"group_size":null,
      "strategy":"tensor","block_structure":null,"dynamic":false,"actorder":null,"observer":"minmax"})");
  ASSERT_TRUE(accepted.is_ok()) << accepted.status().to_string();
  EXPECT_TRUE(accepted->kv_cache_scheme);
  for (const auto& [scheme, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"num_bits":8,"type":"float","strategy":"channel"})", "strategy"},
           {R"({"num_bits":8,"type":"float","strategy":"tensor","dynamic":true})", "dynamic"},
           {R"({"num_bits":8,"type":"int","strategy":"tensor"})", "type"},
           {R"({"num_bits":4,"type":"float","strategy":"tensor"})", "num_bits"},
           {R"({"num_bits":8,"type":"float","strategy":"tensor","symmetric":false})", "symmetric"},
           {R"("fp8")", "expected an object"}}) {
    auto refused = with_scheme(scheme);
    ASSERT_FALSE(refused.is_ok()) << scheme;
    EXPECT_EQ(refused.status().code(), StatusCode::kUnsupported) << scheme;
    EXPECT_NE(refused.status().message().find(field), std::string::npos) << refused.status().message();
    EXPECT_NE(refused.status().message().find("kv_cache_scheme"), std::string::npos) << refused.status().message();
  }
  auto none = with_scheme("null");
  ASSERT_TRUE(none.is_ok());
  EXPECT_FALSE(none->kv_cache_scheme);
}

TEST(ModelConfig, ReadsNewerRopeParametersObject) {
  auto config = parse_model_config(R"({"architectures":["Qwen2ForCausalLM"],"hidden_size":64,
      "intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100,
      "max_position_embeddings":512,"rope_parameters":{"rope_type":"default","rope_theta":250000.0}})",
                                   "new.json");
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  EXPECT_EQ(config->rope_theta, 250000.0);
}

TEST(ModelConfig, MistralIsLlamaWithoutBiasesAndItsWindowCapsTheContext) {
  const std::string base = R"({"architectures":["MistralForCausalLM"],"hidden_size":64,"intermediate_size":128,
      "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":32,"vocab_size":100,
      "max_position_embeddings":32768,"attention_bias":true,"sliding_window":)";
  auto v02 = parse_model_config(base + "null}", "mistral/config.json");
  ASSERT_TRUE(v02.is_ok()) << v02.status().to_string();
  EXPECT_EQ(v02->architecture, Architecture::kMistral);
  EXPECT_FALSE(v02->attention_bias);  // MistralAttention has none, whatever the file says
  EXPECT_EQ(v02->head_dim, 32);
  EXPECT_EQ(v02->sliding_window, 0);
  EXPECT_EQ(v02->max_position_embeddings, 32768);
  auto v01 = parse_model_config(base + "4096}", "mistral/config.json");
  ASSERT_TRUE(v01.is_ok()) << v01.status().to_string();
  EXPECT_EQ(v01->sliding_window, 4096);
  EXPECT_EQ(v01->max_position_embeddings, 4096);
  auto bad = parse_model_config(base + "0}", "mistral/config.json");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("field 'sliding_window': must be positive"), std::string::npos)
      << bad.status().message();
  auto by_type = parse_model_config(R"({"model_type":"mistral","hidden_size":64,"intermediate_size":128,
      "num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100,"max_position_embeddings":64})",
                                    "m.json");
  ASSERT_TRUE(by_type.is_ok()) << by_type.status().to_string();
  EXPECT_EQ(by_type->architecture_name, "MistralForCausalLM");
}

TEST(ModelConfig, LoadsTinyFixtureDirectory) {
  auto config = load_model_config(testing::fixture("tiny_llama"));
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  EXPECT_TRUE(config->attention_bias);
  EXPECT_EQ(config->head_dim, 8);
}

struct BadConfig {
  const char* label;
  std::string json_edit;  // merged into the Qwen2.5 config ("null" deletes a field)
  StatusCode code;
  const char* needle;
};

TEST(ModelConfig, Llama3RopeScalingIsRead) {
  nlohmann::json config = nlohmann::json::parse(kQwen25Config);
  config["rope_scaling"] = {{"rope_type", "llama3"},
                            {"factor", 8.0},
                            {"low_freq_factor", 1.0},
                            {"high_freq_factor", 4.0},
                            {"original_max_position_embeddings", 8192}};
  auto parsed = parse_model_config(config.dump(), "/m/config.json");
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->rope_scaling.type, "llama3");
  EXPECT_EQ(parsed->rope_scaling.factor, 8.0);
  EXPECT_EQ(parsed->rope_scaling.low_freq_factor, 1.0);
  EXPECT_EQ(parsed->rope_scaling.high_freq_factor, 4.0);
  EXPECT_EQ(parsed->rope_scaling.original_max_position_embeddings, 8192.0);
  config["rope_scaling"] = nullptr;  // as most configs write "no scaling"
  parsed = parse_model_config(config.dump(), "/m/config.json");
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->rope_scaling.type, "default");
}

TEST(ModelConfig, YarnRopeScalingIsReadWithTransformersDefaults) {
  nlohmann::json config = nlohmann::json::parse(kQwen25Config);
  // Qwen2.5's long-context setting, as its model card gives it.
  config["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
  auto parsed = parse_model_config(config.dump(), "/m/config.json");
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  const RopeScaling& r = parsed->rope_scaling;
  EXPECT_EQ(r.type, "yarn");
  EXPECT_EQ(r.factor, 4.0);
  EXPECT_EQ(r.original_max_position_embeddings, 32768.0);
  EXPECT_EQ(r.beta_fast, 32.0);
  EXPECT_EQ(r.beta_slow, 1.0);
  EXPECT_TRUE(r.truncate);
  EXPECT_EQ(r.attention_factor, 0.0);
  // Without factor and original length: the original is max_position_embeddings, factor 1.
  config["rope_scaling"] = {{"rope_type", "yarn"}, {"beta_fast", 16}, {"truncate", false}, {"attention_factor", 1.5}};
  parsed = parse_model_config(config.dump(), "/m/config.json");
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->rope_scaling.original_max_position_embeddings,
            static_cast<double>(parsed->max_position_embeddings));
  EXPECT_EQ(parsed->rope_scaling.factor, 1.0);
  EXPECT_EQ(parsed->rope_scaling.beta_fast, 16.0);
  EXPECT_FALSE(parsed->rope_scaling.truncate);
  EXPECT_EQ(parsed->rope_scaling.attention_factor, 1.5);
}

TEST(ModelConfig, RefusalsAreOneLineNamingFileAndField) {
  const std::vector<BadConfig> cases = {
      {"unknown architecture", R"({"architectures":["MixtralForCausalLM"]})", StatusCode::kUnsupported,
       "field 'architectures': \"MixtralForCausalLM\" is not supported"},
      {"missing size", R"({"hidden_size":null})", StatusCode::kInvalidArgument, "field 'hidden_size': missing"},
      {"zero size", R"({"num_hidden_layers":0})", StatusCode::kInvalidArgument,
       "field 'num_hidden_layers': must be positive"},
      {"negative size", R"({"vocab_size":-5})", StatusCode::kInvalidArgument, "field 'vocab_size': must be positive"},
      // Sizes nothing could allocate are refused before any allocation (a fuzzing finding).
      {"absurd layers", R"({"num_hidden_layers":1000000000000})", StatusCode::kInvalidArgument,
       "field 'num_hidden_layers': 1000000000000 is beyond any model crosspoint reads"},
      {"absurd vocabulary", R"({"vocab_size":1073741824})", StatusCode::kInvalidArgument, "field 'vocab_size'"},
      {"absurd context", R"({"max_position_embeddings":4294967296})", StatusCode::kInvalidArgument,
       "field 'max_position_embeddings'"},
      {"absurd head_dim", R"({"head_dim":65536})", StatusCode::kInvalidArgument, "field 'head_dim'"},
      {"float size", R"({"intermediate_size":18944.5})", StatusCode::kInvalidArgument,
       "field 'intermediate_size': expected an integer"},
      {"string size", R"({"hidden_size":"3584"})", StatusCode::kInvalidArgument,
       "field 'hidden_size': expected an integer"},
      {"kv heads do not divide", R"({"num_key_value_heads":5})", StatusCode::kInvalidArgument,
       "field 'num_key_value_heads': 5 does not divide num_attention_heads 28"},
      {"heads do not divide hidden", R"({"num_attention_heads":27,"num_key_value_heads":3})",
       StatusCode::kInvalidArgument, "field 'num_attention_heads': 27 does not divide hidden_size 3584"},
      {"odd head_dim", R"({"head_dim":127})", StatusCode::kInvalidArgument, "field 'head_dim'"},
      {"gelu", R"({"hidden_act":"gelu"})", StatusCode::kUnsupported, "field 'hidden_act': \"gelu\" is not supported"},
      {"longrope", R"({"rope_scaling":{"type":"longrope","factor":4.0,"original_max_position_embeddings":4096}})",
       StatusCode::kUnsupported, "field 'rope_scaling': RoPE scaling type \"longrope\" is not implemented"},
      {"yarn below 1", R"({"rope_scaling":{"type":"yarn","factor":0.5}})", StatusCode::kInvalidArgument,
       "field 'factor': must be >= 1"},
      {"yarn, bad truncate", R"({"rope_scaling":{"type":"yarn","factor":4.0,"truncate":"yes"}})",
       StatusCode::kInvalidArgument, "field 'truncate': expected true/false"},
      {"llama3 rope without its fields", R"({"rope_scaling":{"rope_type":"llama3","factor":8.0}})",
       StatusCode::kInvalidArgument, "field 'low_freq_factor': missing"},
      {"llama3 rope, high below low",
       R"({"rope_scaling":{"rope_type":"llama3","factor":8.0,"low_freq_factor":4.0,"high_freq_factor":1.0,)"
       R"("original_max_position_embeddings":8192}})",
       StatusCode::kInvalidArgument, "field 'high_freq_factor': must exceed low_freq_factor"},
      {"llama3 rope, zero factor",
       R"({"rope_scaling":{"rope_type":"llama3","factor":0,"low_freq_factor":1.0,"high_freq_factor":4.0,)"
       R"("original_max_position_embeddings":8192}})",
       StatusCode::kInvalidArgument, "field 'factor': must be positive"},
      {"sliding window", R"({"use_sliding_window":true})", StatusCode::kUnsupported, "field 'use_sliding_window'"},
      {"bad eos", R"({"eos_token_id":"</s>"})", StatusCode::kInvalidArgument, "field 'eos_token_id'"},
      {"zero eps", R"({"rms_norm_eps":0})", StatusCode::kInvalidArgument, "field 'rms_norm_eps'"},
      {"bad theta", R"({"rope_theta":"big"})", StatusCode::kInvalidArgument, "field 'rope_theta'"},
      {"quant not object", R"({"quantization_config":"gptq"})", StatusCode::kInvalidArgument,
       "field 'quantization_config'"},
      {"two architectures", R"({"architectures":["A","B"]})", StatusCode::kInvalidArgument, "field 'architectures'"},
  };
  for (const BadConfig& c : cases) {
    SCOPED_TRACE(c.label);
    nlohmann::json config = nlohmann::json::parse(kQwen25Config);
    const nlohmann::json edit = nlohmann::json::parse(c.json_edit);
    for (auto& [key, value] : edit.items()) {
      if (value.is_null()) config.erase(key);
      else config[key] = value;
    }
    auto parsed = parse_model_config(config.dump(), "/m/config.json");
    ASSERT_FALSE(parsed.is_ok());
    EXPECT_EQ(parsed.status().code(), c.code) << parsed.status().to_string();
    EXPECT_NE(parsed.status().message().find("/m/config.json: "), std::string::npos) << parsed.status().message();
    EXPECT_NE(parsed.status().message().find(c.needle), std::string::npos) << parsed.status().message();
    EXPECT_EQ(parsed.status().message().find('\n'), std::string::npos);
  }
  // mlp_bias only exists for Llama.
  auto llama = nlohmann::json::parse(kLlamaConfig);
  llama["mlp_bias"] = true;
  auto parsed = parse_model_config(llama.dump(), "l.json");
  ASSERT_FALSE(parsed.is_ok());
  EXPECT_NE(parsed.status().message().find("field 'mlp_bias'"), std::string::npos);
}

TEST(ModelConfig, CorruptOrMissingFiles) {
  auto parsed = parse_model_config("{\"hidden_size\": 12", "/m/config.json");
  ASSERT_FALSE(parsed.is_ok());
  EXPECT_EQ(parsed.status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(parsed.status().message(), "/m/config.json: not valid JSON");
  parsed = parse_model_config("[]", "/m/config.json");
  EXPECT_EQ(parsed.status().code(), StatusCode::kCorrupt);
  // Every truncation of a valid config fails cleanly.
  const std::string text = kQwen25Config;
  for (size_t length = 0; length + 1 < text.size(); ++length) {
    EXPECT_FALSE(parse_model_config(text.substr(0, length), "t.json").is_ok()) << length;
  }
  auto missing = load_model_config("/nonexistent/dir");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/dir/config.json"), std::string::npos);
}

}  // namespace
}  // namespace crosspoint
