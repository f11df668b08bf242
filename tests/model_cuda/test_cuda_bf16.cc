// The GPU's bf16 flow (serve --dtype bfloat16) on the tiny bf16 checkpoint transformers made
// (tests/fixtures/model/qwen2_untied_bf16): the CUDA model with activation_dtype kBF16 against the
// CPU model in the bf16 flow (ModelLoadOptions::activation_dtype bfloat16: every activation
// rounded to bf16 where the GPU stores it), a prefill of the reference sequence and decode steps
// after it; and what bf16 refuses on the GPU. Skips without a GPU.
//
// Tolerance: the two flows round the same activations to bf16; where an fp32 sum order differs
// by an ulp across a bf16 rounding boundary, the value moves by a bf16 ulp (2^-8 relative),
// which the next layers carry. 2e-2 of each row's logit scale: the fp16 flow's 5e-3 scaled by
// bf16's 8x coarser rounding, halved (fewer flips reach the logits than there are roundings).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "model/cuda/cuda_model.h"
#include "model/model.h"
#include "model/model_test_util.h"
#include "model_cuda/cuda_test_util.h"
#include "quant/gptq_linear_weight.h"

namespace crosspoint {
namespace {

constexpr const char* kCheckpoint = "qwen2_untied_bf16";
constexpr float kBf16FlowTolerance = 2e-2f;

std::unique_ptr<Model> load_cpu(ActivationDtype dtype) {
  ModelLoadOptions options;
  options.activation_dtype = dtype;
  auto model = Model::load(testing::model_fixture_dir(kCheckpoint), options);
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  return model.is_ok() ? std::move(model).value() : nullptr;
}

cuda::CudaModelOptions bf16_options() {
  cuda::CudaModelOptions options;
  options.max_num_tokens = 32;
  options.max_num_seqs = 2;
  options.max_num_logits = 32;
  options.max_model_len = 64;
  options.activation_dtype = DType::kBF16;
  return options;
}

// max |gpu - cpu| / max |cpu| over each row, the worst row.
float worst_row_ratio(const std::vector<float>& cpu, const std::vector<float>& gpu, int64_t vocab) {
  float worst_ratio = 0.0f;
  for (size_t r = 0; r < cpu.size() / vocab; ++r) {
    float scale = 0.0f, worst = 0.0f;
    for (int64_t v = 0; v < vocab; ++v) {
      scale = std::max(scale, std::fabs(cpu[r * vocab + v]));
      worst = std::max(worst, std::fabs(gpu[r * vocab + v] - cpu[r * vocab + v]));
    }
    worst_ratio = std::max(worst_ratio, worst / scale);
  }
  return worst_ratio;
}

TEST(CudaBf16, PrefillAndDecodeMatchTheCpuBf16Flow) {
  SKIP_WITHOUT_GPU();
  auto cpu = load_cpu(ActivationDtype::kBFloat16);
  ASSERT_NE(cpu, nullptr);
  auto gpu = cuda_testing::make_cuda_model(*cpu, bf16_options(), 8);
  ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
  EXPECT_EQ(gpu->model->activation_dtype(), DType::kBF16);
  EXPECT_EQ(gpu->kv.shape().dtype, DType::kBF16);
  const testing::TransformersReference ref = testing::load_reference(kCheckpoint);
  const int64_t V = cpu->vocab_size();
  CpuKvCache cache(cpu->kv_cache_shape(8, 16));
  testing::BatchBuilder builder(1, 4, 16);

  // Prefill: every row's logits. Decode: three steps feeding the CPU's greedy token.
  std::vector<int32_t> chunk = ref.token_ids;
  float worst = 0.0f;
  for (int step = 0; step < 4; ++step) {
    const ForwardBatch batch = builder.build({{0, chunk}}, /*all_logits=*/true);
    const int64_t rows = static_cast<int64_t>(batch.logits_token_idx.size());
    std::vector<float> cpu_logits(rows * V), gpu_logits(rows * V, NAN);
    ASSERT_TRUE(cpu->forward(batch, cache, cpu_logits.data()).is_ok());
    const Status s = gpu->forward_host(batch, gpu_logits.data());
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    // The GPU's logits are bf16 values (an fp16 flow would leave low bits set).
    for (float v : gpu_logits) {
      uint32_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      ASSERT_EQ(bits & 0xffffu, 0u) << v << " is not a bf16 value";
    }
    const float ratio = worst_row_ratio(cpu_logits, gpu_logits, V);
    std::printf("step %d (%lld rows): max |gpu - cpu| / logit scale %.4f\n", step, static_cast<long long>(rows), ratio);
    EXPECT_LE(ratio, kBf16FlowTolerance) << "step " << step;
    worst = std::max(worst, ratio);
    const float* last = cpu_logits.data() + (rows - 1) * V;
    chunk = {static_cast<int32_t>(std::max_element(last, last + V) - last)};
  }
  std::printf("bf16 GPU against the CPU's bf16 flow: worst %.4f of the logit scale\n", worst);
}

TEST(CudaBf16, QuantisedLinearsAndAnFp8CacheAreRefused) {
  SKIP_WITHOUT_GPU();
  auto w4a16 = cuda_testing::load_tiny_model(cuda_testing::TinyPrecision::kW4A16Rtn);
  ASSERT_NE(w4a16, nullptr);
  auto created = cuda::CudaModel::create(*w4a16, bf16_options());
  ASSERT_FALSE(created.is_ok());
  EXPECT_EQ(created.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(created.status().message().find("bfloat16"), std::string::npos) << created.status().message();

  auto dense = load_cpu(ActivationDtype::kFloat32);
  ASSERT_NE(dense, nullptr);
  cuda::CudaModelOptions fp8_cache = bf16_options();
  fp8_cache.kv_fp8 = true;
  created = cuda::CudaModel::create(*dense, fp8_cache);
  ASSERT_FALSE(created.is_ok());
  EXPECT_NE(created.status().message().find("fp8"), std::string::npos) << created.status().message();
}

}  // namespace
}  // namespace crosspoint
