// Tensor parallelism of the quantised formats on the CPU: every tiny hub checkpoint and the
// GPTQ, FP8 and INT8 checkpoints `quantize` writes, split over 2 and 4 ranks, against the
// whole model. Weight-only and static-scale formats quantise the same activations on every
// rank, so the split differs by fp32 rounding alone; dynamic per-token scales of the
// row-parallel layers (o_proj, down_proj) are each rank's own, as in vLLM.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <random>

#include "model/tensor_parallel_test_util.h"
#include "quant/gptq_linear_weight.h"
#include "quant/quantize_model.h"

namespace crosspoint {
namespace {

namespace fs = std::filesystem;
using testing::expect_close;
using testing::model_fixture_dir;
using testing::relative_difference;
using testing::split_model_logits;
using testing::whole_model_logits;

Result<std::unique_ptr<Model>> load_quantized(const std::string& dir) {
  ModelLoadOptions options;
  options.linear_formats = quantized_linear_weight_formats();
  return Model::load(dir, options);
}

// The split's logits at each world size that the checkpoint's shape allows; a refused size must
// be refused with an error naming what does not divide.
void expect_splits_match(const Model& model, const std::string& name, float tolerance) {
  const std::vector<float> whole = whole_model_logits(model);
  int splits = 0;
  for (int32_t world : {2, 4}) {
    auto tp = TensorParallelModel::create(model, world);
    if (!tp.is_ok()) {
      EXPECT_EQ(tp.status().code(), StatusCode::kInvalidArgument) << tp.status().to_string();
      std::printf("[ refused  ] %s at %d ranks: %s\n", name.c_str(), world, tp.status().message().c_str());
      continue;
    }
    ++splits;
    const std::vector<float> split = split_model_logits(**tp);
    std::printf("[ split    ] %s at %d ranks: max |whole - split| / (1 + max |whole|) = %.2e\n", name.c_str(), world,
                relative_difference(whole, split));
    expect_close(whole, split, tolerance, name + " at " + std::to_string(world) + " ranks");
  }
  EXPECT_GT(splits, 0) << name << " split at no size";
}

struct HubFixture {
  const char* fixture;
  bool splits;  // false: every size cuts an FP8 weight block, refused as vLLM refuses it
};
void PrintTo(const HubFixture& f, std::ostream* os) { *os << f.fixture; }

class SplitHubCheckpoint : public ::testing::TestWithParam<HubFixture> {};

TEST_P(SplitHubCheckpoint, LogitsEqualTheWholeModels) {
  auto model = load_quantized(model_fixture_dir(GetParam().fixture));
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  if (GetParam().splits) {
    expect_splits_match(**model, GetParam().fixture, 2e-5f);
    return;
  }
  auto tp = TensorParallelModel::create(**model, 2);
  ASSERT_FALSE(tp.is_ok());
  EXPECT_NE(tp.status().message().find("splits a weight block of 32"), std::string::npos) << tp.status().to_string();
}

// qwen2_w8a8_int8's activations are dynamic per token: DynamicActivationScalesAreEachRanksOwn.
INSTANTIATE_TEST_SUITE_P(
    TinyCheckpoints, SplitHubCheckpoint,
    ::testing::Values(HubFixture{"qwen2_w4a16_packed_g64", true}, HubFixture{"llama_w4a16_packed_asym_channel", true},
                      HubFixture{"qwen2_awq_gemm_g32", true}, HubFixture{"llama_w8a8_fp8_static", true},
                      HubFixture{"qwen2_w8a8_fp8_block32", false}, HubFixture{"llama_w8a8_fp8_block32_ct", false}));

class QuantizedCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("crosspoint_tp_" + std::to_string(::getpid()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // `fixture` quantised by `quantize_model` with `scheme`; GPTQ calibrated on random tokens.
  std::string quantize(const std::string& fixture, QuantizeScheme scheme, const Int4QuantOptions& int4 = {}) {
    QuantizeModelOptions o;
    o.model_dir = model_fixture_dir(fixture);
    o.out_dir = (root_ / (fixture + "_" + std::to_string(static_cast<int>(scheme)))).string();
    o.scheme = scheme;
    o.int4 = int4;
    std::mt19937 rng(7);
    for (int s = 0; s < 4; ++s) {
      std::vector<int32_t> tokens(32);
      for (int32_t& t : tokens) t = static_cast<int32_t>(rng() % 150);
      o.calibration.push_back(tokens);
    }
    const Status s = quantize_model(o);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    return o.out_dir;
  }

  fs::path root_;
};

TEST_F(QuantizedCheckpoint, GptqActOrderSplitsItsScatteredGroups) {
  Int4QuantOptions int4;
  int4.group_size = 32;
  int4.act_order = true;  // dynamic groups: g_idx scattered over the rows
  auto model = load_quantized(quantize("llama_tied_f16", QuantizeScheme::kW4A16, int4));
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const auto* down = dynamic_cast<const GptqLinearWeight*>((*model)->layers()[0].down_proj.get());
  ASSERT_NE(down, nullptr);
  ASSERT_NE(std::get<Int4GroupWeightStorage>(down->view().storage).k_perm, nullptr) << "act order not in effect";
  expect_splits_match(**model, "llama_tied_f16 GPTQ act-order g32", 2e-5f);
}

TEST_F(QuantizedCheckpoint, GptqInOrderSplitsWholeAndPartialGroups) {
  Int4QuantOptions int4;
  int4.group_size = 64;  // intermediate 128: whole groups at 2 ranks, halves at 4
  auto model = load_quantized(quantize("qwen2_tied_f32", QuantizeScheme::kW4A16, int4));
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  expect_splits_match(**model, "qwen2_tied_f32 GPTQ g64", 2e-5f);
}

// Per-token dynamic scales: a row-parallel rank scales its own slice of each token, so its codes
// differ from the whole model's by at most a rounding step each. The split must stay nearer to
// the whole quantised model than that model is to its dense source (a wrong cut lands far away).
TEST_F(QuantizedCheckpoint, DynamicActivationScalesAreEachRanksOwn) {
  auto dense = Model::load(model_fixture_dir("qwen2_tied_f32"));
  ASSERT_TRUE(dense.is_ok()) << dense.status().to_string();
  const std::vector<float> dense_logits = whole_model_logits(**dense);
  for (QuantizeScheme scheme : {QuantizeScheme::kW8A8Fp8, QuantizeScheme::kW8A8Int8}) {
    const std::string name = scheme == QuantizeScheme::kW8A8Fp8 ? "FP8-dynamic" : "INT8-dynamic";
    auto model = load_quantized(quantize("qwen2_tied_f32", scheme));
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    const std::vector<float> whole = whole_model_logits(**model);
    const float format_error = relative_difference(dense_logits, whole);
    for (int32_t world : {2, 4}) {
      auto tp = TensorParallelModel::create(**model, world);
      ASSERT_TRUE(tp.is_ok()) << tp.status().to_string();
      const float split_error = relative_difference(whole, split_model_logits(**tp));
      std::printf("[ split    ] %s at %d ranks: %.2e from the whole model, which is %.2e from dense\n", name.c_str(),
                  world, split_error, format_error);
      EXPECT_GT(split_error, 0.0f) << name << ": the ranks' own scales must change something";
      EXPECT_LT(split_error, format_error) << name << " at " << world << " ranks";
    }
  }
}

}  // namespace
}  // namespace crosspoint
