// Paged attention and decoder-op timings for Qwen2.5-7B shapes (H 28, Hkv 4, D 128, block 16,
// d 3584, I 18944, vocab 152064), random fp16 data generated on the device.
//
// Attention: decode at batch {1, 2, 4, 8, 10, 32, 64, 100, 128, 256} x context {128, 512,
// 2048, 4096}, each on the CUDA-core split kernel (+ merge kernel) and the tensor-core decode
// kernel (the default) side by side, then a summary table; decode under a 4096 bound; prefill
// of 1 x 2048 and 16 x 256 tokens. The batch 1-32 latency section times decode attention (the
// same two) at contexts 512 and 4096 under a 4096 bound, and
// rope_kv_write alone, each as a graph of 28 calls (one per layer), in us per call. Each
// timing replays a CUDA graph of `layers` attention calls, each on its own KV cache copy (as
// the 28 layers of a step are), with enough copies that the caches together exceed 8x the
// L2, so every call reads HBM; the time per call is the replay's median over --reps replays
// (after 3 warm-up replays) divided by the copies. Printed beside it: the K/V bytes a call
// must read, GB/s, and the share of the --bw-gbps ceiling. Before timing, each shape's output
// is checked against the split-kernel-only path (a "FAILED check" line if they differ).
//
// --fp8 times the default kernels on an e4m3 cache beside the fp16 one (decode and prefill).
//
//   bench_attention --bw-gbps 4226 [--reps 20] [--out bench_attention.json]
//                   [--small-batch | --decode-only | --fp8 | --shape SEQS:CTX ...]
#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/dtype.h"
#include "gpu/fill_random.h"
#include "gpu/graph_timing.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/decoder_ops.h"
#include "kernels/cuda/paged_attention.h"

