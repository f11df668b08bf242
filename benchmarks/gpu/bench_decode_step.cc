// One whole CudaModel step, timed per precision on a real checkpoint: decode at each batch
// size B (B sequences of `--context` cached tokens, one new token each) as a CUDA graph and
// eagerly, a per-op breakdown of one profiled eager step (model/cuda/step_profiler.h), and a
// prefill of one `--prefill-tokens` sequence; each beside its roofline bound from
// analysis::decode_cost_from_shape (the sweep's byte/FLOP model) and the measured ceilings.
//
//   bench_decode_step --model DIR [--model DIR2 ...] --batches 1,8,32,64,128 --context 512
//       --prefill-tokens 2048 --ceilings FILE.json --out results.json [--replays 50]
//   bench_decode_step --tables-from results.json     # the tables again, from a results file
//
// What is timed:
//   graph   forward + greedy argmax captured once, replayed --replays times (after 3 warm-up
//           replays), each replay between two events; median, p10, p90.
//   eager   the same launches issued from the host, --eager-reps times, inputs already on
//           the device (no host batch building or copy).
//   decode attention is sized for the engine's bound, max-model-len (the runner's graphs use
//           that one bound), unless --tight-attention-bound.
//   breakdown  one profiled eager step (a cudaEvent after every op, so it is eager with events)
//           "as launched", and one "queued": the stream is held by a host function until the
//           whole step is enqueued, so ops run back to back as in a graph and each op's time is
//           its GPU time (not the host's launch gaps).
//   prefill one sequence of --prefill-tokens new tokens, eager, median of --prefill-reps.
// KV cache content: zeros as allocated (timing does not depend on the values), except the
// slots the timed steps themselves write.
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/decode_cost.h"
#include "analysis/model_shape.h"
#include "analysis/precision.h"
#include "common/clock.h"
#include "common/utc_time.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/decoder_ops.h"
#include "model/cuda/cuda_model.h"
#include "model/host_forward_batch.h"
#include "model/cuda/step_profiler.h"
#include "model/model.h"
#include "quant/gptq_linear_weight.h"
#include "sweep/measured_ceilings.h"
#include "gpu/decode_step_tables.h"
#include "gpu/step_timing.h"

namespace crosspoint::bench {
namespace {

using nlohmann::json;

struct Options {
  std::vector<std::string> model_dirs;
  std::vector<int32_t> batches = {1, 8, 32, 64, 128};
  int32_t context = 512;          // cached tokens per decoding sequence
  int32_t prefill_tokens = 2048;  // new tokens of the prefill step
  int32_t max_model_len = 4096;   // as the study serves (--max-model-len 4096)
  std::string ceilings_path;
  std::string out_path;
  int32_t replays = 50;
  int32_t eager_reps = 20;
  int32_t prefill_reps = 5;
  bool tight_attention_bound = false;
  bool deterministic = false;      // the batch-invariant kernels of serve --deterministic
  bool fp8_input_unfused = false;  // W8A8 linears quantise their own input (CudaModelOptions::fuse_fp8_input)
  bool profile_step = false;       // one eager step per batch between cudaProfilerStart and Stop (for ncu)
  std::string dtype = "float16";   // --dtype: float16 or bfloat16 (CudaModelOptions::activation_dtype)
  std::string tables_from;         // print the tables of this results JSON and exit (no GPU needed)
};

// Holds a stream in a host function until open() (or 2 s, so a full launch queue cannot
// deadlock the host thread that would open it), so that the launches behind it run back to back.
class StreamGate {
 public:
  Status hold(cudaStream_t stream) {
    open_ = false;
    timed_out_ = false;
    return cuda::cuda_status(cudaLaunchHostFunc(stream, &StreamGate::wait, this), "cudaLaunchHostFunc");
  }
  void open() { open_ = true; }
  bool timed_out() const { return timed_out_; }

