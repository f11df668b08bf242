// Loading: sizes reported for the startup log, and bad checkpoints refused with one clear
// error naming the tensor (copies of a fixture with one thing broken).
#include <filesystem>
#include <fstream>

#include "formats/safetensors.h"
#include "model_test_util.h"

namespace crosspoint {
namespace {

namespace fs = std::filesystem;
using testing::model_fixture_dir;

// A temporary copy of a fixture whose tensors pass through `edit` before being written.
class BrokenCheckpoint {
 public:
  BrokenCheckpoint(const std::string& fixture, const std::function<void(std::vector<TensorToWrite>&)>& edit,
                   const std::string& config_edit_from = "", const std::string& config_edit_to = "") {
    dir_ = fs::temp_directory_path() /
           ("crosspoint_model_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(dir_);
    std::ifstream in(model_fixture_dir(fixture) + "/config.json");
    std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!config_edit_from.empty())
      config.replace(config.find(config_edit_from), config_edit_from.size(), config_edit_to);
    std::ofstream(dir_ / "config.json") << config;
    auto file = SafetensorsFile::open(model_fixture_dir(fixture) + "/model.safetensors");
    EXPECT_TRUE(file.is_ok());
    std::vector<TensorToWrite> tensors;
    for (const auto& [name, info] : file->tensors())
      tensors.push_back({name, info.dtype, info.shape, std::vector<uint8_t>(info.data, info.data + info.num_bytes)});
    edit(tensors);
    EXPECT_TRUE(write_safetensors((dir_ / "model.safetensors").string(), tensors).is_ok());
  }
  ~BrokenCheckpoint() { fs::remove_all(dir_); }
  std::string dir() const { return dir_.string(); }