namespace crosspoint::bench {
namespace {

constexpr int kHeads = 28, kKvHeads = 4, kHeadDim = 128, kBlockSize = 16;
constexpr int kHidden = 3584, kIntermediate = 18944, kVocab = 152064;
constexpr double kMinStreamBytes = 480e6;  // > 8x the H200's 60 MB L2
constexpr int kMaxCopies = 28;

using cuda::CudaAttentionKernels;

const char* kernels_name(CudaAttentionKernels k) {
  switch (k) {
    case CudaAttentionKernels::kDefault: return "default";
    case CudaAttentionKernels::kSplitDecode: return "split_decode";
    case CudaAttentionKernels::kDecodeOnly: return "decode_only";
    case CudaAttentionKernels::kSplitOnly: return "split_only";
    case CudaAttentionKernels::kBalancedDecode: return "balanced_decode";
    case CudaAttentionKernels::kPartitionedDecode: return "partitioned";
    case CudaAttentionKernels::kClusterDecode: return "cluster_decode";
  }
  return "?";
}

// One batch shape: num_seqs sequences, each num_new query rows and context_len cached tokens.
struct AttentionShape {
  std::string name;
  int num_seqs, num_new, context_len;
  CudaAttentionKernels kernels = CudaAttentionKernels::kDefault;
  int host_bound = 0;  // max_context_len the launch is sized for (a graph's bound); 0 = context_len
  bool fp8 = false;    // an e4m3 cache (--kv-cache-dtype fp8) instead of fp16
};

// The fp8 cache's scales: every e4m3 code (|x| <= 448) becomes |x| <= 1, as the fp16 data.
constexpr float kFp8Scale = 1.0f / 448.0f;

// Points the launch at K and V copy `c` of the caches (fp16 elements or e4m3 bytes).
void set_caches(cuda::CudaPagedAttentionArgs& a, uint8_t* caches, size_t cache_elems, int c, bool fp8) {
  const size_t elem_bytes = fp8 ? 1 : 2;
  uint8_t* key = caches + 2 * cache_elems * elem_bytes * c;
  uint8_t* value = key + cache_elems * elem_bytes;
  if (fp8) {
    a.key_cache_fp8 = key;
    a.value_cache_fp8 = value;
    a.k_scale = a.v_scale = kFp8Scale;
  } else {
    a.key_cache = reinterpret_cast<const uint16_t*>(key);
    a.value_cache = reinterpret_cast<const uint16_t*>(value);
  }
}

nlohmann::json bench_attention_shape(const AttentionShape& shape, double bw_gbps, cudaStream_t s, int reps) {
  const int num_tokens = shape.num_seqs * shape.num_new;
  const int blocks_per_seq = (shape.context_len + kBlockSize - 1) / kBlockSize;
  const int num_blocks = shape.num_seqs * blocks_per_seq;
  const size_t cache_elems = static_cast<size_t>(num_blocks) * kBlockSize * kKvHeads * kHeadDim;  // per K or V
  // Bytes a call must read: each sequence's K and V rows once per KV head.
  const size_t elem_bytes = shape.fp8 ? 1 : 2;
  const double kv_bytes = 2.0 * shape.num_seqs * shape.context_len * kKvHeads * kHeadDim * elem_bytes;
  const int copies =
      std::clamp(static_cast<int>(kMinStreamBytes / (2.0 * elem_bytes * cache_elems)) + 1, 1, kMaxCopies);

  std::vector<int32_t> tables(static_cast<size_t>(num_blocks));
  std::iota(tables.begin(), tables.end(), 0);
  std::shuffle(tables.begin(), tables.end(), std::mt19937(7));  // blocks scattered as after churn
  std::vector<int32_t> starts(shape.num_seqs + 1), contexts(shape.num_seqs, shape.context_len);
  for (int i = 0; i <= shape.num_seqs; ++i) starts[i] = i * shape.num_new;

  const int64_t qkv_stride = static_cast<int64_t>(kHeads + 2 * kKvHeads) * kHeadDim;
  uint16_t *query, *output;
  uint8_t* caches;
  int32_t *tables_dev, *starts_dev, *contexts_dev;
  void* workspace = nullptr;
  const int bound = shape.host_bound > 0 ? shape.host_bound : shape.context_len;
  const size_t workspace_bytes = cuda::cuda_paged_attention_workspace_bytes(num_tokens, kHeads, kHeadDim, bound);
  BENCH_CUDA(cudaMalloc(&query, static_cast<size_t>(num_tokens) * qkv_stride * 2));
  BENCH_CUDA(cudaMalloc(&output, static_cast<size_t>(num_tokens) * kHeads * kHeadDim * 2));
  BENCH_CUDA(cudaMalloc(&caches, 2 * cache_elems * copies * elem_bytes));
  BENCH_CUDA(cudaMalloc(&tables_dev, tables.size() * 4));
  BENCH_CUDA(cudaMalloc(&starts_dev, starts.size() * 4));
  BENCH_CUDA(cudaMalloc(&contexts_dev, contexts.size() * 4));
  if (workspace_bytes) {
    BENCH_CUDA(cudaMalloc(&workspace, workspace_bytes));
    BENCH_CUDA(cudaMemset(workspace, 0, workspace_bytes));  // the merge counters start at zero
  }
  BENCH_CUDA(cudaMemcpy(tables_dev, tables.data(), tables.size() * 4, cudaMemcpyHostToDevice));
  BENCH_CUDA(cudaMemcpy(starts_dev, starts.data(), starts.size() * 4, cudaMemcpyHostToDevice));
  BENCH_CUDA(cudaMemcpy(contexts_dev, contexts.data(), contexts.size() * 4, cudaMemcpyHostToDevice));
  fill_f16(query, static_cast<size_t>(num_tokens) * qkv_stride, -2.f, 2.f, 11, s);
  if (shape.fp8) fill_e4m3(caches, 2 * cache_elems * copies, 12, s);
  else fill_f16(reinterpret_cast<uint16_t*>(caches), 2 * cache_elems * copies, -1.f, 1.f, 12, s);

  cuda::CudaPagedAttentionArgs a;
  a.query = query;
  a.query_stride = qkv_stride;
  a.output = output;
  a.output_stride = static_cast<int64_t>(kHeads) * kHeadDim;
  a.block_tables = tables_dev;
  a.seq_token_start = starts_dev;
  a.seq_context_len = contexts_dev;
  a.num_seqs = shape.num_seqs;
  a.num_tokens = num_tokens;
  a.max_blocks_per_seq = blocks_per_seq;
  a.max_query_len = shape.num_new;
  a.max_context_len = bound;
  a.num_heads = kHeads;
  a.num_kv_heads = kKvHeads;
  a.head_dim = kHeadDim;
  a.block_size = kBlockSize;
  a.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  a.workspace = workspace;
  a.workspace_bytes = workspace_bytes;
  // Self-check before timing: the timed path against the split-kernel-only path on copy 0
  // (tensor cores vs CUDA cores, where fp16 probabilities allow ~1e-3; identical kernels for
  // split_decode decodes). A NaN or a large difference is printed as a FAILED check.
  double max_path_diff = 0;
  {
    const size_t out_count = static_cast<size_t>(num_tokens) * kHeads * kHeadDim;
    std::vector<uint16_t> out_default(out_count), out_other(out_count);
    cuda::CudaPagedAttentionArgs layer = a;
    set_caches(layer, caches, cache_elems, 0, shape.fp8);
    BENCH_CHECK(cuda::cuda_paged_attention_with(layer, shape.kernels, s));
    BENCH_CUDA(cudaMemcpyAsync(out_default.data(), output, out_count * 2, cudaMemcpyDeviceToHost, s));
    {
      BENCH_CUDA(cudaMemsetAsync(output, 0xFF, out_count * 2, s));  // NaN: a row left unwritten fails the check
      BENCH_CHECK(cuda::cuda_paged_attention_split_only(layer, s));
      BENCH_CUDA(cudaMemcpyAsync(out_other.data(), output, out_count * 2, cudaMemcpyDeviceToHost, s));
      BENCH_CUDA(cudaStreamSynchronize(s));
      for (size_t i = 0; i < out_count; ++i) {
        const double diff = std::fabs(static_cast<double>(crosspoint::f16_to_f32(out_default[i])) -
                                      crosspoint::f16_to_f32(out_other[i]));
        max_path_diff = std::isnan(diff) ? INFINITY : std::max(max_path_diff, diff);
      }
    }
  }
  const bool check_ok = max_path_diff <= 2e-3;
  if (!check_ok) std::printf("FAILED check: %s paths differ by %.3g\n", shape.name.c_str(), max_path_diff);

  const double ms = time_graph(
                        [&]() -> Status {
                          for (int c = 0; c < copies; ++c) {
                            cuda::CudaPagedAttentionArgs layer = a;
                            set_caches(layer, caches, cache_elems, c, shape.fp8);
                            CROSSPOINT_RETURN_IF_ERROR(cuda::cuda_paged_attention_with(layer, shape.kernels, s));
                          }
                          return Status::ok();
                        },
                        s, reps) /
                    copies;

  // Causal FLOPs: QK^T and PV, 2 per multiply-add, over each row's visible positions.
  double visible_sum = 0;
  for (int j = 0; j < shape.num_new; ++j) visible_sum += shape.context_len - shape.num_new + j + 1;
  const double flops = 4.0 * shape.num_seqs * visible_sum * kHeads * kHeadDim;
  const double us = ms * 1e3;
  const double gbps = kv_bytes / us / 1e3;
  std::printf(
      "%-26s %-14s %s seqs %4d new %5d ctx %5d  %10.2f us  KV %8.2f MB  %7.0f GB/s  %5.1f%% bw  %7.2f TF/s  (%d "
      "copies, workspace %.1f MB)\n",
      shape.name.c_str(), kernels_name(shape.kernels), shape.fp8 ? "e4m3" : "fp16", shape.num_seqs, shape.num_new,
      shape.context_len, us, kv_bytes / 1e6, gbps, 100 * gbps / bw_gbps, flops / us / 1e6, copies,
      workspace_bytes / 1e6);
  cudaFree(query);
  cudaFree(output);
  cudaFree(caches);
  cudaFree(tables_dev);
  cudaFree(starts_dev);
  cudaFree(contexts_dev);
  cudaFree(workspace);
  return {{"name", shape.name},
          {"kernels", kernels_name(shape.kernels)},
          {"kv_dtype", shape.fp8 ? "fp8_e4m3" : "fp16"},
          {"host_bound", bound},
          {"num_seqs", shape.num_seqs},
          {"num_new", shape.num_new},
          {"context_len", shape.context_len},
          {"us", us},
          {"kv_bytes", kv_bytes},
          {"gbps", gbps},
          {"pct_bw", 100 * gbps / bw_gbps},
          {"tflops", flops / us / 1e6},
          {"copies", copies},
          {"workspace_bytes", workspace_bytes},
          {"max_diff_vs_split_only", max_path_diff},
          {"check_ok", check_ok}};
}

// rope_kv_write's arguments at the 7B shape over T tokens (qkv rows of (H + 2 Hkv) * D, bias on).
cuda::RopeKvWriteArgs rope_args(uint16_t* qkv, const uint16_t* bias, const int32_t* positions, const float* inv_freq,
                                const int32_t* slots, uint16_t* key_cache, uint16_t* value_cache, int t,
                                int num_blocks) {
  cuda::RopeKvWriteArgs rope;
  rope.qkv = qkv;
  rope.qkv_stride = static_cast<int64_t>(kHeads + 2 * kKvHeads) * kHeadDim;
  rope.bias = bias;
  rope.positions = positions;
  rope.inv_freq = inv_freq;
  rope.slot_mapping = slots;
  rope.key_cache = key_cache;
  rope.value_cache = value_cache;
  rope.num_tokens = t;
  rope.num_heads = kHeads;
  rope.num_kv_heads = kKvHeads;
  rope.head_dim = kHeadDim;
  rope.block_size = kBlockSize;
  rope.num_blocks = num_blocks;
  return rope;
}

// One line per decoder op at T tokens: time, bytes moved (read + written), GB/s.
nlohmann::json bench_decoder_ops(int t, double bw_gbps, cudaStream_t s, int reps) {
  const int64_t qkv_width = static_cast<int64_t>(kHeads + 2 * kKvHeads) * kHeadDim;
  const int num_blocks = (t + kBlockSize - 1) / kBlockSize + 1;
  const size_t cache_elems = static_cast<size_t>(num_blocks) * kBlockSize * kKvHeads * kHeadDim;
  uint16_t *table, *delta, *weight, *x, *qkv, *bias, *key_cache, *value_cache, *gate_up, *act, *logits, *rows_out;
  float *residual, *inv_freq;
  int32_t *ids, *positions, *slots, *rows, *tokens;
  BENCH_CUDA(cudaMalloc(&table, static_cast<size_t>(kVocab) * kHidden * 2));
  BENCH_CUDA(cudaMalloc(&delta, static_cast<size_t>(t) * kHidden * 2));
  BENCH_CUDA(cudaMalloc(&weight, kHidden * 2));
  BENCH_CUDA(cudaMalloc(&x, static_cast<size_t>(t) * kHidden * 2));
  BENCH_CUDA(cudaMalloc(&qkv, static_cast<size_t>(t) * qkv_width * 2));
  BENCH_CUDA(cudaMalloc(&bias, qkv_width * 2));
  BENCH_CUDA(cudaMalloc(&key_cache, cache_elems * 2));
  BENCH_CUDA(cudaMalloc(&value_cache, cache_elems * 2));
  BENCH_CUDA(cudaMalloc(&gate_up, static_cast<size_t>(t) * 2 * kIntermediate * 2));
  BENCH_CUDA(cudaMalloc(&act, static_cast<size_t>(t) * kIntermediate * 2));
  BENCH_CUDA(cudaMalloc(&logits, static_cast<size_t>(t) * kVocab * 2));
  BENCH_CUDA(cudaMalloc(&rows_out, static_cast<size_t>(t) * kHidden * 2));
  BENCH_CUDA(cudaMalloc(&residual, static_cast<size_t>(t) * kHidden * 4));
  BENCH_CUDA(cudaMalloc(&inv_freq, kHeadDim / 2 * 4));
  for (int32_t** p : {&ids, &positions, &slots, &rows, &tokens}) BENCH_CUDA(cudaMalloc(p, static_cast<size_t>(t) * 4));
  std::vector<int32_t> host_ids(t), host_seq(t);
  std::mt19937 rng(5);
  for (int i = 0; i < t; ++i) {
    host_ids[i] = static_cast<int32_t>(rng() % kVocab);
    host_seq[i] = i;
  }
  BENCH_CUDA(cudaMemcpy(ids, host_ids.data(), t * 4, cudaMemcpyHostToDevice));
  for (int32_t* p : {positions, slots, rows}) BENCH_CUDA(cudaMemcpy(p, host_seq.data(), t * 4, cudaMemcpyHostToDevice));
  fill_f16(table, static_cast<size_t>(kVocab) * kHidden, -1.f, 1.f, 21, s);
  fill_f16(delta, static_cast<size_t>(t) * kHidden, -1.f, 1.f, 22, s);
  fill_f16(weight, kHidden, 0.5f, 1.5f, 23, s);
  fill_f16(qkv, static_cast<size_t>(t) * qkv_width, -1.f, 1.f, 24, s);
  fill_f16(bias, qkv_width, -0.1f, 0.1f, 25, s);
  fill_f16(gate_up, static_cast<size_t>(t) * 2 * kIntermediate, -4.f, 4.f, 26, s);
  fill_f16(logits, static_cast<size_t>(t) * kVocab, -10.f, 10.f, 27, s);
  fill_f32(residual, static_cast<size_t>(t) * kHidden, -1.f, 1.f, 28, s);
  fill_f32(inv_freq, kHeadDim / 2, 1e-4f, 1.f, 29, s);

  const cuda::RopeKvWriteArgs rope =
      rope_args(qkv, bias, positions, inv_freq, slots, key_cache, value_cache, t, num_blocks);

  struct Op {
    const char* name;
    double bytes;  // read + written
    std::function<Status()> run;
  };
  const double td = t;
  const std::vector<Op> ops = {
      {"embedding_gather", td * kHidden * (2 + 4),
       [&] { return cuda::embedding_gather(table, ids, residual, t, kHidden, kVocab, s); }},
      {"add_rms_norm", td * kHidden * (4 + 2 + 4 + 2) + kHidden * 2,
       [&] { return cuda::add_rms_norm(residual, delta, kHidden, weight, 1e-6f, x, kHidden, t, kHidden, s); }},
      {"rope_kv_write", td * ((kHeads + 2 * kKvHeads) * kHeadDim * 2 + (kHeads + 2 * kKvHeads) * kHeadDim * 2),
       [&] { return cuda::rope_kv_write(rope, s); }},
      {"silu_mul", td * kIntermediate * (4 + 2),
       [&] { return cuda::silu_mul(gate_up, 2 * kIntermediate, act, kIntermediate, t, kIntermediate, s); }},
      {"gather_rows", td * kHidden * 4, [&] { return cuda::gather_rows(x, kHidden, rows, rows_out, t, kHidden, s); }},
      {"argmax_rows", td * kVocab * 2, [&] { return cuda::argmax_rows(logits, kVocab, tokens, t, kVocab, s); }},
  };
  nlohmann::json out = nlohmann::json::array();
  for (const Op& op : ops) {
    const double us = time_graph(op.run, s, reps) * 1e3;
    const double gbps = op.bytes / us / 1e3;
    std::printf("%-18s T=%-4d %9.2f us  %9.3f MB  %7.0f GB/s  %5.1f%% bw\n", op.name, t, us, op.bytes / 1e6, gbps,
                100 * gbps / bw_gbps);
    out.push_back({{"op", op.name},
                   {"tokens", t},
                   {"us", us},
                   {"bytes", op.bytes},
                   {"gbps", gbps},
                   {"pct_bw", 100 * gbps / bw_gbps}});
  }
  for (void* p :
       std::initializer_list<void*>{table, delta, weight, x, qkv, bias, key_cache, value_cache, gate_up, act, logits,
                                    rows_out, residual, inv_freq, ids, positions, slots, rows, tokens})
    cudaFree(p);
  return out;
}

// rope_kv_write alone at T decode tokens of the 7B shape (bias on, every row stored): a graph
// of `layers` calls, us per call. Bytes: qkv read, q written, k and v written to the cache.
nlohmann::json bench_rope_latency(int t, int layers, cudaStream_t s, int reps) {
  const int64_t qkv_width = static_cast<int64_t>(kHeads + 2 * kKvHeads) * kHeadDim;
  const int num_blocks = (t + kBlockSize - 1) / kBlockSize + 1;
  const size_t cache_elems = static_cast<size_t>(num_blocks) * kBlockSize * kKvHeads * kHeadDim;
  uint16_t *qkv, *bias, *key_cache, *value_cache;
  float* inv_freq;
  int32_t *positions, *slots;
  BENCH_CUDA(cudaMalloc(&qkv, static_cast<size_t>(t) * qkv_width * 2));
  BENCH_CUDA(cudaMalloc(&bias, qkv_width * 2));
  BENCH_CUDA(cudaMalloc(&key_cache, cache_elems * 2));
  BENCH_CUDA(cudaMalloc(&value_cache, cache_elems * 2));
  BENCH_CUDA(cudaMalloc(&inv_freq, kHeadDim / 2 * 4));
  BENCH_CUDA(cudaMalloc(&positions, static_cast<size_t>(t) * 4));
  BENCH_CUDA(cudaMalloc(&slots, static_cast<size_t>(t) * 4));
  std::vector<int32_t> host_positions(t), host_slots(t);
  for (int i = 0; i < t; ++i) {
    host_positions[i] = 511 + 97 * i;  // decode positions past a 512-token prompt
    host_slots[i] = i;
  }
  BENCH_CUDA(cudaMemcpy(positions, host_positions.data(), t * 4, cudaMemcpyHostToDevice));
  BENCH_CUDA(cudaMemcpy(slots, host_slots.data(), t * 4, cudaMemcpyHostToDevice));
  fill_f16(qkv, static_cast<size_t>(t) * qkv_width, -1.f, 1.f, 31, s);
  fill_f16(bias, qkv_width, -0.1f, 0.1f, 32, s);
  fill_f32(inv_freq, kHeadDim / 2, 1e-4f, 1.f, 33, s);
  const cuda::RopeKvWriteArgs rope =
      rope_args(qkv, bias, positions, inv_freq, slots, key_cache, value_cache, t, num_blocks);
  const double us = time_graph(
                        [&]() -> Status {
                          for (int l = 0; l < layers; ++l) CROSSPOINT_RETURN_IF_ERROR(cuda::rope_kv_write(rope, s));
                          return Status::ok();
                        },
                        s, reps) *
                    1e3 / layers;
  const double bytes = static_cast<double>(t) * (qkv_width + kHeads * kHeadDim + 2 * kKvHeads * kHeadDim) * 2;
  std::printf("%-26s seqs %4d          %10.2f us per call  (%.1f KB moved; graph of %d calls)\n", "rope_kv_write", t,
              us, bytes / 1e3, layers);
  for (void* p : std::initializer_list<void*>{qkv, bias, key_cache, value_cache, inv_freq, positions, slots})
    cudaFree(p);
  return {{"op", "rope_kv_write"}, {"tokens", t}, {"us_per_call", us}, {"bytes", bytes}, {"layers", layers}};
}

// The decode table: the CUDA-core split kernel, the partitioned and the balanced tensor-core
// decode kernels (the default picks one of the two by shape), us per call and % of the read
// ceiling, then a summary.
nlohmann::json bench_decode_table(double bw_gbps, cudaStream_t s, int reps) {
  const std::vector<int> batches = {1, 2, 4, 8, 10, 32, 64, 100, 128, 256};
  const std::vector<int> contexts = {128, 512, 2048, 4096};
  const CudaAttentionKernels kernels[3] = {CudaAttentionKernels::kSplitDecode, CudaAttentionKernels::kPartitionedDecode,
                                           CudaAttentionKernels::kBalancedDecode};
  nlohmann::json out = nlohmann::json::array();
  std::map<std::pair<int, int>, std::vector<nlohmann::json>> cells;  // (batch, ctx) -> one line per kernel
  std::printf("\n== decode attention (one call = one layer): split kernel, partitioned, balanced ==\n");
  for (int batch : batches) {
    for (int context : contexts) {
      for (CudaAttentionKernels k : kernels) {
        nlohmann::json line = bench_attention_shape({"decode", batch, 1, context, k}, bw_gbps, s, reps);
        out.push_back(line);
        cells[{batch, context}].push_back(line);
      }
    }
  }
  std::printf("\n== decode summary: us per call split / partitioned / balanced (%% of %.0f GB/s for the last two) ==\n",
              bw_gbps);
  std::printf("%6s", "seqs");
  for (int context : contexts) std::printf(" | %-46s", ("ctx " + std::to_string(context)).c_str());
  std::printf("\n");
  for (int batch : batches) {
    std::printf("%6d", batch);
    for (int context : contexts) {
      const std::vector<nlohmann::json>& c = cells[{batch, context}];
      const double split_us = c[0]["us"], decode_us = c[1]["us"], balanced_us = c[2]["us"];
      bool ok = true;
      for (const nlohmann::json& line : c) ok = ok && line["check_ok"].get<bool>();
      std::printf(" | %6.1f / %6.1f (%4.1f%%) / %6.1f (%4.1f%%)%s", split_us, decode_us, c[1]["pct_bw"].get<double>(),
                  balanced_us, c[2]["pct_bw"].get<double>(), ok ? " " : "!");
    }
    std::printf("\n");
  }
  std::printf("(! = a self-check against the split-kernel-only path failed in that cell)\n");
  return out;
}

// The fp8 cache beside the fp16 one on the default kernels: decode at batch 1-256 x context
// 512-4096 and prefill, us per call, the fp8 / fp16 time and each one's share of the read
// ceiling (an e4m3 call reads half the bytes).
nlohmann::json bench_fp8_table(double bw_gbps, cudaStream_t s, int reps) {
  std::printf("\n== fp8 (e4m3) KV cache beside fp16, default kernels ==\n");
  nlohmann::json out = nlohmann::json::array();
  std::vector<std::pair<AttentionShape, std::pair<double, double>>> rows;
  std::vector<AttentionShape> shapes;
  for (int batch : {1, 8, 32, 64, 128, 256})
    for (int context : {512, 2048, 4096}) shapes.push_back({"decode", batch, 1, context});
  shapes.push_back({"prefill", 1, 2048, 2048});
  shapes.push_back({"prefill", 16, 256, 256});
  for (AttentionShape shape : shapes) {
    const nlohmann::json fp16 = bench_attention_shape(shape, bw_gbps, s, reps);
    shape.fp8 = true;
    const nlohmann::json fp8 = bench_attention_shape(shape, bw_gbps, s, reps);
    out.push_back(fp16);
    out.push_back(fp8);
    rows.push_back({shape, {fp16["us"].get<double>(), fp8["us"].get<double>()}});
  }
  std::printf("\n%-8s %5s %5s %6s | %10s %10s | %6s | %7s %7s\n", "kind", "seqs", "new", "ctx", "fp16 us", "e4m3 us",
              "ratio", "fp16 bw", "e4m3 bw");
  for (const auto& [shape, us] : rows) {
    const double bytes16 = 2.0 * shape.num_seqs * shape.context_len * kKvHeads * kHeadDim * 2;
    std::printf("%-8s %5d %5d %6d | %10.2f %10.2f | %6.3f | %6.1f%% %6.1f%%\n", shape.name.c_str(), shape.num_seqs,
                shape.num_new, shape.context_len, us.first, us.second, us.second / us.first,
                100 * bytes16 / us.first / 1e3 / bw_gbps, 100 * bytes16 / 2 / us.second / 1e3 / bw_gbps);
  }
  return out;
}

}  // namespace
}  // namespace crosspoint::bench

