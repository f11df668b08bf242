#include "cli/device_runner.h"

#include "runner/kv_cache_dtype.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/cli_util.h"
#include "common/log.h"
#include "common/thread_pool.h"
#include "runner/cpu_model_runner.h"
#include "scheduler/block_manager.h"
#ifdef CROSSPOINT_HAVE_CUDA
#include "model/cuda/cuda_model.h"
#include "model/cuda/nccl_ranks.h"
#include "runner/cuda/cuda_follower_ranks.h"
#include "runner/cuda/cuda_model_runner.h"
#endif

namespace crosspoint::cli {

Result<ActivationDtype> cpu_activation_dtype_for(const std::string& dtype, const std::string& device) {
  const bool gpu = device == "cuda";
  if (dtype == "auto") return ActivationDtype::kFloat32;
  if (dtype == "float16" || dtype == "half") return gpu ? ActivationDtype::kFloat32 : ActivationDtype::kFloat16;
  if (dtype == "float32" || dtype == "float") {
    if (gpu) return invalid_argument("--dtype " + dtype + ": the GPU model holds activations in fp16");
    return ActivationDtype::kFloat32;
  }
  if (dtype == "bfloat16") return gpu ? ActivationDtype::kFloat32 : ActivationDtype::kBFloat16;
  return invalid_argument("--dtype " + dtype + ": expected auto, float16, half, bfloat16, float32 or float");
}

bool gpu_serves_bf16(const std::string& dtype, const std::string& kv_cache_dtype, const Model& m) {
  if (dtype == "bfloat16") return true;
  const std::string format = m.weight_format_name();
  const bool unquantised = format == "f32" || format == "f16" || format == "bf16";
  const Result<KvCacheDtype> kv = resolve_kv_dtype(kv_cache_dtype, "cuda");
  return dtype == "auto" && m.config().torch_dtype == "bfloat16" && unquantised && kv.is_ok() && !kv->fp8();
}

namespace {

// Device memory kept free after the KV cache for the decode graphs captured afterwards.
constexpr size_t kGraphReserveBytes = size_t{256} << 20;

// What the start-up log says about reproducibility (docs/serving.md, "Determinism").
std::string determinism_note(const std::string& device, bool deterministic) {
  if (device == "cpu") {
    return std::string(
               "determinism: outputs are bit-identical run to run and independent of the batch (the CPU "
               "kernels reduce each row in one fixed order)") +
           (deterministic ? "; --deterministic changes nothing here" : "");
  }
  return deterministic ? "determinism: --deterministic: linears on fixed slabs of 64 rows and attention in one "
                         "partition per row, so a request's output does not depend on the rest of its batch (slower; "
                         "docs/serving.md)"
                       : "determinism: outputs are bit-identical run to run for the same batch; they may change with "
                         "what else is in the batch (--deterministic makes them batch-invariant)";
}

Result<DeviceRunner> make_cpu_runner(const DeviceRunnerOptions& o, const Model& m) {
  DeviceRunner out;
  CROSSPOINT_ASSIGN_OR_RETURN(const KvCacheDtype kv, resolve_kv_dtype(o.kv_cache_dtype, "cpu"));
  const DType kv_dtype = kv.storage;
  if (o.tensor_parallel_size != 1) {
    CROSSPOINT_ASSIGN_OR_RETURN(auto split, TensorParallelModel::create(m, o.tensor_parallel_size));
    const std::vector<size_t>& bytes = split->rank_linear_bytes();
    log_info(
        "tensor parallel: {} ranks (threads of this process, kernel threads per rank: {}), linear weights {:.3f} GiB "
        "a rank against {:.3f} GiB whole; o_proj and down_proj summed over the ranks in each layer",
        split->world_size(), std::max(1, global_thread_pool().num_threads() / split->world_size()),
        *std::max_element(bytes.begin(), bytes.end()) / kGiB, m.weight_bytes_per_token() / kGiB);
    out.tensor_parallel = std::move(split);
  }
  const TensorParallelModel* split = out.tensor_parallel.get();
  const size_t kv_bytes_per_token = split ? split->kv_bytes_per_token(kv_dtype) : m.kv_bytes_per_token(kv_dtype);
  std::string kv_option = "--kv-cache-memory " + o.kv_cache_memory;
  if (o.num_kv_blocks > 0) {
    out.num_blocks = o.num_kv_blocks;
  } else if (!o.memory_budget.empty()) {
    // The weights are held whole (mapped or converted), and a split's shards beside them; the
    // KV cache gets what they leave.
    CROSSPOINT_ASSIGN_OR_RETURN(const size_t budget, parse_bytes(o.memory_budget, "--memory-budget"));
    size_t weights = m.weight_bytes_total();
    if (split != nullptr)
      for (size_t rank_bytes : split->rank_linear_bytes()) weights += rank_bytes;
    if (weights >= budget) {
      return resource_exhausted(
          fmt::format("--memory-budget {}: the weights alone take {:.3f} GiB", o.memory_budget, weights / kGiB));
    }
    out.num_blocks = BlockManager::num_blocks_for_budget(budget - weights, kv_bytes_per_token, o.block_size);
    kv_option = "--memory-budget " + o.memory_budget;
    log_info("memory budget {}: weights {:.3f} GiB, the rest for the KV cache", o.memory_budget, weights / kGiB);
  } else {
    CROSSPOINT_ASSIGN_OR_RETURN(const size_t kv_bytes, parse_bytes(o.kv_cache_memory));
    out.num_blocks = BlockManager::num_blocks_for_budget(kv_bytes, kv_bytes_per_token, o.block_size);
  }
  const int64_t kv_tokens = static_cast<int64_t>(out.num_blocks) * o.block_size;
  // Checked before the cache is allocated (a cache of zero blocks is a programmer error there).
  if (kv_tokens < o.max_model_len) {
    const std::string option = kv_option.substr(0, kv_option.find(' '));
    return invalid_argument("the KV cache (" + kv_option + " = " + std::to_string(kv_tokens) +
                            " tokens) cannot hold one sequence of --max-model-len " + std::to_string(o.max_model_len) +
                            " tokens: raise " + option + " or lower --max-model-len");
  }
  log_info("KV cache: {:.3f} GiB ({}) = {} tokens in {} blocks of {}{}",
           static_cast<double>(kv_tokens) * kv_bytes_per_token / kGiB, kv_dtype == DType::kF32 ? "f32" : "fp8 e4m3",
           kv_tokens, out.num_blocks, o.block_size,
           kv_dtype == DType::kF32 ? ""
           : m.has_kv_scales()     ? "; k/v scales from the checkpoint"
                                   : "; the checkpoint has no k/v scales: 1.0, as vLLM's default");
  const Model* model = &m;
  if (split != nullptr) {
    out.runner =
        std::make_unique<CpuModelRunner>(split->kv_cache_shape(out.num_blocks, o.block_size, kv_dtype), m.vocab_size(),
                                         [split](const ForwardBatch& batch, CpuKvCache& kv, float* logits) {
                                           return split->forward(batch, kv, logits);
                                         });
    return out;
  }
  out.runner = std::make_unique<CpuModelRunner>(
      m.kv_cache_shape(out.num_blocks, o.block_size, kv_dtype), m.vocab_size(),
      [model](const ForwardBatch& batch, CpuKvCache& kv, float* logits) { return model->forward(batch, kv, logits); });
  return out;
}

#ifdef CROSSPOINT_HAVE_CUDA
Result<DeviceRunner> make_cuda_runner(const DeviceRunnerOptions& o, const Model& m) {
  cuda::CudaModelOptions options;
  options.max_num_tokens = o.max_num_batched_tokens;
  options.max_num_seqs = o.max_num_seqs;
  options.max_num_logits = o.max_num_seqs + kPromptLogprobRowsPerStep;
  options.max_model_len = static_cast<int32_t>(o.max_model_len);
  options.block_size = o.block_size;
  options.batch_invariant = o.deterministic;
  CROSSPOINT_ASSIGN_OR_RETURN(const KvCacheDtype kv, resolve_kv_dtype(o.kv_cache_dtype, "cuda"));
  options.kv_fp8 = kv.fp8();
  options.activation_dtype = o.gpu_bf16 ? DType::kBF16 : DType::kF16;
  cuda::CudaRunnerOptions runner_options;
  runner_options.enforce_eager = o.enforce_eager;
  runner_options.sample_on_gpu = !o.sample_on_host;
  runner_options.gpu_memory_utilization = o.gpu_memory_utilization;
  if (!o.memory_budget.empty()) {
    CROSSPOINT_ASSIGN_OR_RETURN(runner_options.memory_budget_bytes, parse_bytes(o.memory_budget, "--memory-budget"));
  }
  runner_options.num_kv_blocks = o.num_kv_blocks;
  runner_options.reserve_bytes = o.enforce_eager ? 0 : kGraphReserveBytes;
  std::unique_ptr<cuda::CudaFollowerRanks> followers;
  std::shared_ptr<const TensorParallelModel> split;
  if (o.tensor_parallel_size > 1) {  // rank 0 here, the others on threads of their own, one GPU each
    std::vector<int> devices(static_cast<size_t>(o.tensor_parallel_size));
    std::iota(devices.begin(), devices.end(), 0);
    CROSSPOINT_ASSIGN_OR_RETURN(std::shared_ptr<cuda::NcclRanks> comm, cuda::NcclRanks::create(devices));
    CROSSPOINT_ASSIGN_OR_RETURN(split, TensorParallelModel::create(m, o.tensor_parallel_size));
    log_info(
        "tensor parallel: {} ranks on GPUs 0-{} (NCCL {} from {}); the memory below is rank 0's, each rank "
        "holds its share and as many KV blocks",
        o.tensor_parallel_size, o.tensor_parallel_size - 1, cuda::nccl_version(comm->library()),
        cuda::nccl_library_path(comm->library()));
    options.share = &split->share(0);
    options.comm = comm.get();
    followers = cuda::CudaFollowerRanks::launch(m, split, comm, devices, options);
  }
  Result<std::unique_ptr<cuda::CudaModel>> model = cuda::CudaModel::create(m, options);
  if (followers != nullptr) CROSSPOINT_RETURN_IF_ERROR(followers->wait_created());
  CROSSPOINT_RETURN_IF_ERROR(model.status());
  // The runner sizes and allocates the KV cache (each rank's), then captures the graphs.
  CROSSPOINT_ASSIGN_OR_RETURN(
      auto runner, cuda::CudaModelRunner::create(std::move(model).value(), runner_options, std::move(followers)));
  const cuda::CudaMemoryReport mem = runner->memory();
  log_info("GPU: {} ({:.1f} GiB); weights on the GPU {:.3f} GiB ({}), converted and uploaded in {:.2f} s", mem.gpu_name,
           mem.total_bytes / kGiB, mem.weight_bytes / kGiB, runner->model().weight_format_name(), mem.upload_s);
  log_info(
      "activations and workspaces for {} tokens per step: {:.3f} GiB (measured by a profile step, {:.2f} s); "
      "{:.3f} GiB in use before the KV cache",
      o.max_num_batched_tokens, mem.activation_bytes / kGiB, mem.profile_s, mem.used_before_kv_bytes / kGiB);
  const int64_t eager_tokens =
      mem.kv_tokens + static_cast<int64_t>(mem.reserve_bytes / (mem.kv_bytes_per_token * o.block_size)) * o.block_size;
  const std::string kv_option = o.memory_budget.empty()
                                    ? fmt::format("--gpu-memory-utilization {}", o.gpu_memory_utilization)
                                    : "--memory-budget " + o.memory_budget;
  log_info("KV cache: {:.3f} GiB ({}) = {} tokens in {} blocks of {} ({}{}){}", mem.kv_bytes / kGiB,
           options.kv_fp8 ? "fp8 e4m3" : (o.gpu_bf16 ? "bf16" : "fp16"), mem.kv_tokens, mem.num_kv_blocks, o.block_size,
           kv_option,
           o.enforce_eager ? ", eager"
                           : fmt::format("; {:.2f} GiB kept for CUDA graphs, {} tokens with --enforce-eager",
                                         mem.reserve_bytes / kGiB, eager_tokens),
           !options.kv_fp8     ? ""
           : m.has_kv_scales() ? "; k/v scales from the checkpoint"
                               : "; the checkpoint has no k/v scales: 1.0, as vLLM's default");
  if (mem.kv_tokens < o.max_model_len) {
    return invalid_argument("the KV cache (" + kv_option + " = " + std::to_string(mem.kv_tokens) +
                            " tokens) cannot hold one sequence of --max-model-len " + std::to_string(o.max_model_len) +
                            " tokens: raise " + kv_option.substr(0, kv_option.find(' ')) + " or lower --max-model-len");
  }
  const cuda::CudaGraphReport& graphs = runner->graph_report();
  if (o.enforce_eager) {
    log_info("CUDA graphs: off (--enforce-eager)");
  } else if (!graphs.fallback_reason.empty()) {
    log_info("CUDA graphs: capture failed, running eagerly: {}", graphs.fallback_reason);
  } else {
    log_info("CUDA graphs: {} decode batch sizes captured [{}] x context bounds [{}] in {:.2f} s, {:.3f} GiB",
             graphs.captured_buckets.size(), fmt::join(graphs.captured_buckets, ", "),
             fmt::join(graphs.context_bounds, ", "), graphs.capture_s, graphs.graph_bytes / kGiB);
  }
  DeviceRunner out;
  out.num_blocks = static_cast<int32_t>(mem.num_kv_blocks);
  out.runner = std::move(runner);
  out.tensor_parallel = split;
  return out;
}
#endif

}  // namespace

Result<size_t> parse_bytes(const std::string& text, const std::string& option) {
  size_t split = 0;
  while (split < text.size() && (std::isdigit(static_cast<unsigned char>(text[split])) || text[split] == '.' ||
                                 text[split] == 'e' || text[split] == 'E')) {
    ++split;
  }
  double value = 0;
  try {
    value = std::stod(text.substr(0, split));
  } catch (...) { return invalid_argument(option + ": '" + text + "' is not a size (e.g. 1GiB, 512MiB)"); }
  std::string unit = text.substr(split);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "kib" || unit == "k") scale = 1024.0;
  else if (unit == "mib" || unit == "m") scale = 1024.0 * 1024;
  else if (unit == "gib" || unit == "g") scale = kGiB;
  else if (unit == "kb") scale = 1e3;
  else if (unit == "mb") scale = 1e6;
  else if (unit == "gb") scale = 1e9;
  if (scale == 0 || !(value > 0) || !std::isfinite(value)) {
    return invalid_argument(option + ": '" + text + "' is not a positive size (e.g. 1GiB, 512MiB)");
  }
  return static_cast<size_t>(value * scale);
}

