// The real default model's GGUF (fetched by scripts/setup.sh): its metadata, and Q4_1 /
// Q8_0 rows dequantised by us equal gguf-py's dequantisation (smollm2_sample.safetensors).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "common/paths.h"
#include "formats/gguf.h"
#include "formats/gguf_to_hf.h"
#include "formats/safetensors.h"
#include "formats_test_util.h"
#include "test_assets.h"

namespace crosspoint {
namespace {

class SmolLM2Gguf : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = cache_dir() + "/gguf/SmolLM2-135M-Instruct.Q4_1.gguf";
    CROSSPOINT_REQUIRE_ASSET(path);
    auto file = GgufFile::open(path);
    ASSERT_TRUE(file.is_ok()) << file.status().to_string();
    gguf_ = std::make_unique<GgufFile>(std::move(file).value());
  }
  std::unique_ptr<GgufFile> gguf_;
};

TEST_F(SmolLM2Gguf, ArchitectureMetadata) {
  const GgufFile& g = *gguf_;
  EXPECT_EQ(g.get_string("general.architecture").value(), "llama");
  EXPECT_EQ(g.get_int("llama.block_count").value(), 30);
  EXPECT_EQ(g.get_int("llama.embedding_length").value(), 576);
  EXPECT_EQ(g.get_int("llama.feed_forward_length").value(), 1536);
  EXPECT_EQ(g.get_int("llama.attention.head_count").value(), 9);
  EXPECT_EQ(g.get_int("llama.attention.head_count_kv").value(), 3);
  EXPECT_EQ(g.get_int("llama.context_length").value(), 8192);
  EXPECT_EQ(g.get_int("llama.rope.dimension_count").value(), 64);
  EXPECT_EQ(g.get_float("llama.rope.freq_base").value(), 100000.0);
  EXPECT_EQ(g.get_string("tokenizer.ggml.model").value(), "gpt2");
  EXPECT_EQ(g.get_string_array("tokenizer.ggml.tokens").value().size(), 49152u);
  EXPECT_EQ(g.get_int("tokenizer.ggml.bos_token_id").value(), 1);
  EXPECT_EQ(g.get_int("tokenizer.ggml.eos_token_id").value(), 2);
  EXPECT_EQ(g.tensors().size(), 272u);
  EXPECT_EQ(g.find_tensor("token_embd.weight")->type, GgmlType::kQ8_0);
  EXPECT_EQ(g.find_tensor("blk.0.attn_q.weight")->type, GgmlType::kQ4_1);
  EXPECT_EQ(g.find_tensor("output.weight"), nullptr);  // tied embeddings

  auto config_text = hf_config_json_from_gguf(g);
  ASSERT_TRUE(config_text.is_ok()) << config_text.status().to_string();
  const auto config = nlohmann::json::parse(config_text.value());
  EXPECT_EQ(config["architectures"][0], "LlamaForCausalLM");
  EXPECT_EQ(config["num_key_value_heads"], 3);
  EXPECT_EQ(config["head_dim"], 64);
  EXPECT_EQ(config["vocab_size"], 49152);
  EXPECT_EQ(config["tie_word_embeddings"], true);
  EXPECT_EQ(config["rms_norm_eps"], 1e-05);
  EXPECT_EQ(config["rope_theta"], 100000.0);
}

TEST_F(SmolLM2Gguf, DequantisedRowsMatchGgufPy) {
  auto sample = SafetensorsFile::open(testing::fixture("smollm2_sample.safetensors"));
  ASSERT_TRUE(sample.is_ok()) << sample.status().to_string();
  ASSERT_GE(sample->tensors().size(), 4u);
  for (const auto& [name, want] : sample->tensors()) {
    SCOPED_TRACE(name);
    const GgufTensor* tensor = gguf_->find_tensor(name);
    ASSERT_NE(tensor, nullptr);
    ASSERT_EQ(want.shape.back(), static_cast<int64_t>(tensor->dims[0]));
    std::vector<float> rows(want.num_elements());  // [num_rows, row_elements] fp32
    ASSERT_TRUE(gguf_dequantize_range(*tensor, 0, rows.size(), rows.data()).is_ok());
    for (size_t i = 0; i < rows.size(); ++i) {
      float w;
      std::memcpy(&w, want.data + 4 * i, 4);
      ASSERT_NEAR(rows[i], w, 1e-6f * std::max(1.0f, std::fabs(w))) << "element " << i;
    }
  }
}

}  // namespace
}  // namespace crosspoint
