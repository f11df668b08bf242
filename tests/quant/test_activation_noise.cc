// How much a precision's logprobs move when every activation is off by one f32 ulp before it is
// rounded to fp16 (ModelLoadOptions::activation_noise_seed): the size of the difference any two
// implementations of the same dtype flow show, since they differ at least that much (summation
// order, library exp). On the default model's real weights, in the GPU's dtype flow, over the
// text of the llama.cpp fixtures: fp16 must stay within the GPU-against-CPU tolerance of FP16
// (docs/quantization.md, "GPU against CPU") and W4A16 near it; W8A8-FP8, whose e4m3 inputs keep
// 3 mantissa bits, and an e4m3 KV cache move by far more. The measured moves are the
// tolerances of the GPU-against-CPU check (benchmarks/gpu/check_gpu_vs_cpu.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <unistd.h>

#include "common/paths.h"
#include "model/model.h"
#include "model/model_test_util.h"
#include "quant/eval_metrics.h"
#include "quant/gptq_linear_weight.h"
#include "quant/quantize_model.h"
#include "test_assets.h"

namespace crosspoint {
namespace {

// The FP16 tolerance of docs/quantization.md's GPU-against-CPU check: mean |delta logprob|.
constexpr double kFp16Tolerance = 0.005;
// Under the sanitizers the forward passes take minutes: fp16 and W8A8-FP8 with seed 1 only.
#ifdef CROSSPOINT_SANITIZED_BINARY
constexpr bool kShort = true;
#else
constexpr bool kShort = false;
#endif

// Real text: the prompts and llama.cpp's continuations of the committed fixture, one sequence.
std::vector<int32_t> fixture_text() {
  std::ifstream in(testing::model_fixture_dir("smollm2_llamacpp") + "/greedy_f16.json");
  std::vector<int32_t> tokens;
  if (!in) return tokens;
  const auto j = nlohmann::json::parse(in);
  for (const auto& s : j["sequences"]) {
    for (int32_t t : s["prompt_ids"].get<std::vector<int32_t>>()) tokens.push_back(t);
    for (int32_t t : s["generated_ids"].get<std::vector<int32_t>>()) tokens.push_back(t);
  }
  return tokens;
}

// log p(token i + 1 | tokens 0..i) for every position, from one prefill of the whole text.
std::vector<double> next_token_logprobs(const Model& model, const std::vector<int32_t>& tokens, DType kv_dtype) {
  constexpr int32_t kBlockSize = 16;
  const int32_t blocks = static_cast<int32_t>(tokens.size()) / kBlockSize + 1;
  CpuKvCache cache(model.kv_cache_shape(blocks, kBlockSize, kv_dtype));
  testing::BatchBuilder builder(1, blocks, kBlockSize);
  const ForwardBatch batch = builder.build({{0, tokens}}, /*all_logits=*/true);
  const int64_t V = model.vocab_size();
  std::vector<float> logits(tokens.size() * V);
  const Status s = model.forward(batch, cache, logits.data());
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  std::vector<double> out;
  for (size_t i = 0; i + 1 < tokens.size(); ++i) out.push_back(-token_nll(logits.data() + i * V, V, tokens[i + 1]));
  return out;
}

double mean_abs_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double total = 0.0;
  for (size_t i = 0; i < a.size(); ++i) total += std::fabs(a[i] - b[i]);
  return a.empty() ? 0.0 : total / static_cast<double>(a.size());
}

std::unique_ptr<Model> load(const std::string& dir, uint64_t noise_seed) {
  ModelLoadOptions options;
  options.linear_formats = quantized_linear_weight_formats();
  options.activation_dtype = ActivationDtype::kFloat16;
  options.activation_noise_seed = noise_seed;
  auto model = Model::load(dir, options);
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  return model.is_ok() ? std::move(model).value() : nullptr;
}

// The mean |delta logprob| of seeds 1-3 against no noise, each printed; kv_dtype kF8E4M3: an
// e4m3 KV cache (--kv-cache-dtype fp8).
std::vector<double> noise_differences(const std::string& dir, const std::vector<int32_t>& tokens, DType kv_dtype,
                                      const char* label) {
  auto plain = load(dir, 0);
  if (plain == nullptr) return {};
  const std::vector<double> base = next_token_logprobs(*plain, tokens, kv_dtype);
  // The noise is a function of the seed: the same seed gives the same bits.
  auto again = load(dir, 1);
  if (again == nullptr) return {};
  const std::vector<double> first = next_token_logprobs(*again, tokens, kv_dtype);
  std::vector<double> out;
  for (uint64_t seed : {1, 2, 3}) {
    if (kShort && seed > 1) break;
    auto noisy = load(dir, seed);
    if (noisy == nullptr) return {};
    const std::vector<double> moved = next_token_logprobs(*noisy, tokens, kv_dtype);
    if (seed == 1) EXPECT_EQ(moved, first) << label << ": seed 1 twice";
    out.push_back(mean_abs_difference(base, moved));
    std::printf("[ noise    ] %s, seed %llu: mean |delta logprob| %.5f over %zu positions\n", label,
                static_cast<unsigned long long>(seed), out.back(), base.size());
  }
  return out;
}

// The default model quantised into a temporary folder, removed with it.
struct QuantisedCopy {
  std::filesystem::path dir;
  QuantisedCopy(const std::string& dense_dir, QuantizeModelOptions options, const std::string& name)
      : dir(std::filesystem::temp_directory_path() / ("crosspoint_noise_" + name + "_" + std::to_string(::getpid()))) {
    options.model_dir = dense_dir;
    options.out_dir = dir.string();
    options.overwrite = true;
    const Status s = quantize_model(options);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
  }
  ~QuantisedCopy() { std::filesystem::remove_all(dir); }
};

TEST(ActivationNoise, MovesFp16AndW4a16LittleAndE4m3ByFarMore) {
  const std::string dense_dir = default_model_dir();
  CROSSPOINT_REQUIRE_ASSET(dense_dir + "/model.safetensors");
  const std::vector<int32_t> tokens = fixture_text();
  ASSERT_GE(tokens.size(), 100u) << "the smollm2_llamacpp fixture's text";
  QuantizeModelOptions fp8_options;
  fp8_options.scheme = QuantizeScheme::kW8A8Fp8;
  const QuantisedCopy fp8(dense_dir, fp8_options, "fp8");

  const size_t seeds = kShort ? 1 : 3;
  const std::vector<double> fp16 = noise_differences(dense_dir, tokens, DType::kF32, "fp16");
  const std::vector<double> w8 = noise_differences(fp8.dir.string(), tokens, DType::kF32, "W8A8-FP8");
  ASSERT_EQ(fp16.size(), seeds);
  ASSERT_EQ(w8.size(), seeds);
  const double fp16_worst = *std::max_element(fp16.begin(), fp16.end());
  EXPECT_GT(fp16_worst, 0.0) << "the noise reached the logprobs";
  EXPECT_LE(fp16_worst, kFp16Tolerance);
  // e4m3 turns ulp-sized input differences into whole 3-bit steps, wherever it quantises an
  // activation (W8A8's inputs, an fp8 KV cache): at least 10x fp16's move.
  EXPECT_GE(*std::min_element(w8.begin(), w8.end()), 10.0 * fp16_worst);
  if (kShort) return;
  QuantizeModelOptions w4a16_options;  // as check_gpu_vs_cpu.py's w4a16-rtn-g64
  w4a16_options.scheme = QuantizeScheme::kW4A16;
  w4a16_options.int4_method = Int4Method::kRtn;
  w4a16_options.int4.group_size = 64;
  const QuantisedCopy w4a16(dense_dir, w4a16_options, "w4a16");
  const std::vector<double> w4 = noise_differences(w4a16.dir.string(), tokens, DType::kF32, "W4A16 RTN g64");
  const std::vector<double> fp16_kv8 = noise_differences(dense_dir, tokens, DType::kF8E4M3, "fp16, fp8 KV");
  const std::vector<double> w4_kv8 = noise_differences(w4a16.dir.string(), tokens, DType::kF8E4M3, "W4A16, fp8 KV");
  const std::vector<double> w8_kv8 = noise_differences(fp8.dir.string(), tokens, DType::kF8E4M3, "W8A8-FP8, fp8 KV");
  for (const auto* moved : {&w4, &fp16_kv8, &w4_kv8, &w8_kv8}) ASSERT_EQ(moved->size(), seeds);
  // Int4 weights leave the activations' flow as fp16's: about fp16's move (within 2x).
  EXPECT_LE(*std::max_element(w4.begin(), w4.end()), 2.0 * fp16_worst);
  for (const auto* moved : {&fp16_kv8, &w4_kv8, &w8_kv8})
    EXPECT_GE(*std::min_element(moved->begin(), moved->end()), 10.0 * fp16_worst);
}

}  // namespace
}  // namespace crosspoint
