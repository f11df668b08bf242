// bench_tensor_parallel: one checkpoint's decode step whole on GPU 0 and split over N GPUs (one
// rank a GPU of this process, NCCL between them), per batch size, beside what the split costs:
//   whole   CudaModel on GPU 0, forward + greedy argmax captured in a CUDA graph, replays timed
//   split   every rank's CudaModel (TensorParallelModel's share) captures its forward in a graph
//           of its own, on a thread of its own; the ranks replay together (their collectives
//           meet) and each times its replays; the step is the slowest rank's median
//   sums    the step's collectives alone: 2 L all-reduces of a [B, hidden] fp16 block and the
//           logits gather of [B, ceil(vocab / N)] fp16 a rank, captured and replayed the same way
//   bus     NCCL's all-reduce of 256 MiB of fp16 (the interconnect's measured ceiling): bus
//           bandwidth = bytes x 2 (N - 1) / N / time, as nccl-tests reports it
// and, over two ranks or more, #40's targets: at batch 64 the split's tokens per second >= 1.8x
// the whole model's, at batch 1 its step <= 0.6x. Writes a results JSON (--out) and prints a table.
//   bench_tensor_parallel --model DIR --tensor-parallel-size 2 --batches 1,16,64 --context 512 --out FILE
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/utc_time.h"
#include "gpu/step_timing.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/decoder_ops.h"
#include "model/cuda/cuda_model.h"
#include "model/cuda/nccl_ranks.h"
#include "model/host_forward_batch.h"
#include "model/model.h"
#include "model/tensor_parallel_model.h"
#include "quant/gptq_linear_weight.h"

namespace crosspoint::bench {
namespace {

using nlohmann::json;

struct Options {
  std::string model_dir;
  int tensor_parallel_size = 2;
  std::vector<int32_t> batches = {1, 16, 64};
  int32_t context = 512;
  int32_t max_model_len = 4096;
  int32_t replays = 50;
  std::string out_path;
};

// B sequences of `context` cached tokens and one new token each.
HostForwardBatch decode_batch(int32_t num_seqs, int32_t context, int32_t block_size, int32_t vocab) {
  HostForwardBatch h;
  const int32_t blocks = (context + 1 + block_size - 1) / block_size;
  h.clear(blocks);
  for (int32_t s = 0; s < num_seqs; ++s) {
    const int32_t token[1] = {(s * 7919 + 13) % vocab};
    std::vector<int32_t> table(blocks);
    std::iota(table.begin(), table.end(), s * blocks);
    h.add_sequence(token, context, table, LogitsWanted::kLast);
  }
  return h;
}

// A CudaModel with its KV cache, staging and argmax output: one rank, or the whole model.
struct RankModel {
  std::unique_ptr<cuda::CudaModel> model;
  cuda::CudaKvCache kv;
  cuda::StepInputStaging inputs;
  cuda::DeviceBuffer tokens;
};

Result<RankModel> make_rank(const Model& model, const cuda::CudaModelOptions& mo, int32_t num_blocks) {
  RankModel r;
  CROSSPOINT_ASSIGN_OR_RETURN(r.model, cuda::CudaModel::create(model, mo));
  CROSSPOINT_ASSIGN_OR_RETURN(r.kv, r.model->make_kv_cache(num_blocks));
  CROSSPOINT_ASSIGN_OR_RETURN(r.inputs, r.model->make_step_inputs());
  CROSSPOINT_ASSIGN_OR_RETURN(
      r.tokens, cuda::DeviceBuffer::allocate(static_cast<size_t>(r.model->capacity().max_num_logits) * 4, "tokens"));
  return r;
}

// each(rank) on a thread per rank (its device set), all at once; the first error.
Status on_every_rank(const std::vector<int>& devices, const std::function<Status(int)>& each) {
  std::vector<Status> status(devices.size());
  {
    std::vector<std::jthread> threads;
    for (size_t r = 0; r < devices.size(); ++r)
      threads.emplace_back([&, r] {
        status[r] = cudaSetDevice(devices[r]) == cudaSuccess ? each(static_cast<int>(r))
                                                             : internal_error("cudaSetDevice failed");
      });
  }
  for (size_t r = 0; r < status.size(); ++r)
    if (!status[r].is_ok()) return Status(status[r].code(), "rank " + std::to_string(r) + ": " + status[r].message());
  return Status::ok();
}

// One decode step of B sequences on `r`: upload, then forward + argmax (what the graph holds).
Result<std::function<Status()>> decode_step(RankModel& r, int32_t B, const Options& o) {
  cuda::CudaModel& m = *r.model;
  const HostForwardBatch host = decode_batch(B, o.context, m.block_size(), m.vocab_size());
  CROSSPOINT_ASSIGN_OR_RETURN(cuda::CudaForwardBatch device,
                              r.inputs.upload(host.view(), r.kv, m.capacity().max_blocks_per_seq, B, m.stream()));
  device.shape.max_query_len = 1;
  device.shape.max_context_len = m.max_model_len();
  return std::function<Status()>([&r, device, B] {
    cuda::CudaModel& model = *r.model;
    CROSSPOINT_RETURN_IF_ERROR(model.forward(device, r.kv));
    return cuda::argmax_rows(model.logits(), model.vocab_size(), r.tokens.as<int32_t>(), B, model.vocab_size(),
                             model.stream(), model.activation_dtype());
  });
}

Result<json> run_bench(const Options& o) {
  ModelLoadOptions load;
  load.linear_formats = quantized_linear_weight_formats();
  CROSSPOINT_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::load(o.model_dir, load));
  const ModelConfig& c = model->config();
  const int N = o.tensor_parallel_size;
  const int32_t max_batch = *std::max_element(o.batches.begin(), o.batches.end());
  cuda::CudaModelOptions mo;
  mo.max_num_seqs = max_batch;
  mo.max_num_tokens = std::max(max_batch, 256);
  mo.max_model_len = std::max(o.max_model_len, o.context + 1);
  const int32_t num_blocks = max_batch * ((o.context + 1 + mo.block_size - 1) / mo.block_size);
  json out = {{"model_dir", o.model_dir}, {"tensor_parallel_size", N}, {"context", o.context}};