 private:
  fs::path dir_;
  static inline int counter_ = 0;
};

Status load_error(const std::string& dir) {
  auto model = Model::load(dir);
  EXPECT_FALSE(model.is_ok()) << dir << " loaded although it is broken";
  return model.is_ok() ? Status::ok() : model.status();
}

TEST(ModelLoadingTest, ReportsSizesForTheStartupLog) {
  auto model = Model::load(model_fixture_dir("qwen2_tied_f32"));
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const ModelConfig& c = (*model)->config();
  // K and V, f32, every layer: 2 * layers * kv_heads * head_dim * 4 bytes.
  EXPECT_EQ((*model)->kv_bytes_per_token(), size_t(2 * c.num_hidden_layers * c.num_key_value_heads * c.head_dim * 4));
  // Linears: per layer q,k,v,o + gate,up,down (+ q/k/v bias); lm_head = tied embedding.
  const int64_t d = c.hidden_size, q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim;
  const int64_t per_layer = d * q + 2 * d * kv + q * d + 3 * d * c.intermediate_size + q + 2 * kv + 2 * d;
  const int64_t params_per_token =
      c.num_hidden_layers * per_layer + c.vocab_size * d + d /*final norm*/ + d /*one embedding row*/;
  EXPECT_EQ((*model)->weight_bytes_per_token(), size_t(params_per_token * 4));
  EXPECT_EQ((*model)->weight_bytes_total(), size_t((params_per_token - d) * 4));
  EXPECT_EQ((*model)->weight_format_name(), "f32");
}

TEST(ModelLoadingTest, MissingTensorIsNamed) {
  BrokenCheckpoint broken("qwen2_tied_f32", [](auto& tensors) {
    std::erase_if(tensors, [](const TensorToWrite& t) { return t.name == "model.layers.1.mlp.up_proj.weight"; });
  });
  const Status s = load_error(broken.dir());
  EXPECT_NE(s.message().find("model.layers.1.mlp.up_proj.weight"), std::string::npos) << s.to_string();
}

TEST(ModelLoadingTest, WrongShapeIsNamed) {
  BrokenCheckpoint broken("llama_untied_f32", [](auto& tensors) {
    for (auto& t : tensors)
      if (t.name == "model.layers.0.self_attn.k_proj.weight") std::swap(t.shape[0], t.shape[1]);
  });
  const Status s = load_error(broken.dir());
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_NE(s.message().find("model.layers.0.self_attn.k_proj.weight has shape [96, 32]"), std::string::npos)
      << s.to_string();
}

TEST(ModelLoadingTest, ShapeContradictingConfigIsNamed) {
  // config says 3 kv heads where the tensors hold 2 (heads 6 stays divisible by 3).
  BrokenCheckpoint broken("llama_untied_f32", [](auto&) {}, "\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3");
  const Status s = load_error(broken.dir());
  EXPECT_NE(s.message().find("self_attn.k_proj.weight"), std::string::npos) << s.to_string();
}

TEST(ModelLoadingTest, IntegerWeightDtypeIsNamed) {
  BrokenCheckpoint broken("qwen2_tied_f32", [](auto& tensors) {
    for (auto& t : tensors)
      if (t.name == "model.norm.weight") t.dtype = DType::kI32;  // same byte size as f32
  });
  const Status s = load_error(broken.dir());
  EXPECT_NE(s.message().find("model.norm.weight has dtype i32"), std::string::npos) << s.to_string();
}

TEST(ModelLoadingTest, UntiedWithoutLmHeadIsAnError) {
  BrokenCheckpoint broken("llama_untied_f32", [](auto& tensors) {
    std::erase_if(tensors, [](const TensorToWrite& t) { return t.name == "lm_head.weight"; });
  });
  const Status s = load_error(broken.dir());
  EXPECT_NE(s.message().find("lm_head.weight"), std::string::npos) << s.to_string();
}

TEST(ModelLoadingTest, MissingQkvBiasOfQwen2IsNamed) {
  BrokenCheckpoint broken("qwen2_untied_bf16", [](auto& tensors) {
    std::erase_if(tensors, [](const TensorToWrite& t) { return t.name == "model.layers.0.self_attn.v_proj.bias"; });
  });
  const Status s = load_error(broken.dir());
  EXPECT_NE(s.message().find("model.layers.0.self_attn.v_proj.bias"), std::string::npos) << s.to_string();
}

TEST(ModelLoadingTest, UnknownQuantizationIsUnsupported) {
  BrokenCheckpoint broken(
      "qwen2_tied_f32", [](auto&) {}, "\"vocab_size\"",
      "\"quantization_config\": {\"quant_method\": \"awq\", \"bits\": 4}, \"vocab_size\"");
  const Status s = load_error(broken.dir());
  EXPECT_EQ(s.code(), StatusCode::kUnsupported) << s.to_string();
  EXPECT_NE(s.message().find("awq"), std::string::npos) << s.to_string();
}

TEST(ModelLoadingTest, MissingDirectoryIsAnError) {
  EXPECT_FALSE(Model::load("/nonexistent/crosspoint/model").is_ok());
}

TEST(ModelForwardTest, BadBatchesAreErrorsNotCrashes) {
  auto model = Model::load(model_fixture_dir("qwen2_tied_f32"));
  ASSERT_TRUE(model.is_ok());
  CpuKvCache cache((*model)->kv_cache_shape(4, 4));
  testing::BatchBuilder builder(1, 4, 4);
  ForwardBatch batch = builder.build({{0, {1, 2, 3}}}, false);
  std::vector<float> logits((*model)->vocab_size());
  ASSERT_TRUE((*model)->forward(batch, cache, logits.data()).is_ok());
  const std::vector<int32_t> bad_ids = {1, 999, 3};
  ForwardBatch bad = batch;
  bad.token_ids = bad_ids;
  EXPECT_EQ((*model)->forward(bad, cache, logits.data()).code(), StatusCode::kInvalidArgument);
  const std::vector<int32_t> bad_positions = {0, 1, 5};
  bad = batch;
  bad.positions = bad_positions;
  EXPECT_FALSE((*model)->forward(bad, cache, logits.data()).is_ok());
  const std::vector<int32_t> bad_table = {0, 99, 0, 0};
  bad = builder.build({{0, {4, 5}}}, false);  // context 5: needs blocks 0 and 1
  bad.block_tables = bad_table;
  EXPECT_FALSE((*model)->forward(bad, cache, logits.data()).is_ok());
  CpuKvCache wrong_cache(KvCacheShape{1, 4, 4, 1, 8});
  EXPECT_FALSE((*model)->forward(batch, wrong_cache, logits.data()).is_ok());
}

TEST(CpuKvCacheTest, BlocksAreDisjointAndSized) {
  const KvCacheShape shape{2, 5, 4, 3, 8};
  CpuKvCache cache(shape);
  EXPECT_EQ(cache.total_bytes(), size_t(2 * 2 * 5 * 4 * 3 * 8 * 4));
  EXPECT_EQ(shape.bytes_per_token(DType::kF32), size_t(2 * 2 * 3 * 8 * 4));
  EXPECT_EQ(cache.key_block(1, 2) - cache.keys(1), 2 * 4 * 3 * 8);
  EXPECT_EQ(cache.value_block(0, 4) - cache.values(0), 4 * 4 * 3 * 8);
  EXPECT_NE(cache.keys(0), cache.keys(1));
}

}  // namespace
}  // namespace crosspoint