 private:
  static void CUDART_CB wait(void* self) {
    auto* gate = static_cast<StreamGate*>(self);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!gate->open_.load()) {
      if (std::chrono::steady_clock::now() > deadline) {
        gate->timed_out_ = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  std::atomic<bool> open_{false};
  std::atomic<bool> timed_out_{false};
};

// One profiled step of `enqueue` (forward, which marks its ops, then what the caller marks
// itself on the profiler it is given). queued: the stream is held until all is enqueued.
Result<json> profile_step(cuda::CudaModel& model, const std::function<Status(cuda::StepProfiler&)>& enqueue,
                          bool queued) {
  cuda::StepProfiler profiler;
  StreamGate gate;
  json out;
  for (int run = 0; run < 2; ++run) {  // run 0 creates the profiler's events; run 1 is reported
    Status launched;
    if (queued) launched = gate.hold(model.stream());
    if (launched.is_ok()) launched = profiler.begin_step(model.stream());
    if (launched.is_ok()) {
      model.set_profiler(&profiler);
      launched = enqueue(profiler);
      model.set_profiler(nullptr);
    }
    // The host function reads `gate`: it must have returned before `gate` goes out of scope.
    gate.open();
    if (!launched.is_ok()) {
      (void)cudaStreamSynchronize(model.stream());
      (void)profiler.finish();  // closes the step
      return launched;
    }
    CROSSPOINT_ASSIGN_OR_RETURN(cuda::StepProfile profile, profiler.finish());
    if (run == 0) continue;
    out["method"] = queued ? "eager with a cudaEvent after every op; stream held until the step was enqueued, "
                             "so ops run back to back (GPU time per op)"
                           : "eager with a cudaEvent after every op, as launched (includes the GPU's wait for "
                             "each launch)";
    out["held_until_enqueued"] = queued && !gate.timed_out();
    out["total_ms"] = profile.total_ms;
    out["num_marks"] = profile.num_marks;
    json ops = json::array();
    for (const cuda::StepOpTime& t : profile.ops) {
      ops.push_back({{"op", cuda::step_op_name(t.op)},
                     {"ms", t.total_ms},
                     {"pct", profile.total_ms > 0 ? 100.0 * t.total_ms / profile.total_ms : 0.0},
                     {"calls", t.num_calls}});
    }
    out["ops"] = ops;
  }
  return out;
}

// num_seqs sequences of `cached` tokens each computing `num_new` more, sequence s in blocks
// [s * blocks_per_seq, (s + 1) * blocks_per_seq); logits for each sequence's last token.
HostForwardBatch make_batch(int32_t num_seqs, int32_t cached, int32_t num_new, int32_t block_size, int32_t vocab) {
  HostForwardBatch h;
  const int32_t context = cached + num_new;
  const int32_t blocks_per_seq = (context + block_size - 1) / block_size;
  h.clear(blocks_per_seq);
  for (int32_t s = 0; s < num_seqs; ++s) {
    std::vector<int32_t> tokens, table_row;
    for (int32_t t = 0; t < num_new; ++t) tokens.push_back(static_cast<int32_t>((s * 7919 + t * 104729 + 13) % vocab));
    for (int32_t b = 0; b < blocks_per_seq; ++b) table_row.push_back(s * blocks_per_seq + b);
    h.add_sequence(tokens, cached, table_row, LogitsWanted::kLast);
  }
  return h;
}

// The precision the roofline prices, from the CUDA model's format ("fp16", "w8a8-fp8",
// "w8a8-fp8-block128x128", "w8a8-int8-static", "w4a16-g128-act"): the name without its variant
// (block FP8 is priced as per-channel FP8: its scales are a rounding error of its bytes).
Result<analysis::Precision> precision_of(const std::string& format_name, int64_t* group_size) {
  *group_size = 128;
  const size_t g = format_name.find("-g");
  if (format_name.rfind("w4a16", 0) == 0 && g != std::string::npos)
    *group_size = std::atoll(format_name.c_str() + g + 2);
  for (const char* base : {"w4a16", "w8a8-fp8", "w8a8-int8"})
    if (format_name.rfind(base, 0) == 0) return analysis::parse_precision(base);
  return analysis::parse_precision(format_name);
}

struct Roofline {
  double bytes = 0, flops = 0, mem_bound_ms = 0, compute_bound_ms = 0;
  double bound_ms() const { return std::max(mem_bound_ms, compute_bound_ms); }
};

Roofline roofline(double bytes, double flops, double bw_gb_s, double tflops) {
  Roofline r;
  r.bytes = bytes;
  r.flops = flops;
  r.mem_bound_ms = bw_gb_s > 0 ? bytes / (bw_gb_s * 1e9) * 1e3 : 0;
  r.compute_bound_ms = tflops > 0 ? flops / (tflops * 1e12) * 1e3 : 0;
  return r;
}

json roofline_json(const Roofline& r, double measured_ms) {
  return {{"bytes", r.bytes},
          {"flops", r.flops},
          {"mem_bound_ms", r.mem_bound_ms},
          {"compute_bound_ms", r.compute_bound_ms},
          {"bound_ms", r.bound_ms()},
          {"pct_of_bandwidth", measured_ms > 0 ? 100.0 * r.mem_bound_ms / measured_ms : 0.0},
          {"pct_of_compute", measured_ms > 0 ? 100.0 * r.compute_bound_ms / measured_ms : 0.0},
          {"pct_of_roofline", measured_ms > 0 ? 100.0 * r.bound_ms() / measured_ms : 0.0}};
}

// The first targets at batch 1, in % of the measured bandwidth (0 = none set).
double bandwidth_target_pct(const std::string& precision) {
  if (precision == "fp16") return 85;
  if (precision == "w8a8-fp8") return 80;
  if (precision == "w4a16") return 75;
  return 0;
}

struct Ceilings {
  analysis::HardwareCeilings hw;
  std::string path;
};

// Everything measured for one checkpoint.
Result<json> bench_model(const std::string& dir, const Options& o, const Ceilings& ceilings) {
  size_t free_start = 0, total = 0;
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_start, &total), "cudaMemGetInfo");
  Stopwatch load_timer;
  ModelLoadOptions load_options;
  load_options.linear_formats = quantized_linear_weight_formats();
  CROSSPOINT_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::load(dir, load_options));
  const double load_s = load_timer.elapsed_seconds();
  CROSSPOINT_ASSIGN_OR_RETURN(analysis::ModelShape shape, analysis::load_model_shape(dir));