  // The whole model on GPU 0 first, freed before the split is made.
  std::vector<TimingStats> whole;
  {
    CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaSetDevice(0), "cudaSetDevice");
    CROSSPOINT_ASSIGN_OR_RETURN(RankModel w, make_rank(*model, mo, num_blocks));
    out["weight_format"] = w.model->weight_format_name();
    out["gpu"] = w.model->memory().gpu_name;
    out["whole_weight_bytes"] = w.model->memory().weight_bytes;
    for (int32_t B : o.batches) {
      std::fprintf(stderr, "[bench_tensor_parallel] whole model, batch %d\n", B);
      CROSSPOINT_ASSIGN_OR_RETURN(auto step, decode_step(w, B, o));
      CROSSPOINT_ASSIGN_OR_RETURN(TimingStats s, time_graph_replays(step, w.model->stream(), o.replays, [] {}));
      whole.push_back(s);
    }
  }

  std::vector<int> devices(static_cast<size_t>(N));
  std::iota(devices.begin(), devices.end(), 0);
  CROSSPOINT_ASSIGN_OR_RETURN(std::unique_ptr<cuda::NcclRanks> nccl, cuda::NcclRanks::create(devices));
  out["nccl_version"] = cuda::nccl_version(nccl->library());
  CROSSPOINT_ASSIGN_OR_RETURN(std::unique_ptr<TensorParallelModel> split, TensorParallelModel::create(*model, N));
  std::vector<RankModel> ranks(static_cast<size_t>(N));
  CROSSPOINT_RETURN_IF_ERROR(on_every_rank(devices, [&](int r) -> Status {
    cuda::CudaModelOptions ro = mo;
    ro.device = devices[r];
    ro.share = &split->share(r);
    ro.rank = r;
    ro.comm = nccl.get();
    CROSSPOINT_ASSIGN_OR_RETURN(ranks[r], make_rank(*model, ro, num_blocks));
    return Status::ok();
  }));
  out["rank_weight_bytes"] = ranks[0].model->memory().weight_bytes;