int main(int argc, char** argv) {
  using namespace crosspoint::bench;
  double bw_gbps = 4226;
  int reps = 20;
  std::string out_path = "bench_attention.json";
  bool small_batch_only = false;                 // --small-batch: only the batch 1-32 section and the decoder ops
  bool decode_only = false;                      // --decode-only: only the decode table (split and decode kernels)
  bool fp8_only = false;                         // --fp8: only the fp8-against-fp16 table
  std::vector<std::pair<int, int>> only_shapes;  // --shape SEQS:CTX (repeatable): only these decode shapes
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--bw-gbps") bw_gbps = std::stod(next());
    else if (a == "--reps") reps = std::max(1, std::stoi(next()));
    else if (a == "--out") out_path = next();
    else if (a == "--small-batch") small_batch_only = true;
    else if (a == "--decode-only") decode_only = true;
    else if (a == "--fp8") fp8_only = true;
    else if (a == "--shape") {
      const std::string v = next();
      const size_t colon = v.find(':');
      if (colon == std::string::npos) {
        std::fprintf(stderr, "--shape wants SEQS:CTX, got '%s'\n", v.c_str());
        return 2;
      }
      only_shapes.emplace_back(std::stoi(v.substr(0, colon)), std::stoi(v.substr(colon + 1)));
    } else {
      std::fprintf(stderr,
                   "usage: bench_attention [--bw-gbps X] [--reps N] [--out FILE] [--small-batch | --decode-only | "
                   "--fp8 | --shape SEQS:CTX ...]\n");
      return 2;
    }
  }
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("GPU %s, %d SMs, L2 %d MB; read ceiling %.0f GB/s; Qwen2.5-7B attention: H %d, Hkv %d, D %d, block %d\n",
              prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20, bw_gbps, kHeads, kKvHeads, kHeadDim,
              kBlockSize);
  cudaStream_t s;
  BENCH_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  nlohmann::json result = {
      {"gpu", prop.name},
      {"sms", prop.multiProcessorCount},
      {"read_gbps_ceiling", bw_gbps},
      {"reps", reps},
      {"shape", {{"heads", kHeads}, {"kv_heads", kKvHeads}, {"head_dim", kHeadDim}, {"block_size", kBlockSize}}}};
  const CudaAttentionKernels decode_kernels[] = {
      CudaAttentionKernels::kSplitDecode, CudaAttentionKernels::kPartitionedDecode,
      CudaAttentionKernels::kBalancedDecode, CudaAttentionKernels::kClusterDecode, CudaAttentionKernels::kDefault};
  result["decode"] = nlohmann::json::array();
  if (fp8_only) {
    result["fp8"] = bench_fp8_table(bw_gbps, s, reps);
    std::ofstream(out_path) << result.dump(1) << "\n";
    std::printf("wrote %s\n", out_path.c_str());
    return 0;
  }
  if (!only_shapes.empty()) {  // a few decode shapes, e.g. under a profiler
    for (const auto& [seqs, context] : only_shapes)
      for (CudaAttentionKernels k : decode_kernels)
        result["decode"].push_back(bench_attention_shape({"decode", seqs, 1, context, k}, bw_gbps, s, reps));
    std::ofstream(out_path) << result.dump(1) << "\n";
    return 0;
  }
  if (!small_batch_only) {
    result["decode"] = bench_decode_table(bw_gbps, s, reps);
    if (!decode_only) {
      // As a captured decode graph launches it: sized for max_model_len 4096, real contexts shorter.
      std::printf("\n== decode under a 4096 bound (context 512) ==\n");
      for (int batch : {1, 10, 64, 100})
        for (CudaAttentionKernels k : decode_kernels)
          result["decode"].push_back(
              bench_attention_shape({"decode, bound 4096", batch, 1, 512, k, 4096}, bw_gbps, s, reps));
    }
  }
  if (decode_only) {
    std::ofstream(out_path) << result.dump(1) << "\n";
    std::printf("wrote %s\n", out_path.c_str());
    return 0;
  }
  // Batch-1..32 latency at the 7B shape: decode attention under the model's 4096 bound at
  // contexts 512 and 4096, then rope_kv_write alone. Graphs of 28 calls (one per layer), us per call.
  std::printf(
      "\n== batch 1-32 decode latency (us per call, graphs of 28 calls): split, partitioned, balanced, cluster, "
      "default ==\n");
  result["small_batch"] = nlohmann::json::array();
  for (int batch : {1, 2, 4, 8, 32})
    for (int context : {512, 4096})
      for (CudaAttentionKernels k : decode_kernels)
        result["small_batch"].push_back(
            bench_attention_shape({"decode bound 4096", batch, 1, context, k, 4096}, bw_gbps, s, reps));
  for (int batch : {1, 2, 4, 8}) result["small_batch"].push_back(bench_rope_latency(batch, 28, s, reps));
  result["prefill"] = nlohmann::json::array();
  if (!small_batch_only) {
    std::printf("\n== prefill attention (causal, no cached prefix) ==\n");
    for (CudaAttentionKernels k : {CudaAttentionKernels::kDefault, CudaAttentionKernels::kSplitOnly}) {
      const char* name = k == CudaAttentionKernels::kSplitOnly ? "prefill (split kernel)" : "prefill (tensor cores)";
      result["prefill"].push_back(bench_attention_shape({name, 1, 2048, 2048, k}, bw_gbps, s, reps));
      result["prefill"].push_back(bench_attention_shape({name, 16, 256, 256, k}, bw_gbps, s, reps));
    }
  }
  std::printf("\n== decoder ops (d %d, I %d, vocab %d) ==\n", kHidden, kIntermediate, kVocab);
  result["decoder_ops"] = nlohmann::json::array();
  for (int t : {1, 256})
    for (auto& line : bench_decoder_ops(t, bw_gbps, s, reps)) result["decoder_ops"].push_back(line);
  std::ofstream(out_path) << result.dump(1) << "\n";
  std::printf("wrote %s\n", out_path.c_str());
  return 0;
}