  const int32_t max_batch = *std::max_element(o.batches.begin(), o.batches.end());
  cuda::CudaModelOptions mo;
  mo.max_num_seqs = std::max(128, max_batch);
  mo.max_num_tokens = std::max({2048, o.prefill_tokens, max_batch});
  mo.max_model_len = std::max({o.max_model_len, o.context + 1, o.prefill_tokens});
  const int32_t decode_blocks = (o.context + 1 + mo.block_size - 1) / mo.block_size;
  const int32_t num_kv_blocks =
      std::max(max_batch * decode_blocks, (o.prefill_tokens + mo.block_size - 1) / mo.block_size);
  mo.batch_invariant = o.deterministic;
  mo.fuse_fp8_input = !o.fp8_input_unfused;
  mo.activation_dtype = o.dtype == "bfloat16" ? DType::kBF16 : DType::kF16;
  Stopwatch create_timer;
  CROSSPOINT_ASSIGN_OR_RETURN(std::unique_ptr<cuda::CudaModel> gpu, cuda::CudaModel::create(*model, mo));
  // What the runner would own: the KV cache and the step-input staging.
  CROSSPOINT_ASSIGN_OR_RETURN(cuda::CudaKvCache kv, gpu->make_kv_cache(num_kv_blocks));
  CROSSPOINT_ASSIGN_OR_RETURN(cuda::StepInputStaging inputs, gpu->make_step_inputs());
  const double create_s = create_timer.elapsed_seconds();
  model.reset();  // the host copy (mmap) is no longer needed
  size_t free_now = 0, free_min = 0;
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_min, &total), "cudaMemGetInfo");
  auto track_memory = [&] {
    if (cudaMemGetInfo(&free_now, &total) == cudaSuccess) free_min = std::min(free_min, free_now);
  };

  int64_t group_size = 128;
  CROSSPOINT_ASSIGN_OR_RETURN(analysis::Precision precision, precision_of(gpu->weight_format_name(), &group_size));
  const analysis::DecodeCost cost = analysis::decode_cost_from_shape(shape, precision, 2.0, group_size);
  bool fp16_fallback = false;
  const double tflops = analysis::math_peak_tflops(precision, ceilings.hw, &fp16_fallback);
  const double bw = ceilings.hw.bandwidth_gb_s;
  const int32_t V = gpu->vocab_size();
  cudaStream_t stream = gpu->stream();

  json out;
  out["model_dir"] = dir;
  out["weight_format"] = gpu->weight_format_name();
  out["precision"] = std::string(analysis::precision_name(precision));
  out["math_tflops"] = tflops;
  out["math_fell_back_to_fp16"] = fp16_fallback;
  out["cost_model"] = cost.description;
  out["load_s"] = load_s;
  out["create_s"] = create_s;
  const cuda::CudaMemoryReport& mem = gpu->memory();
  out["memory"] = {{"gpu_name", mem.gpu_name},
                   {"total_bytes", mem.total_bytes},
                   {"weight_bytes", mem.weight_bytes},
                   {"activation_bytes", mem.activation_bytes + inputs.device_bytes()},  // with the staging
                   {"kv_bytes", kv.bytes()},
                   {"num_kv_blocks", kv.num_blocks()},
                   {"free_before_load_bytes", free_start}};

  // forward + greedy argmax over the logits rows, as the runner's graphs do; `profiler`
  // (when given) also gets the argmax marked.
  CROSSPOINT_ASSIGN_OR_RETURN(
      cuda::DeviceBuffer tokens,
      cuda::DeviceBuffer::allocate(static_cast<size_t>(gpu->capacity().max_num_logits) * 4, "sampled tokens"));
  auto step = [&](const cuda::CudaForwardBatch& device, cuda::StepProfiler* profiler) -> Status {
    CROSSPOINT_RETURN_IF_ERROR(gpu->forward(device, kv));
    CROSSPOINT_RETURN_IF_ERROR(cuda::argmax_rows(gpu->logits(), V, tokens.as<int32_t>(), device.shape.num_logits, V,
                                                 stream, gpu->activation_dtype()));
    if (profiler != nullptr) profiler->mark(cuda::StepOp::kArgmax);
    return Status::ok();
  };
  // The two profiled steps; beside each, the unprofiled eager median it can be compared with
  // (their difference is roughly what the events themselves cost).
  auto breakdowns = [&](const cuda::CudaForwardBatch& device, const Result<TimingStats>& eager, json& cell) {
    for (const bool queued : {false, true}) {
      auto profiled = profile_step(*gpu, [&](cuda::StepProfiler& p) { return step(device, &p); }, queued);
      const char* key = queued ? "breakdown_queued" : "breakdown_eager";
      if (!profiled.is_ok()) {
        cell[std::string(key) + "_error"] = profiled.status().to_string();
        continue;
      }
      if (eager.is_ok()) {
        (*profiled)["unprofiled_eager_median_ms"] = eager->median_ms;
        const double overhead_ms = (*profiled)["total_ms"].get<double>() - eager->median_ms;
        (*profiled)["event_overhead_ms"] = overhead_ms;
        // Each op's time includes about this much of the events' own cost.
        (*profiled)["event_overhead_per_mark_ms"] = overhead_ms / std::max(1, (*profiled)["num_marks"].get<int32_t>());
      }
      cell[key] = *profiled;
    }
  };

  json decode = json::array();
  for (int32_t B : o.batches) {
    std::fprintf(stderr, "[bench_decode_step] %s: decode B=%d\n", dir.c_str(), B);
    const HostForwardBatch host = make_batch(B, o.context, 1, gpu->block_size(), V);
    CROSSPOINT_ASSIGN_OR_RETURN(cuda::CudaForwardBatch device,
                                inputs.upload(host.view(), kv, gpu->capacity().max_blocks_per_seq, B, stream));
    device.shape.max_query_len = 1;
    if (!o.tight_attention_bound) device.shape.max_context_len = gpu->max_model_len();
    auto enqueue = [&] { return step(device, nullptr); };
    json cell = {{"batch", B}, {"context", o.context}, {"attention_context_bound", device.shape.max_context_len}};
    Result<TimingStats> graph = time_graph_replays(enqueue, stream, o.replays, track_memory);
    Result<TimingStats> eager = time_launches(enqueue, stream, 3);  // warm-up
    if (eager.is_ok()) eager = time_launches(enqueue, stream, o.eager_reps);
    if (graph.is_ok()) cell["graph"] = to_json(*graph);
    else cell["graph_error"] = graph.status().to_string();
    if (eager.is_ok()) cell["eager"] = to_json(*eager);
    else cell["eager_error"] = eager.status().to_string();
    breakdowns(device, eager, cell);
    if (o.profile_step) {
      // What `ncu --profile-from-start off` sees: exactly one decode step per batch.
      CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "profiled step");
      CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaProfilerStart(), "cudaProfilerStart");
      const Status profiled = enqueue();
      const cudaError_t synced = cudaStreamSynchronize(stream);
      CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaProfilerStop(), "cudaProfilerStop");
      CROSSPOINT_RETURN_IF_ERROR(profiled);
      CROSSPOINT_CUDA_RETURN_IF_ERROR(synced, "profiled step");
    }
    // Bytes read per step: every weight once, each sequence's K and V over its whole context
    // (the cached tokens and the new one), and the B embedding rows gathered.
    const double kv_tokens = static_cast<double>(B) * (o.context + 1);
    const double kv_bytes = kv_tokens * cost.kv_bytes_per_context_token;
    const double bytes = cost.weight_bytes_per_step + kv_bytes + static_cast<double>(B) * shape.hidden_size * 2;
    const double flops = B * cost.flops_per_token + kv_tokens * cost.attention_flops_per_context_token;
    const Roofline r = roofline(bytes, flops, bw, tflops);
    const double measured = graph.is_ok() ? graph->median_ms : eager.is_ok() ? eager->median_ms : 0;
    cell["roofline"] = roofline_json(r, measured);
    cell["roofline"]["measured_from"] = graph.is_ok() ? "graph median" : "eager median";
    cell["roofline"]["weight_bytes"] = cost.weight_bytes_per_step;
    cell["roofline"]["kv_bytes"] = kv_bytes;
    cell["tokens_per_s"] = measured > 0 ? B / measured * 1e3 : 0.0;
    decode.push_back(cell);
  }
  out["decode"] = decode;
  const double target = bandwidth_target_pct(out["precision"].get<std::string>());
  for (const json& c : decode) {
    if (c["batch"].get<int32_t>() != 1 || target <= 0) continue;
    const double pct = c["roofline"]["pct_of_bandwidth"].get<double>();
    out["target_at_batch_1"] = {{"pct_of_bandwidth", pct}, {"target_pct", target}, {"met", pct >= target}};
  }

  // Prefill: one sequence, every token new, logits for its last token only.
  {
    const int32_t T = o.prefill_tokens;
    std::fprintf(stderr, "[bench_decode_step] %s: prefill %d tokens\n", dir.c_str(), T);
    const HostForwardBatch host = make_batch(1, 0, T, gpu->block_size(), V);
    CROSSPOINT_ASSIGN_OR_RETURN(cuda::CudaForwardBatch device,
                                inputs.upload(host.view(), kv, host.view().max_blocks_per_seq, T, stream));
    auto enqueue = [&] { return step(device, nullptr); };
    json cell = {{"tokens", T}, {"num_seqs", 1}};
    Result<TimingStats> eager = time_launches(enqueue, stream, 1);  // warm-up
    if (eager.is_ok()) eager = time_launches(enqueue, stream, o.prefill_reps);
    track_memory();
    if (eager.is_ok()) cell["eager"] = to_json(*eager);
    else cell["eager_error"] = eager.status().to_string();
    breakdowns(device, eager, cell);
    // FLOPs: every token through the linears, one row through lm_head, causal attention
    // (token p attends to p + 1 tokens). Bytes: the weights once and the K/V written.
    const double head_flops = 2.0 * static_cast<double>(shape.head_params());
    const double attention_pairs = static_cast<double>(T) * (T + 1) / 2;
    const double flops = static_cast<double>(T) * (cost.flops_per_token - head_flops) + head_flops +
                         attention_pairs * cost.attention_flops_per_context_token;
    const double bytes = cost.weight_bytes_per_step + static_cast<double>(T) * cost.kv_bytes_per_context_token;
    const Roofline r = roofline(bytes, flops, bw, tflops);
    const double measured = eager.is_ok() ? eager->median_ms : 0;
    cell["roofline"] = roofline_json(r, measured);
    cell["roofline"]["measured_from"] = "eager median";
    cell["tokens_per_s"] = measured > 0 ? T / measured * 1e3 : 0.0;
    out["prefill"] = cell;
  }
  track_memory();
  out["memory"]["min_free_bytes"] = free_min;
  out["memory"]["peak_used_bytes"] = free_start > free_min ? free_start - free_min : 0;
  return out;
}