  const int64_t d = c.hidden_size, L = c.num_hidden_layers;
  const int64_t vocab_run = (model->vocab_size() + N - 1) / N;
  std::vector<cuda::DeviceBuffer> sum_buffers(static_cast<size_t>(N)), gather_send(static_cast<size_t>(N)),
      gather_recv(static_cast<size_t>(N));
  CROSSPOINT_RETURN_IF_ERROR(on_every_rank(devices, [&](int r) -> Status {
    CROSSPOINT_ASSIGN_OR_RETURN(sum_buffers[r], cuda::DeviceBuffer::allocate(max_batch * d * 2, "sum buffer"));
    CROSSPOINT_ASSIGN_OR_RETURN(gather_send[r], cuda::DeviceBuffer::allocate(max_batch * vocab_run * 2, "gather"));
    CROSSPOINT_ASSIGN_OR_RETURN(gather_recv[r],
                                cuda::DeviceBuffer::allocate(N * max_batch * vocab_run * 2, "gathered"));
    return Status::ok();
  }));

  json decode = json::array();
  for (size_t i = 0; i < o.batches.size(); ++i) {
    const int32_t B = o.batches[i];
    std::fprintf(stderr, "[bench_tensor_parallel] %d ranks, batch %d\n", N, B);
    std::vector<TimingStats> step(static_cast<size_t>(N)), sums(static_cast<size_t>(N));
    CROSSPOINT_RETURN_IF_ERROR(on_every_rank(devices, [&](int r) -> Status {
      CROSSPOINT_ASSIGN_OR_RETURN(auto enqueue, decode_step(ranks[r], B, o));
      CROSSPOINT_ASSIGN_OR_RETURN(step[r], time_graph_replays(enqueue, ranks[r].model->stream(), o.replays, [] {}));
      const cudaStream_t s = ranks[r].model->stream();
      auto collectives = [&, r, s]() -> Status {
        for (int64_t k = 0; k < 2 * L; ++k)
          CROSSPOINT_RETURN_IF_ERROR(nccl->all_reduce_sum(r, sum_buffers[r].as(), B * d, DType::kF16, s));
        return nccl->all_gather(r, gather_send[r].as(), gather_recv[r].as(), B * vocab_run, DType::kF16, s);
      };
      CROSSPOINT_ASSIGN_OR_RETURN(sums[r], time_graph_replays(collectives, s, o.replays, [] {}));
      return Status::ok();
    }));
    auto slowest = [](const std::vector<TimingStats>& v) {
      return *std::max_element(v.begin(), v.end(),
                               [](const TimingStats& a, const TimingStats& b) { return a.median_ms < b.median_ms; });
    };
    const TimingStats split_step = slowest(step), split_sums = slowest(sums);
    const double reduce_bytes = 2.0 * L * B * d * 2, gather_bytes = static_cast<double>(B) * vocab_run * 2 * N;
    json cell = {{"batch", B},
                 {"whole_graph", to_json(whole[i])},
                 {"split_graph", to_json(split_step)},
                 {"split_step_over_whole", split_step.median_ms / whole[i].median_ms},
                 {"split_tokens_per_s_over_whole", whole[i].median_ms / split_step.median_ms},
                 {"collectives_graph", to_json(split_sums)},
                 {"all_reduce_bytes_per_step", reduce_bytes},
                 {"logits_gather_bytes_per_step", gather_bytes},
                 {"collectives_share_of_step", split_sums.median_ms / split_step.median_ms}};
    std::printf(
        "batch %4d: whole %.3f ms, %d ranks %.3f ms (%.2fx the tokens/s); collectives alone %.3f ms "
        "(%.2f MB of all-reduces, %.2f MB gathered)\n",
        B, whole[i].median_ms, N, split_step.median_ms, whole[i].median_ms / split_step.median_ms, split_sums.median_ms,
        reduce_bytes / 1e6, gather_bytes / 1e6);
    decode.push_back(cell);
  }
  out["decode"] = decode;

