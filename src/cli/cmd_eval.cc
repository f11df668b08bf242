// crosspoint eval: perplexity of a model on text, and greedy-token agreement with a
// reference model (teacher-forced on the same tokens).
//   crosspoint eval --model DIR|default [--reference DIR] [--dataset sharegpt|FILE]
//       [--num-samples 32] [--max-tokens 256] [--skip 1000] [--threads N] [--device auto|cpu|cuda] [--json]
// Samples are ShareGPT conversations (prompt + reply) taken in file order after --skip
// (quantize's calibration uses the first ones, so the default skips past them).
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/calibration_text.h"
#include "cli/cli_util.h"
#include "cli/device_runner.h"
#include "cli/commands.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/progress_bar.h"
#include "common/thread_pool.h"
#include "analysis/gpu_ceilings.h"
#include "model/model.h"
#include "runner/kv_cache_dtype.h"
#include "quant/eval_metrics.h"
#include "quant/gptq_linear_weight.h"
#include "quant/sequence_forward.h"
#include "tokenizer/tokenizer.h"
#ifdef CROSSPOINT_HAVE_CUDA
#include "quant/cuda/cuda_sequence_forward.h"
#endif

namespace crosspoint::cli {
namespace {

Result<std::unique_ptr<Model>> load_any(const std::string& arg, ActivationDtype activation_dtype) {
  CROSSPOINT_ASSIGN_OR_RETURN(std::string dir, resolve_model_dir(arg));
  ModelLoadOptions options;
  options.linear_formats = quantized_linear_weight_formats();
  options.activation_dtype = activation_dtype;
  return Model::load(dir, options);
}

}  // namespace

int run_eval(int argc, char** argv) {
  CLI::App app("Perplexity, and greedy agreement and KL divergence against a reference model", "crosspoint eval");
  std::string model_arg = "default", reference_arg, dataset = "sharegpt";
  int num_samples = 32, max_tokens = 256, skip = 1000, threads = 0;
  bool json_out = false;
  app.add_option("--model", model_arg, "model directory (dense, W8A8-FP8 or W4A16) or 'default'");
  app.add_option("--reference", reference_arg,
                 "reference model directory (FP16) for greedy agreement and KL divergence");
  app.add_option("--dataset", dataset, "sharegpt or a ShareGPT-format JSON file");
  app.add_option("--num-samples", num_samples, "number of text samples");
  app.add_option("--max-tokens", max_tokens, "tokens per sample (longer ones are cut)");
  app.add_option("--skip", skip, "conversations to skip at the start of the dataset");
  app.add_option("--threads", threads, "worker threads (default: all cores)");
  std::string kv_cache_dtype = "auto";
  app.add_option("--kv-cache-dtype", kv_cache_dtype,
                 "the model's KV cache: auto (f32) or fp8 (e4m3 with the checkpoint's k/v scales, else 1); the "
                 "reference always runs with f32, so --reference the same model measures what fp8 KV costs")
      ->capture_default_str();
  std::string dtype = "auto";
  app.add_option("--dtype", dtype,
                 "activation dtype of both models: auto or float32 (f32), float16 (= half: rounded to fp16 where "
                 "the GPU holds them, the quality the GPU serves) or bfloat16 (CPU only: the same places rounded to "
                 "bf16)")
      ->capture_default_str();
  std::string device_arg = "auto";
  app.add_option("--device", device_arg,
                 "where both models run: auto (cuda when a GPU is visible, else cpu), cpu or cuda (the GPU's own "
                 "kernels, fp16 activations and KV cache as it serves: the quality the GPU serves)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  app.add_flag("--json", json_out, "print one JSON object instead of a table");
  if (int code = parse_or_exit_code(app, argc, argv); code >= 0) return code;
  const auto device_resolved = analysis::resolve_device(device_arg);
  if (!device_resolved.is_ok()) return report_error("eval", device_resolved.status());
  const std::string device = device_resolved.value();
  const auto parsed_kv_dtype = resolve_kv_dtype(kv_cache_dtype, device);
  if (!parsed_kv_dtype.is_ok()) return report_error("eval", parsed_kv_dtype.status());
  const DType kv_dtype = parsed_kv_dtype->storage;
  const auto activation_dtype = cpu_activation_dtype_for(dtype, device);
  if (!activation_dtype.is_ok()) return report_error("eval", activation_dtype.status());
  if (device == "cuda" && dtype == "bfloat16")
    return report_error("eval", unsupported("--dtype bfloat16 --device cuda: eval runs the GPU's fp16 flow; serve "
                                            "serves bf16 on the GPU, and --device cpu evaluates the bf16 flow"));
  if (threads > 0) set_global_num_threads(threads);

  auto model = load_any(model_arg, activation_dtype.value());
  if (!model.is_ok()) return report_error("eval", model.status());
  std::unique_ptr<Model> reference;
  if (!reference_arg.empty()) {
    auto r = load_any(reference_arg, activation_dtype.value());
    if (!r.is_ok()) return report_error("eval", r.status());
    reference = std::move(r).value();
    if (reference->vocab_size() != model.value()->vocab_size())
      return report_error("eval", invalid_argument("the reference model's vocab_size differs from the model's"));
  }
  auto dir = resolve_model_dir(model_arg);
  auto tokenizer = Tokenizer::from_model_dir(dir.value());
  if (!tokenizer.is_ok()) return report_error("eval", tokenizer.status());
  auto samples = load_text_samples(dataset, *tokenizer.value(), num_samples, max_tokens, 16, skip);
  if (!samples.is_ok()) return report_error("eval", samples.status());

  const Stopwatch clock;
  EvalTotals totals;
  // Both devices through one evaluator: the logits of every position of a sample.
  SequenceLogits model_logits, reference_logits;
  if (device == "cpu") {
    model_logits = [&](const std::vector<int32_t>& t, std::vector<float>& out) {
      return forward_sequences(*model.value(), {t}, /*all_positions=*/true, out, kv_dtype);
    };
    reference_logits = [&](const std::vector<int32_t>& t, std::vector<float>& out) {
      return forward_sequences(*reference, {t}, /*all_positions=*/true, out);
    };
  } else {
#ifdef CROSSPOINT_HAVE_CUDA
    log_info("eval: both models on the GPU, sequences of up to {} tokens", max_tokens);
    auto gpu_model = CudaSequenceForward::create(*model.value(), max_tokens, kv_dtype == DType::kF8E4M3);
    if (!gpu_model.is_ok()) return report_error("eval", gpu_model.status());
    std::shared_ptr<CudaSequenceForward> gpu(std::move(gpu_model).value());
    model_logits = [gpu](const std::vector<int32_t>& t, std::vector<float>& out) { return gpu->logits(t, out); };
    if (reference) {
      auto gpu_ref = CudaSequenceForward::create(*reference, max_tokens, /*kv_fp8=*/false);
      if (!gpu_ref.is_ok()) return report_error("eval", gpu_ref.status());
      std::shared_ptr<CudaSequenceForward> ref(std::move(gpu_ref).value());
      reference_logits = [ref](const std::vector<int32_t>& t, std::vector<float>& out) { return ref->logits(t, out); };
    }
#else
    return report_error("eval", unsupported("--device cuda: this build has no CUDA backend"));
#endif
  }
  ProgressBar progress("eval", samples.value().size());
  size_t done = 0;
  for (const auto& tokens : samples.value()) {
    const Status s = evaluate_sequence(model_logits, reference ? &reference_logits : nullptr,
                                       model.value()->vocab_size(), tokens, totals);
    if (!s.is_ok()) return report_error("eval", s);
    progress.update(++done);
  }
  progress.finish();
  const double seconds = clock.elapsed_seconds();
  if (json_out) {
    nlohmann::json j = {
        {"model", model_arg},
        {"weight_format", model.value()->weight_format_name()},
        {"kv_cache_dtype", parsed_kv_dtype->name()},
        {"device", device},
        // The GPU holds activations in fp16 whatever --dtype said.
        {"activation_dtype", device == "cuda" ? "float16" : activation_dtype_name(activation_dtype.value())},
        {"num_samples", samples.value().size()},
        {"num_predicted_tokens", totals.num_predicted},
        {"perplexity", totals.perplexity()},
        {"seconds", seconds}};
    if (reference) {
      j["reference"] = reference_arg;
      j["reference_perplexity"] = totals.reference_perplexity();
      j["greedy_agreement"] = totals.agreement();
      j["mean_kl_divergence"] = totals.mean_kl_divergence();
      j["p99_kl_divergence"] = totals.kl_divergence_quantile(0.99);
      j["max_kl_divergence"] = totals.kl_divergence_quantile(1.0);
    }
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("model            %s (%s, KV cache %s, on %s)\n", model_arg.c_str(),
              model.value()->weight_format_name().c_str(), parsed_kv_dtype->name().c_str(), device.c_str());
  std::printf("samples          %zu (%lld predicted tokens)\n", samples.value().size(),
              static_cast<long long>(totals.num_predicted));
  std::printf("perplexity       %.4f\n", totals.perplexity());
  if (reference) {
    std::printf("reference        %s: perplexity %.4f\n", reference_arg.c_str(), totals.reference_perplexity());
    std::printf("greedy agreement %.2f %%\n", 100.0 * totals.agreement());
    std::printf("KL divergence    mean %.6f, p99 %.6f, max %.6f nats (reference || model)\n",
                totals.mean_kl_divergence(), totals.kl_divergence_quantile(0.99), totals.kl_divergence_quantile(1.0));
  }
  std::printf("time             %.1f s\n", seconds);
  return 0;
}

}  // namespace crosspoint::cli