EngineConfig engine_config_for(const DeviceRunnerOptions& o, int32_t num_blocks,
                               const std::vector<int32_t>& tokenizer_eos_ids, const Model& m) {
  EngineConfig config;
  config.scheduler.max_num_seqs = o.max_num_seqs;
  config.scheduler.max_num_batched_tokens = o.max_num_batched_tokens;
  config.scheduler.max_model_len = static_cast<int32_t>(o.max_model_len);
  config.scheduler.num_blocks = num_blocks;
  config.scheduler.block_size = o.block_size;
  config.scheduler.enable_prefix_caching = o.enable_prefix_caching;
  config.scheduler.max_prompt_logprob_rows = kPromptLogprobRowsPerStep;
  config.eos_token_ids = tokenizer_eos_ids;
  config.vocab_size = static_cast<int32_t>(m.vocab_size());
  for (int64_t id : m.config().eos_token_ids) {
    if (std::find(config.eos_token_ids.begin(), config.eos_token_ids.end(), id) == config.eos_token_ids.end()) {
      config.eos_token_ids.push_back(static_cast<int32_t>(id));
    }
  }
  return config;
}

Result<DeviceRunner> make_device_runner(const DeviceRunnerOptions& o, const Model& m) {
  if (o.block_size < 1 || o.block_size > 1024 || o.max_num_seqs < 1 || o.max_num_batched_tokens < 1) {
    return invalid_argument("--block-size (1..1024), --max-num-seqs and --max-num-batched-tokens must be positive");
  }
  CROSSPOINT_RETURN_IF_ERROR(resolve_kv_dtype(o.kv_cache_dtype, o.device).status());
  log_info("{}", determinism_note(o.device, o.deterministic));
  if (o.device == "cuda") {
#ifdef CROSSPOINT_HAVE_CUDA
    return make_cuda_runner(o, m);
#else
    return unsupported("--device cuda: this build has no CUDA backend (nvcc was not found when it was configured)");
#endif
  }
  return make_cpu_runner(o, m);
}

}  // namespace crosspoint::cli