  // The interconnect: NCCL's all-reduce of 256 MiB of fp16, eager, 20 timed of 25.
  const int64_t n = int64_t{128} << 20;
  std::vector<cuda::DeviceBuffer> big(static_cast<size_t>(N));
  std::vector<double> seconds(static_cast<size_t>(N));
  CROSSPOINT_RETURN_IF_ERROR(on_every_rank(devices, [&](int r) -> Status {
    CROSSPOINT_ASSIGN_OR_RETURN(big[r], cuda::DeviceBuffer::allocate(n * 2, "256 MiB"));
    const cudaStream_t s = ranks[r].model->stream();
    cudaEvent_t start = nullptr, stop = nullptr;
    (void)cudaEventCreate(&start);
    (void)cudaEventCreate(&stop);
    for (int i = 0; i < 5; ++i) CROSSPOINT_RETURN_IF_ERROR(nccl->all_reduce_sum(r, big[r].as(), n, DType::kF16, s));
    (void)cudaEventRecord(start, s);
    for (int i = 0; i < 20; ++i) CROSSPOINT_RETURN_IF_ERROR(nccl->all_reduce_sum(r, big[r].as(), n, DType::kF16, s));
    (void)cudaEventRecord(stop, s);
    CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop), "all-reduce timing");
    float ms = 0;
    (void)cudaEventElapsedTime(&ms, start, stop);
    seconds[r] = ms / 20 / 1e3;
    (void)cudaEventDestroy(start);
    (void)cudaEventDestroy(stop);
    return Status::ok();
  }));
  const double t = *std::max_element(seconds.begin(), seconds.end());
  const double bus = N > 1 ? n * 2.0 * 2.0 * (N - 1) / N / t / 1e9 : 0.0;
  out["all_reduce_256mib"] = {{"seconds", t}, {"bus_bandwidth_gb_s", bus}};
  std::printf("NCCL all-reduce of 256 MiB fp16: %.3f ms, bus bandwidth %.1f GB/s%s\n", t * 1e3, bus,
              N > 1 ? "" : " (one rank: nothing crosses an interconnect)");

  // #40's targets, where the batches were run over more than one rank.
  for (const json& cell : N > 1 ? decode : json::array()) {
    const int32_t B = cell["batch"].get<int32_t>();
    if (B == 64)
      out["target_batch_64"] = {{"tokens_per_s_ratio", cell["split_tokens_per_s_over_whole"]},
                                {"target", 1.8},
                                {"met", cell["split_tokens_per_s_over_whole"].get<double>() >= 1.8}};
    if (B == 1)
      out["target_batch_1"] = {{"step_ratio", cell["split_step_over_whole"]},
                               {"target", 0.6},
                               {"met", cell["split_step_over_whole"].get<double>() <= 0.6}};
  }
  // Ranks freed on their own devices.
  CROSSPOINT_RETURN_IF_ERROR(on_every_rank(devices, [&](int r) -> Status {
    ranks[r] = RankModel();
    big[r] = cuda::DeviceBuffer();
    sum_buffers[r] = cuda::DeviceBuffer();
    gather_send[r] = cuda::DeviceBuffer();
    gather_recv[r] = cuda::DeviceBuffer();
    return Status::ok();
  }));
  return out;
}

int run(int argc, char** argv) {
  Options o;
  CLI::App app{
      "The decode step whole on GPU 0 and split over N GPUs through NCCL, its collectives alone, and "
      "NCCL's all-reduce bus bandwidth"};
  app.add_option("--model", o.model_dir, "checkpoint directory")->required();
  app.add_option("--tensor-parallel-size", o.tensor_parallel_size, "ranks, one GPU each (GPUs 0 .. N-1)");
  app.add_option("--batches", o.batches, "decode batch sizes, comma-separated")->delimiter(',');
  app.add_option("--context", o.context, "cached tokens per decoding sequence");
  app.add_option("--max-model-len", o.max_model_len, "the engine's max-model-len (decode attention bound)");
  app.add_option("--replays", o.replays, "timed graph replays per batch");
  app.add_option("--out", o.out_path, "results JSON")->required();
  CLI11_PARSE(app, argc, argv);
  if (o.tensor_parallel_size < 1 || o.batches.empty() || o.context < 0 || o.replays < 1) {
    std::fprintf(stderr, "bench_tensor_parallel: -tp, --batches, --context and --replays must be positive\n");
    return 2;
  }
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  Result<json> result = run_bench(o);
  if (!result.is_ok()) {
    std::fprintf(stderr, "bench_tensor_parallel: %s\n", result.status().to_string().c_str());
    return 1;
  }
  json j = *result;
  j["command"] = command;
  j["date_utc"] = utc_now();
  std::ofstream f(o.out_path);
  f << j.dump(2) << "\n";
  if (!f.good()) {
    std::fprintf(stderr, "bench_tensor_parallel: cannot write %s\n", o.out_path.c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace crosspoint::bench

int main(int argc, char** argv) { return crosspoint::bench::run(argc, argv); }