Status write_json(const json& j, const std::string& path) {
  std::ofstream f(path);
  if (!f) return io_error("cannot write " + path);
  f << j.dump(2) << "\n";
  return f.good() ? Status::ok() : io_error("short write to " + path);
}

int run(int argc, char** argv) {
  Options o;
  CLI::App app{"Decode-step and prefill timings of whole CUDA model steps, with per-op breakdown and roofline"};
  auto* tables_from = app.add_option("--tables-from", o.tables_from,
                                     "print the Markdown tables of an earlier --out file and exit (no GPU needed)");
  auto* model = app.add_option("--model", o.model_dirs, "checkpoint directory (repeat for several precisions)");
  app.add_option("--batches", o.batches, "decode batch sizes, comma-separated")->delimiter(',');
  app.add_option("--context", o.context, "cached tokens per decoding sequence");
  app.add_option("--prefill-tokens", o.prefill_tokens, "new tokens of the prefill step");
  app.add_option("--max-model-len", o.max_model_len, "the engine's max-model-len (decode attention bound)");
  auto* ceilings_opt =
      app.add_option("--ceilings", o.ceilings_path, "ceilings.py JSON or crosspoint hwinfo --json output");
  auto* out = app.add_option("--out", o.out_path, "results JSON");
  for (CLI::Option* needed : {model, ceilings_opt, out}) needed->excludes(tables_from);
  app.add_option("--replays", o.replays, "timed graph replays per decode batch");
  app.add_option("--eager-reps", o.eager_reps, "timed eager decode steps per batch");
  app.add_option("--prefill-reps", o.prefill_reps, "timed prefill steps");
  app.add_flag("--deterministic", o.deterministic, "the batch-invariant kernels of serve --deterministic");
  app.add_flag("--fp8-input-unfused", o.fp8_input_unfused,
               "W8A8 linears quantise their input in a launch of their own, as before the norms and silu_mul "
               "wrote it quantised (the fusion's side-by-side baseline)");
  app.add_flag("--profile-step", o.profile_step,
               "run one more eager decode step per batch between cudaProfilerStart/Stop, for "
               "ncu --profile-from-start off (scripts/gpu/kernel_breakdown.py reads its CSV)");
  app.add_option("--dtype", o.dtype,
                 "activations, dense weights and KV cache: float16 or bfloat16 (serve --dtype; bf16 runs "
                 "unquantised checkpoints only)")
      ->check(CLI::IsMember({"float16", "bfloat16"}))
      ->capture_default_str();
  app.add_flag("--tight-attention-bound", o.tight_attention_bound,
               "size decode attention for the batch's context instead of max-model-len");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) { return app.exit(e); }
  if (!o.tables_from.empty()) {
    std::ifstream f(o.tables_from);
    const json results = json::parse(f, nullptr, /*allow_exceptions=*/false);
    if (!f || results.is_discarded() || !results.contains("models")) {
      std::fprintf(stderr, "bench_decode_step: %s is not a bench_decode_step results file\n", o.tables_from.c_str());
      return 1;
    }
    for (const json& m : results["models"])
      if (!m.contains("error")) decode_step::print_model_tables(m);
    return 0;
  }
  if (o.model_dirs.empty() || o.ceilings_path.empty() || o.out_path.empty()) {
    std::fprintf(stderr, "bench_decode_step: --model, --ceilings and --out are required\n");
    return 2;
  }
  const bool bad_batch =
      o.batches.empty() || std::any_of(o.batches.begin(), o.batches.end(), [](int32_t b) { return b <= 0; });
  if (bad_batch || o.context <= 0 || o.prefill_tokens <= 0 || o.replays <= 0 || o.eager_reps <= 0 ||
      o.prefill_reps <= 0) {
    std::fprintf(stderr,
                 "bench_decode_step: --batches, --context, --prefill-tokens and the repetitions must be positive\n");
    return 2;
  }
  if (cuda::cuda_device_count() == 0) {
    std::fprintf(stderr, "bench_decode_step: no CUDA device is available; this benchmark times model steps on a GPU\n");
    return 1;
  }
  auto hw = sweep::load_measured_ceilings(o.ceilings_path);
  if (!hw.is_ok()) {
    std::fprintf(stderr, "bench_decode_step: %s\n", hw.status().to_string().c_str());
    return 1;
  }
  const Ceilings ceilings{*hw, o.ceilings_path};
  cudaDeviceProp prop{};
  (void)cudaGetDeviceProperties(&prop, 0);
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  const char* commit = std::getenv("CROSSPOINT_COMMIT");
  json results = {
      {"benchmark", "bench_decode_step"},
      {"commit", commit != nullptr ? commit : "unknown"},
      {"gpu", prop.name},
      {"date", utc_now()},
      {"command", command},
      {"ceilings",
       {{"file", o.ceilings_path},
        {"name", ceilings.hw.name},
        {"bandwidth_gb_s", ceilings.hw.bandwidth_gb_s},
        {"fp16_tflops", ceilings.hw.fp16_tflops},
        {"fp8_tflops", ceilings.hw.fp8_tflops},
        {"source", ceilings.hw.source}}},
      {"options",
       {{"batches", o.batches},
        {"context", o.context},
        {"prefill_tokens", o.prefill_tokens},
        {"max_model_len", o.max_model_len},
        {"replays", o.replays},
        {"eager_reps", o.eager_reps},
        {"prefill_reps", o.prefill_reps},
        {"tight_attention_bound", o.tight_attention_bound},
        {"deterministic", o.deterministic},
        {"fp8_input_unfused", o.fp8_input_unfused},
        {"dtype", o.dtype}}},
      {"method",
       {{"graph", "forward + greedy argmax captured once, median/p10/p90 of timed replays after 3 warm-up replays"},
        {"eager", "the same launches from the host, inputs already on the device"},
        {"breakdown",
         "one profiled eager step with a cudaEvent after every op (eager with events): 'eager' as "
         "launched, 'queued' with the stream held until the step was enqueued; a W8A8 linear includes "
         "its fp8 activation quantisation unless the norm or silu_mul before it wrote its input quantised "
         "(then that op includes it), act-order W4A16 linears their column permutation"},
        {"kv_cache", "zeros as allocated, except the slots the timed steps write"},
        {"decode_bytes", "weights once + B x (context + 1) x K/V bytes per token + B embedding rows"},
        {"prefill_flops", "T x linear FLOPs + one lm_head row + causal attention T(T+1)/2 x per-pair FLOPs"}}},
      {"models", json::array()}};
  bool failed = false;
  for (const std::string& dir : o.model_dirs) {
    auto r = bench_model(dir, o, ceilings);
    if (r.is_ok()) {
      results["models"].push_back(*r);
      decode_step::print_model_tables(*r);
    } else {
      failed = true;
      std::fprintf(stderr, "bench_decode_step: %s: %s\n", dir.c_str(), r.status().to_string().c_str());
      results["models"].push_back({{"model_dir", dir}, {"error", r.status().to_string()}});
    }
    const Status written = write_json(results, o.out_path);  // after every model, so a timeout keeps the rest
    if (!written.is_ok()) {
      std::fprintf(stderr, "bench_decode_step: %s\n", written.to_string().c_str());
      return 1;
    }
  }
  std::fprintf(stderr, "bench_decode_step: wrote %s (%zu models%s)\n", o.out_path.c_str(), o.model_dirs.size(),
               failed ? ", some failed" : "");
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace crosspoint::bench

int main(int argc, char** argv) { return crosspoint::bench::run(argc, argv); }
