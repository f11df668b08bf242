// The engine's runner for one device, made the same way for `serve` and `generate`: the CPU
// runner with a KV cache of a byte budget (or a block count), or the CUDA model and runner with
// a memory fraction (or a block count), the start-up log lines that say what was given, and
// one check that the cache holds a sequence of max_model_len tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <vector>

#include "common/status.h"
#include "engine/engine.h"
#include "model/model.h"
#include "model/tensor_parallel_model.h"
#include "runner/runner.h"

namespace crosspoint::cli {

struct DeviceRunnerOptions {
  std::string device = "cpu";  // resolved: cpu | cuda
  int32_t max_num_seqs = 256;
  int32_t max_num_batched_tokens = 2048;
  int64_t max_model_len = 2048;
  int32_t block_size = 16;
  int32_t num_kv_blocks = 0;             // > 0: exactly this many blocks (the budgets below unused)
  std::string kv_cache_memory = "1GiB";  // cpu: bytes for the KV cache
  double gpu_memory_utilization = 0.9;   // cuda: fraction of the GPU's memory this process may use
  // Both devices: bytes for weights + activations + KV cache ("24GB"), in place of the fraction
  // (cuda) or of kv_cache_memory (cpu, where the KV cache gets what the weights leave); empty = off.
  std::string memory_budget;
  bool enforce_eager = false;          // cuda: no CUDA graphs
  bool sample_on_host = false;         // cuda: sampled rows drawn by the host sampler
  bool deterministic = false;          // cuda: the batch-invariant kernels
  bool enable_prefix_caching = false;  // the scheduler reuses cached prompt blocks (serve decides the default)
  // auto: the device's own (f32 on the CPU, fp16 on the GPU); fp8 (or fp8_e4m3): e4m3 with the
  // checkpoint's per-layer k/v scales, else 1.
  std::string kv_cache_dtype = "auto";
  // --tensor-parallel-size: ranks that are threads of this process, each with its share of the
  // weights (model/tensor_parallel_model.h): on the CPU with its own kernel threads and an
  // in-process sum; on the GPU one GPU a rank (devices 0 .. N-1) summing through NCCL.
  int32_t tensor_parallel_size = 1;
  // cuda: --dtype bfloat16, activations, dense weights, KV cache and logits in bf16 (else fp16).
  bool gpu_bf16 = false;
};

// --dtype (vLLM's name) as the CPU model's activation flow: auto, float32 or float -> f32;
// float16 or half -> activations rounded to fp16 where the GPU holds them; bfloat16 -> rounded to
// bf16 at the same places. On cuda the GPU's own flow (returned as kFloat32: the CPU model is
// not rounded): auto, float16 and half (fp16 kernels) and bfloat16 (bf16 kernels, dense
// checkpoints: DeviceRunnerOptions::gpu_bf16) are accepted, float32 refused.
Result<ActivationDtype> cpu_activation_dtype_for(const std::string& dtype, const std::string& device);
// Whether the GPU serves model m in bf16 (DeviceRunnerOptions::gpu_bf16) under --dtype and
// --kv-cache-dtype: bfloat16 does; auto does as vLLM's, where the checkpoint's torch_dtype is
// bfloat16, for unquantised checkpoints without an fp8 KV cache (the quantised GEMMs and the fp8
// cache take fp16 activations: those stay fp16).
bool gpu_serves_bf16(const std::string& dtype, const std::string& kv_cache_dtype, const Model& m);
inline constexpr const char* kDtypeHelp =
    "activation dtype: auto (f32 on the CPU; on the GPU the checkpoint's torch_dtype for an unquantised bf16 "
    "checkpoint, as vLLM, else fp16), float16 (= half: on the CPU, every activation "
    "rounded to fp16 where the GPU holds it, the GPU's numbers computed on the CPU), bfloat16 (on the CPU the same "
    "places rounded to bf16; on the GPU bf16 kernels, weights, KV cache and logits, for unquantised checkpoints) or "
    "float32 (CPU only)";

// --kv-cache-dtype's help text, shared by the commands that take it.
inline constexpr const char* kKvCacheDtypeHelp =
    "auto (f32 on the CPU, fp16 on the GPU) or fp8 (= fp8_e4m3: e4m3 with the checkpoint's self_attn.k_scale / "
    "v_scale, else 1 as vLLM; half the bytes of fp16, a quarter of f32)";

// Prompt positions whose logprobs one step computes at most, on either device: the scheduler cuts
// prefill chunks of requests that want prompt logprobs to fit, which bounds the logits of a step
// (256 rows of a 152k vocabulary are 156 MB of f32 on the CPU); the CUDA model holds this many
// logits rows on top of one per sequence.
inline constexpr int32_t kPromptLogprobRowsPerStep = 256;

struct DeviceRunner {
  std::unique_ptr<Runner> runner;
  int32_t num_blocks = 0;
  std::shared_ptr<const TensorParallelModel> tensor_parallel;  // the split the runner's ranks hold, if any
};

// "1GiB", "512MiB", "2MB", "1e9", "4096" -> bytes; the error names `option`.
Result<size_t> parse_bytes(const std::string& text, const std::string& option = "--kv-cache-memory");

// The runner, its KV blocks and the start-up log lines. Errors name the option to change.
Result<DeviceRunner> make_device_runner(const DeviceRunnerOptions& options, const Model& model);

// The engine's limits for a runner made from `options` with num_blocks KV blocks; generation
// ends at the tokenizer's EOS ids and the model config's.
EngineConfig engine_config_for(const DeviceRunnerOptions& options, int32_t num_blocks,
                               const std::vector<int32_t>& tokenizer_eos_ids, const Model& model);

}  // namespace crosspoint::cli
