// GGUF -> HF conversion. The tiny fixtures are HF checkpoints converted to GGUF the way
// llama.cpp's convert_hf_to_gguf.py does (with its Q/K row permutation for llama); the
// conversion back must give the original tensors bit for bit and an equivalent config.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "formats/gguf_to_hf.h"
#include "formats/model_config.h"
#include "formats/safetensors.h"
#include "formats_test_util.h"

namespace crosspoint {
namespace {

using testing::fixture;
using testing::ScratchDir;

void expect_same_config(const ModelConfig& got, const ModelConfig& want) {
  EXPECT_EQ(got.architecture, want.architecture);
  EXPECT_EQ(got.architecture_name, want.architecture_name);
  EXPECT_EQ(got.hidden_size, want.hidden_size);
  EXPECT_EQ(got.intermediate_size, want.intermediate_size);
  EXPECT_EQ(got.num_hidden_layers, want.num_hidden_layers);
  EXPECT_EQ(got.num_attention_heads, want.num_attention_heads);
  EXPECT_EQ(got.num_key_value_heads, want.num_key_value_heads);
  EXPECT_EQ(got.head_dim, want.head_dim);
  EXPECT_EQ(got.vocab_size, want.vocab_size);
  EXPECT_EQ(got.max_position_embeddings, want.max_position_embeddings);
  EXPECT_EQ(got.rope_theta, want.rope_theta);
  EXPECT_EQ(got.rms_norm_eps, want.rms_norm_eps);
  EXPECT_EQ(got.tie_word_embeddings, want.tie_word_embeddings);
  EXPECT_EQ(got.attention_bias, want.attention_bias);
  EXPECT_EQ(got.eos_token_ids, want.eos_token_ids);
  EXPECT_EQ(got.bos_token_id, want.bos_token_id);
  EXPECT_EQ(got.torch_dtype, "float16");
}

void expect_round_trip(const std::string& arch) {
  const std::string hf_dir = fixture("tiny_" + arch);
  auto gguf = GgufFile::open(hf_dir + "/model.gguf");
  ASSERT_TRUE(gguf.is_ok()) << gguf.status().to_string();
  ScratchDir out;
  GgufConversionSummary summary;
  Status status = convert_gguf_to_hf(*gguf, out.path(), &summary);
  ASSERT_TRUE(status.is_ok()) << status.to_string();

  auto original = SafetensorsModel::open_dir(hf_dir);
  auto converted = SafetensorsModel::open_dir(out.path());
  ASSERT_TRUE(original.is_ok() && converted.is_ok());
  EXPECT_EQ((*converted)->tensor_names(), (*original)->tensor_names());
  EXPECT_EQ(summary.num_tensors, (*original)->tensor_names().size());
  EXPECT_EQ(summary.num_bytes, (*original)->total_bytes());
  for (const std::string& name : (*original)->tensor_names()) {
    SCOPED_TRACE(name);
    const TensorInfo* want = (*original)->find(name);
    const TensorInfo* got = (*converted)->find(name);
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(got->dtype, DType::kF16);
    EXPECT_EQ(got->shape, want->shape);
    ASSERT_EQ(got->num_bytes, want->num_bytes);
    EXPECT_EQ(std::memcmp(got->data, want->data, want->num_bytes), 0) << "tensor bytes differ";
  }

  auto want_config = load_model_config(hf_dir);
  auto got_config = load_model_config(out.path());
  ASSERT_TRUE(want_config.is_ok()) << want_config.status().to_string();
  ASSERT_TRUE(got_config.is_ok()) << got_config.status().to_string();
  expect_same_config(*got_config, *want_config);
  EXPECT_EQ(summary.architecture_name, want_config->architecture_name);
}

TEST(GgufToHf, LlamaRoundTripUndoesTheQkPermutation) { expect_round_trip("llama"); }
TEST(GgufToHf, Qwen2RoundTripTiedWithBiases) { expect_round_trip("qwen2"); }

TEST(GgufToHf, WithoutUnpermutingTheLlamaWeightsWouldDiffer) {
  // Guards the test above: the fixture's q_proj really is stored permuted in the GGUF.
  auto gguf = GgufFile::open(fixture("tiny_llama/model.gguf"));
  auto hf = SafetensorsModel::open_dir(fixture("tiny_llama"));
  ASSERT_TRUE(gguf.is_ok() && hf.is_ok());
  auto raw = gguf_dequantize(*gguf->find_tensor("blk.0.attn_q.weight"));
  ASSERT_TRUE(raw.is_ok());
  const TensorInfo* want = (*hf)->find("model.layers.0.self_attn.q_proj.weight");
  std::vector<uint16_t> as_f16(raw->size());
  for (size_t i = 0; i < raw->size(); ++i) as_f16[i] = f32_to_f16((*raw)[i]);
  EXPECT_NE(std::memcmp(as_f16.data(), want->data, want->num_bytes), 0);
}

TEST(GgufToHf, UnpermuteInvertsLlamaCppPermutation) {
  // llama.cpp: w.reshape(H, 2, D/2, K).swapaxes(1, 2).reshape(H*D, K); rows labelled by value.
  const int64_t heads = 3, head_dim = 6, cols = 2, rows = heads * head_dim;
  std::vector<float> hf(rows * cols);
  std::iota(hf.begin(), hf.end(), 0.0f);
  std::vector<float> permuted(hf.size());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < head_dim / 2; ++i)
      for (int64_t j = 0; j < 2; ++j)
        for (int64_t c = 0; c < cols; ++c)
          permuted[((h * head_dim) + i * 2 + j) * cols + c] = hf[((h * head_dim) + j * (head_dim / 2) + i) * cols + c];
  std::vector<float> back(hf.size());
  unpermute_llama_rope_rows(permuted.data(), back.data(), rows, cols, heads);
  EXPECT_EQ(back, hf);
  // Head 0 rows in GGUF order are HF rows 0, 3, 1, 4, 2, 5.
  EXPECT_EQ(permuted[1 * cols], hf[3 * cols]);
}

TEST(GgufToHf, TensorNames) {
  EXPECT_EQ(hf_tensor_name("token_embd.weight"), "model.embed_tokens.weight");
  EXPECT_EQ(hf_tensor_name("output.weight"), "lm_head.weight");
  EXPECT_EQ(hf_tensor_name("output_norm.weight"), "model.norm.weight");
  EXPECT_EQ(hf_tensor_name("blk.12.attn_k.bias"), "model.layers.12.self_attn.k_proj.bias");
  EXPECT_EQ(hf_tensor_name("blk.0.ffn_norm.weight"), "model.layers.0.post_attention_layernorm.weight");
  EXPECT_EQ(hf_tensor_name("blk.0.attn_output.weight"), "model.layers.0.self_attn.o_proj.weight");
  EXPECT_EQ(hf_tensor_name("rope_freqs.weight"), "");
  EXPECT_EQ(hf_tensor_name("blk.x.attn_q.weight"), "");
}

TEST(GgufToHf, RefusesOtherArchitectures) {
  auto gguf = GgufFile::open(fixture("gguf_types.gguf"));  // general.architecture = "testarch"
  ASSERT_TRUE(gguf.is_ok());
  ScratchDir out;
  Status status = convert_gguf_to_hf(*gguf, out.path(), nullptr);
  EXPECT_EQ(status.code(), StatusCode::kUnsupported);
  EXPECT_NE(status.message().find("general.architecture \"testarch\" is not supported"), std::string::npos)
      << status.message();
}

}  // namespace
}  // namespace crosspoint
