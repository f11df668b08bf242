// What the CUDA model and runner tests share: the GPU skip, the tiny checkpoint loaded as a
// CPU model, a CudaModel with a KV cache and step inputs of its own, one set of engine limits,
// a CudaModelRunner sized for them, four concurrent requests of
// different prompt lengths, and running requests through the real Engine to collect each
// request's tokens.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/engine.h"
#include "model/cuda/cuda_kv_cache.h"
#include "model/cuda/cuda_model.h"
#include "model/cuda/step_input_staging.h"
#include "model/model.h"
#include "model_cuda/tiny_checkpoints.h"
#include "quant/gptq_linear_weight.h"
#include "runner/cuda/cuda_model_runner.h"

// Skips the calling test on a machine without a CUDA device.
#define SKIP_WITHOUT_GPU() \
  if (::crosspoint::cuda::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device"

namespace crosspoint::cuda_testing {

// The tiny checkpoint of `precision` as a CPU model (quantised linears loaded as such), or
// nullptr after a failed expectation; fp16_activations: in the GPU's dtype flow.
inline std::unique_ptr<Model> load_tiny_model(TinyPrecision precision, bool fp16_activations = false) {
  auto dir = TinyCheckpoints::get().dir(precision);
  EXPECT_TRUE(dir.is_ok()) << dir.status().to_string();
  if (!dir.is_ok()) return nullptr;
  ModelLoadOptions options;
  options.linear_formats = quantized_linear_weight_formats();
  if (fp16_activations) options.activation_dtype = ActivationDtype::kFloat16;
  auto model = Model::load(*dir, options);
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  return model.is_ok() ? std::move(model).value() : nullptr;
}

// A CudaModel with the KV cache and step-input staging a runner would own, for tests that run
// the model's steps themselves.
struct CudaModelOnCache {
  std::unique_ptr<cuda::CudaModel> model;
  cuda::CudaKvCache kv;
  cuda::StepInputStaging inputs;

  // CudaModel::forward_host on this cache and staging.
  Status forward_host(const ForwardBatch& batch, float* logits) {
    return model->forward_host(batch, kv, inputs, logits);
  }
};

// CudaModel::create, then a KV cache of num_kv_blocks blocks and the staging.
inline Result<CudaModelOnCache> make_cuda_model(const Model& cpu, const cuda::CudaModelOptions& options,
                                                int32_t num_kv_blocks) {
  CudaModelOnCache m;
  CROSSPOINT_ASSIGN_OR_RETURN(m.model, cuda::CudaModel::create(cpu, options));
  CROSSPOINT_ASSIGN_OR_RETURN(m.kv, m.model->make_kv_cache(num_kv_blocks));
  CROSSPOINT_ASSIGN_OR_RETURN(m.inputs, m.model->make_step_inputs());
  return m;
}

inline constexpr int32_t kEngineBlocks = 64;  // KV blocks of 16 tokens, on both runners
inline constexpr int32_t kOutputTokens = 16;  // tokens each request of tiny_requests() produces

// The engine limits of every runner test; the prompts of tiny_requests() need chunked prefill.
inline EngineConfig engine_config() {
  EngineConfig config;
  config.scheduler.max_num_seqs = 4;
  config.scheduler.max_num_batched_tokens = 64;
  config.scheduler.max_model_len = 256;
  config.scheduler.num_blocks = kEngineBlocks;
  config.scheduler.block_size = 16;
  return config;
}

// A CudaModel sized for engine_config() on the GPU, wrapped in a runner; nullptr after a
// failed expectation.
inline std::unique_ptr<cuda::CudaModelRunner> make_cuda_runner(const Model& cpu,
                                                               const cuda::CudaRunnerOptions& runner_options) {
  const EngineConfig config = engine_config();
  cuda::CudaModelOptions options;
  options.max_num_tokens = config.scheduler.max_num_batched_tokens;
  options.max_num_seqs = config.scheduler.max_num_seqs;
  options.max_model_len = config.scheduler.max_model_len;
  auto model = cuda::CudaModel::create(cpu, options);
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  if (!model.is_ok()) return nullptr;
  cuda::CudaRunnerOptions sized = runner_options;
  sized.num_kv_blocks = kEngineBlocks;
  auto runner = cuda::CudaModelRunner::create(std::move(model).value(), sized);
  EXPECT_TRUE(runner.is_ok()) << runner.status().to_string();
  return runner.is_ok() ? std::move(runner).value() : nullptr;
}

// A request's sampling parameters; num_logprobs -1: no logprobs.
inline RequestSamplingParams sampling(float temperature, int32_t top_k, float top_p, uint64_t seed,
                                      int32_t num_logprobs = -1) {
  RequestSamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.seed = seed;
  p.num_logprobs = num_logprobs;
  return p;
}

// One request per entry of `sampling`, request i with a prompt of 9 + 23 i tokens below the
// tiny vocabulary, kOutputTokens tokens each (ignore_eos).
inline std::vector<EngineRequest> tiny_requests(const std::vector<RequestSamplingParams>& sampling) {
  std::vector<EngineRequest> requests;
  for (size_t i = 0; i < sampling.size(); ++i) {
    EngineRequest r;
    for (size_t t = 0; t < 9 + 23 * i; ++t)
      r.prompt_token_ids.push_back(static_cast<int32_t>((t * (7 + i) + 11 * i + 3) % 512));
    r.max_tokens = kOutputTokens;
    r.ignore_eos = true;
    r.sampling = sampling[i];
    requests.push_back(std::move(r));
  }
  return requests;
}

// Submits the requests, starts the engine, waits (at most 120 s) for all of them to finish
// and stops it; each request's tokens in submission order (empty for a refused one).
inline std::vector<std::vector<int32_t>> run_requests(Engine& engine, const std::vector<EngineRequest>& requests) {
  std::mutex mutex;
  std::condition_variable done;
  std::map<int64_t, std::vector<int32_t>> tokens;  // request id -> tokens so far
  int num_finished = 0, num_accepted = 0;
  std::vector<int64_t> ids;  // -1: refused
  for (const EngineRequest& r : requests) {
    auto id = engine.submit(r, [&](const RequestOutput& out) {
      std::lock_guard<std::mutex> lock(mutex);
      auto& t = tokens[out.request_id];
      t.insert(t.end(), out.new_token_ids.begin(), out.new_token_ids.end());
      if (out.finished) ++num_finished;
      done.notify_all();
    });
    EXPECT_TRUE(id.is_ok()) << id.status().to_string();
    ids.push_back(id.is_ok() ? *id : -1);
    num_accepted += id.is_ok() ? 1 : 0;
  }
  engine.start();
  {
    std::unique_lock<std::mutex> lock(mutex);
    EXPECT_TRUE(done.wait_for(lock, std::chrono::seconds(120), [&] { return num_finished >= num_accepted; }));
  }
  engine.stop();
  std::vector<std::vector<int32_t>> outputs;
  std::lock_guard<std::mutex> lock(mutex);
  for (int64_t id : ids) outputs.push_back(tokens[id]);
  return outputs;
}

// run_requests on a fresh Engine of engine_config() around `runner`; empty without a runner.
inline std::vector<std::vector<int32_t>> run_engine(std::unique_ptr<Runner> runner,
                                                    const std::vector<EngineRequest>& requests) {
  if (runner == nullptr) return {};
  Engine engine(engine_config(), std::move(runner));
  return run_requests(engine, requests);
}

}  // namespace crosspoint::cuda_testing
