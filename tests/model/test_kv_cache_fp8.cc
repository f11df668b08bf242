// The fp8 KV cache (--kv-cache-dtype fp8) through the whole CPU forward on the tiny
// checkpoints: logits near those of the f32 cache, and the per-layer k/v scales read from a
// checkpoint that carries them (compressed-tensors' self_attn.k_scale / v_scale).
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "formats/safetensors.h"
#include "model_test_util.h"

namespace crosspoint {
namespace {

using testing::BatchBuilder;
using testing::load_reference;
using testing::model_fixture_dir;

namespace fs = std::filesystem;

// Logits of every position of the fixture's tokens, prefilled in one step.
std::vector<float> prefill_logits(const Model& model, const std::vector<int32_t>& tokens, DType kv_dtype) {
  CpuKvCache cache(model.kv_cache_shape(64, 4, kv_dtype));
  BatchBuilder builder(1, 16, 4);
  const ForwardBatch batch = builder.build({{0, tokens}}, /*all_logits=*/true);
  std::vector<float> logits(tokens.size() * model.vocab_size());
  const Status s = model.forward(batch, cache, logits.data());
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return logits;
}

class Fp8KvCache : public ::testing::TestWithParam<const char*> {};

TEST_P(Fp8KvCache, LogitsStayNearTheF32Cache) {
  auto model = Model::load(model_fixture_dir(GetParam()));
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const testing::TransformersReference ref = load_reference(GetParam());
  const std::vector<float> f32 = prefill_logits(**model, ref.token_ids, DType::kF32);
  const std::vector<float> fp8 = prefill_logits(**model, ref.token_ids, DType::kF8E4M3);
  float worst = 0, largest = 0;
  for (size_t i = 0; i < f32.size(); ++i) {
    worst = std::max(worst, std::fabs(fp8[i] - f32[i]));
    largest = std::max(largest, std::fabs(f32[i]));
  }
  // e4m3 rounds K and V to 3 mantissa bits, and with the default scale of 1 these checkpoints'
  // small K/V (|x| mostly below 1) sit near the subnormal range: the logits move by 3-7 % of
  // the largest (measured), a broken path by its whole range. The kernels are checked element
  // by element against the reference in tests/kernels/test_paged_attention.cc.
  EXPECT_GT(worst, 0.0f);
  EXPECT_LE(worst, 0.1f * largest) << "largest logit " << largest;
}

INSTANTIATE_TEST_SUITE_P(TinyCheckpoints, Fp8KvCache,
                         ::testing::Values("qwen2_tied_f32", "llama_untied_f32", "qwen2_untied_bf16", "llama_tied_f16",
                                           "qwen3_untied_f32"));

// A copy of a fixture whose index adds kv_scales.safetensors holding `scales` (name -> value);
// with kv_cache_scheme, its config.json also says the checkpoint has an FP8 KV cache.
std::string with_scales(const std::string& fixture, const std::map<std::string, float>& scales,
                        bool kv_cache_scheme = false) {
  const fs::path dir = fs::temp_directory_path() / ("crosspoint_kv_scales_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* file : {"config.json", "model.safetensors"})
    fs::copy_file(fs::path(model_fixture_dir(fixture)) / file, dir / file);
  auto tensors = SafetensorsModel::open_dir(dir.string());
  EXPECT_TRUE(tensors.is_ok());
  nlohmann::json weight_map = nlohmann::json::object();
  for (const std::string& name : (*tensors)->tensor_names()) weight_map[name] = "model.safetensors";
  std::vector<TensorToWrite> extra;
  for (const auto& [name, value] : scales) {
    TensorToWrite t{name, DType::kF32, {}, std::vector<uint8_t>(sizeof(float))};
    std::memcpy(t.bytes.data(), &value, sizeof value);
    extra.push_back(t);
    weight_map[name] = "kv_scales.safetensors";
  }
  EXPECT_TRUE(write_safetensors((dir / "kv_scales.safetensors").string(), extra).is_ok());
  if (kv_cache_scheme) {
    std::ifstream in(dir / "config.json");
    nlohmann::json config = nlohmann::json::parse(in);
    in.close();
    config["quantization_config"] = {
        {"quant_method", "compressed-tensors"},
        {"kv_cache_scheme",
         {{"num_bits", 8}, {"type", "float"}, {"strategy", "tensor"}, {"dynamic", false}, {"symmetric", true}}}};
    std::ofstream(dir / "config.json") << config.dump();
  }
  std::ofstream((dir / "model.safetensors.index.json").string()) << nlohmann::json{{"weight_map", weight_map}}.dump();
  return dir.string();
}

TEST(Fp8KvCacheScales, ReadFromTheCheckpointWhenPresent) {
  const std::string dir = with_scales("llama_untied_f32", {{"model.layers.0.self_attn.k_scale", 0.5f},
                                                           {"model.layers.0.self_attn.v_scale", 0.25f},
                                                           {"model.layers.1.self_attn.k_scale", 2.0f},
                                                           {"model.layers.1.self_attn.v_scale", 4.0f}});
  auto model = Model::load(dir);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  EXPECT_TRUE((*model)->has_kv_scales());
  EXPECT_EQ((*model)->layers()[0].k_scale, 0.5f);
  EXPECT_EQ((*model)->layers()[0].v_scale, 0.25f);
  EXPECT_EQ((*model)->layers()[1].k_scale, 2.0f);
  EXPECT_EQ((*model)->layers()[1].v_scale, 4.0f);
  // Without them: 1, as vLLM's default.
  auto plain = Model::load(model_fixture_dir("llama_untied_f32"));
  ASSERT_TRUE(plain.is_ok());
  EXPECT_FALSE((*plain)->has_kv_scales());
  EXPECT_EQ((*plain)->layers()[0].k_scale, 1.0f);
  fs::remove_all(dir);
}

TEST(Fp8KvCacheScales, AKvCacheSchemeNeedsEveryLayersScales) {
  const std::map<std::string, float> both_layers = {{"model.layers.0.self_attn.k_scale", 0.5f},
                                                    {"model.layers.0.self_attn.v_scale", 0.25f},
                                                    {"model.layers.1.self_attn.k_scale", 2.0f},
                                                    {"model.layers.1.self_attn.v_scale", 4.0f}};
  auto model = Model::load(with_scales("llama_untied_f32", both_layers, /*kv_cache_scheme=*/true));
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  EXPECT_TRUE((*model)->config().kv_cache_scheme);
  EXPECT_EQ((*model)->layers()[1].v_scale, 4.0f);
  const std::string one_layer = with_scales(
      "llama_untied_f32", {{"model.layers.0.self_attn.k_scale", 0.5f}, {"model.layers.0.self_attn.v_scale", 0.25f}},
      /*kv_cache_scheme=*/true);
  auto missing = Model::load(one_layer);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("kv_cache_scheme is set but layer 1"), std::string::npos)
      << missing.status().message();
  fs::remove_all(one_layer);
}

TEST(Fp8KvCacheScales, HalfAPairOrABadValueIsRefused) {
  const std::string half = with_scales("llama_untied_f32", {{"model.layers.0.self_attn.k_scale", 0.5f}});
  auto one = Model::load(half);
  ASSERT_FALSE(one.is_ok());
  EXPECT_NE(one.status().message().find("not both"), std::string::npos) << one.status().message();
  const std::string negative = with_scales(
      "llama_untied_f32", {{"model.layers.0.self_attn.k_scale", -1.0f}, {"model.layers.0.self_attn.v_scale", 1.0f}});
  auto bad = Model::load(negative);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("not a positive finite scale"), std::string::npos) << bad.status().message();
  fs::remove_all(negative);
}

}  // namespace
}  // namespace crosspoint
