// W4A16 checkpoints in hub layouts (compressed-tensors pack-quantized, made by the library:
// tests/fixtures/model/make_quantized_checkpoints.py) on the GPU against the CPU model, in the
// GPU's dtype flow; the asymmetric ones are refused on the GPU with a message naming why.
// Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "model/cuda/cuda_model.h"
#include "model/model.h"
#include "model/model_test_util.h"
#include "model_cuda/cuda_test_util.h"
#include "quant/gptq_linear_weight.h"

namespace crosspoint {
namespace {

std::unique_ptr<Model> load_cpu(const std::string& fixture) {
  ModelLoadOptions options;
  options.linear_formats = quantized_linear_weight_formats();
  options.fp16_activations = true;
  auto model = Model::load(testing::model_fixture_dir(fixture), options);
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  return model.is_ok() ? std::move(model).value() : nullptr;
}

cuda::CudaModelOptions small_options() {
  cuda::CudaModelOptions options;
  options.max_num_tokens = 32;
  options.max_num_seqs = 2;
  options.max_num_logits = 32;
  options.max_model_len = 64;
  options.num_kv_blocks = 8;
  return options;
}

TEST(HubInt4CheckpointsOnCuda, PackQuantizedMatchesTheCpuInTheGpuDtypeFlow) {
  SKIP_WITHOUT_GPU();
  auto cpu = load_cpu("qwen2_w4a16_packed_g64");
  ASSERT_NE(cpu, nullptr);
  auto gpu = cuda::CudaModel::create(*cpu, small_options());
  ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
  const testing::TransformersReference ref = testing::load_reference("qwen2_w4a16_packed_g64");
  testing::BatchBuilder builder(1, 4, 16);
  const ForwardBatch batch = builder.build({{0, ref.token_ids}}, /*all_logits=*/true);
  const int64_t V = cpu->vocab_size(), rows = static_cast<int64_t>(batch.logits_token_idx.size());
  CpuKvCache cache(cpu->kv_cache_shape(8, 16));
  std::vector<float> cpu_logits(rows * V), gpu_logits(rows * V, NAN);
  ASSERT_TRUE(cpu->forward(batch, cache, cpu_logits.data()).is_ok());
  const Status s = (*gpu)->forward_host(batch, gpu_logits.data());
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  for (int64_t r = 0; r < rows; ++r) {
    float scale = 0.0f, worst = 0.0f;
    for (int64_t v = 0; v < V; ++v) {
      scale = std::max(scale, std::fabs(cpu_logits[r * V + v]));
      worst = std::max(worst, std::fabs(cpu_logits[r * V + v] - gpu_logits[r * V + v]));
    }
    // The fp16/W4A16 tolerance of test_cuda_model.cc's GPU-flow comparison.
    EXPECT_LE(worst, 5e-3f * scale) << "row " << r;
  }
}

TEST(HubInt4CheckpointsOnCuda, AsymmetricZeroPointsAreRefusedNamingTheTensor) {
  SKIP_WITHOUT_GPU();
  for (const char* fixture : {"llama_w4a16_packed_asym_channel", "qwen2_awq_gemm_g32"}) {
    auto cpu = load_cpu(fixture);
    ASSERT_NE(cpu, nullptr);
    auto gpu = cuda::CudaModel::create(*cpu, small_options());
    ASSERT_FALSE(gpu.is_ok()) << fixture;
    EXPECT_EQ(gpu.status().code(), StatusCode::kUnsupported) << gpu.status().to_string();
  }
}

}  // namespace
}  // namespace crosspoint
