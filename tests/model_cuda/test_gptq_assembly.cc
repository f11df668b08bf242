// The host half of the CUDA W4A16 upload (runs without a GPU): the fused q|k|v and gate|up
// GPTQ weights, after concatenation and w4a16_repack (and w4a16_pack_zeros for asymmetric
// ones), decode (through the layout documented in kernels/cuda/w4a16_gemm.h) to exactly the
// weights the CPU format dequantises per part.
#include <gtest/gtest.h>

#include "common/dtype.h"
#include "model/cuda/cuda_linear.h"
#include "model/model_test_util.h"
#include "model/tensor_parallel_model.h"
#include "model_cuda/tiny_checkpoints.h"
#include "quant/gptq_linear_weight.h"

namespace crosspoint {
namespace {

using cuda_testing::TinyCheckpoints;
using cuda_testing::TinyPrecision;

// W[k, n] in checkpoint row order, [K, N] f32, from the packed layout: word (nb, kc, lane, j)
// holds the 16x16 tile at k = kc*64 + j*16, n = nb*16; nibble i of lane (c = lane/4,
// k0 = 2*(lane%4)) is row k0 + {0, 8, 0, 8, 1, 9, 1, 9}[i], column c + {0, 0, 8, 8, 0, 0, 8, 8}[i].
std::vector<float> decode_packed(const cuda::W4A16PackedWeight& p) {
  const int K = p.num_in_features, N = p.num_out_features, G = p.group_size;
  static constexpr int kRow[8] = {0, 8, 0, 8, 1, 9, 1, 9}, kCol[8] = {0, 0, 8, 8, 0, 0, 8, 8};
  std::vector<float> w(static_cast<size_t>(K) * N);
  for (int nb = 0; nb < N / 16; ++nb)
    for (int kc = 0; kc < K / 64; ++kc)
      for (int lane = 0; lane < 32; ++lane)
        for (int j = 0; j < 4; ++j) {
          const uint32_t word = p.weight[((static_cast<size_t>(nb) * (K / 64) + kc) * 32 + lane) * 4 + j];
          for (int i = 0; i < 8; ++i) {
            const int row = kc * 64 + j * 16 + (lane % 4) * 2 + kRow[i];  // packed (sorted) row
            const int col = nb * 16 + lane / 4 + kCol[i];
            const int q = static_cast<int>((word >> (4 * i)) & 0xF);
            const int g = row / G;
            const uint32_t pair = p.scales[(static_cast<size_t>(g) * (N / 16) + nb) * 8 + (col % 16) % 8];
            const uint16_t s =
                (col % 16) < 8 ? static_cast<uint16_t>(pair & 0xFFFF) : static_cast<uint16_t>(pair >> 16);
            const int k = p.k_perm.empty() ? row : p.k_perm[row];
            int z = 8;  // packed zeros hold 1024 + z as fp16: 0x6400 + z
            if (!p.zeros.empty()) {
              const uint32_t zp = p.zeros[(static_cast<size_t>(g) * (N / 16) + nb) * 8 + (col % 16) % 8];
              z = static_cast<int>(((col % 16) < 8 ? zp & 0xFFFF : zp >> 16) - 0x6400u);
            }
            w[static_cast<size_t>(k) * N + col] = f16_to_f32(s) * static_cast<float>(q - z);
          }
        }
  return w;
}

void expect_fused_matches_parts(const std::vector<cuda::LinearPart>& parts, bool act_order) {
  auto packed = cuda::assemble_fused_gptq(parts, "fused");
  ASSERT_TRUE(packed.is_ok()) << packed.status().to_string();
  EXPECT_EQ(packed->k_perm.empty(), !act_order);
  const std::vector<float> fused = decode_packed(*packed);
  const int64_t K = packed->num_in_features, N = packed->num_out_features;
  int64_t col = 0;
  for (const auto& part : parts) {
    const auto* gptq = dynamic_cast<const GptqLinearWeight*>(part.weight);
    ASSERT_NE(gptq, nullptr) << part.prefix;
    const std::vector<float> w = gptq->dequantize();  // [K, N_part]
    const int64_t n_part = gptq->out_features();
    int64_t mismatches = 0;
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < n_part; ++n) mismatches += w[k * n_part + n] != fused[k * N + col + n];
    EXPECT_EQ(mismatches, 0) << part.prefix;
    col += n_part;
  }
  EXPECT_EQ(col, N);
}

TEST(GptqAssemblyTest, FusedLayersDecodeToTheCpuWeights) {
  for (TinyPrecision precision : {TinyPrecision::kW4A16Rtn, TinyPrecision::kW4A16GptqActOrder}) {
    auto dir = TinyCheckpoints::get().dir(precision);
    ASSERT_TRUE(dir.is_ok()) << dir.status().to_string();
    ModelLoadOptions options;
    options.linear_formats = quantized_linear_weight_formats();
    auto model = Model::load(*dir, options);
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    const bool act_order = precision == TinyPrecision::kW4A16GptqActOrder;
    for (int layer = 0; layer < 2; ++layer) {
      const DecoderLayerWeights& w = (*model)->layers()[layer];
      const std::string p = "model.layers." + std::to_string(layer) + ".";
      expect_fused_matches_parts({{p + "self_attn.q_proj", w.q_proj.get()},
                                  {p + "self_attn.k_proj", w.k_proj.get()},
                                  {p + "self_attn.v_proj", w.v_proj.get()}},
                                 act_order);
      expect_fused_matches_parts({{p + "mlp.gate_proj", w.gate_proj.get()}, {p + "mlp.up_proj", w.up_proj.get()}},
                                 act_order);
      expect_fused_matches_parts({{p + "mlp.down_proj", w.down_proj.get()}}, act_order);
    }
  }
}

// Checkpoints with zero points: compressed-tensors pack-quantized (asymmetric, one group per
// channel) and AutoAWQ's layout (groups of 32): the zero points ride along into the packed layout.
TEST(GptqAssemblyTest, AsymmetricLayersDecodeToTheCpuWeights) {
  for (const char* fixture : {"llama_w4a16_packed_asym_channel", "qwen2_awq_gemm_g32"}) {
    ModelLoadOptions options;
    options.linear_formats = quantized_linear_weight_formats();
    auto model = Model::load(testing::model_fixture_dir(fixture), options);
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    const DecoderLayerWeights& w = (*model)->layers()[0];
    auto packed =
        cuda::assemble_fused_gptq({{"q", w.q_proj.get()}, {"k", w.k_proj.get()}, {"v", w.v_proj.get()}}, "qkv");
    ASSERT_TRUE(packed.is_ok()) << fixture << ": " << packed.status().to_string();
    EXPECT_FALSE(packed->zeros.empty()) << fixture << ": the zero points are not all 8";
    expect_fused_matches_parts({{"q", w.q_proj.get()}, {"k", w.k_proj.get()}, {"v", w.v_proj.get()}}, false);
    expect_fused_matches_parts({{"gate", w.gate_proj.get()}, {"up", w.up_proj.get()}}, false);
    expect_fused_matches_parts({{"down", w.down_proj.get()}}, false);
  }
}

// An act-order weight's row shard (tensor parallelism) keeps a group index per row: refused with
// a message naming the linear, where a group size of 0 would otherwise divide by zero.
TEST(GptqAssemblyTest, RefusesAnActOrderRowShard) {
  auto dir = TinyCheckpoints::get().dir(TinyPrecision::kW4A16GptqActOrder);
  ASSERT_TRUE(dir.is_ok()) << dir.status().to_string();
  ModelLoadOptions options;
  options.linear_formats = quantized_linear_weight_formats();
  auto model = Model::load(*dir, options);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  auto tp = TensorParallelModel::create(**model, 2);
  ASSERT_TRUE(tp.is_ok()) << tp.status().to_string();
  const LinearWeight* o_proj = (*tp)->share(1).layers[0].o_proj;
  auto packed =
      cuda::assemble_fused_gptq({{"model.layers.0.self_attn.o_proj", o_proj}}, "model.layers.0.self_attn.o_proj");
  ASSERT_FALSE(packed.is_ok());
  EXPECT_EQ(packed.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(packed.status().to_string().find("o_proj"), std::string::npos) << packed.status().to_string();
  EXPECT_NE(packed.status().to_string().find("act-order"), std::string::npos) << packed.status().to_string();
}

}  // namespace
}  // namespace crosspoint
