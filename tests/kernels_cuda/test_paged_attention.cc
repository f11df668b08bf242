// cuda_paged_attention against a double-precision host loop over the same fp16 cache:
// decodes at contexts on and across block boundaries, a 4,100-token decode (split context),
// prefill chunks with and without a cached prefix, mixed batches with an empty sequence and a
// padding row, GQA 7:1, 1:1 and 16:1 (two head chunks), head_dim 64 / 128 / 96 / 256, block
// sizes 16 and 32, block tables in shuffled order, with the workspace (context splits) and
// without it (one split), and host context bounds larger than the real contexts.
//
// Every case runs seven ways (CudaAttentionKernels): the default (prefill sequences of >= 16 new
// rows on the tensor-core prefill kernel, every other row on a tensor-core decode kernel, the
// cluster, balanced or partitioned form as the dispatch picks), those other rows on the
// CUDA-core split kernel, every row on the decode kernel, every row on the split kernel, and
// the default with every decode row on the balanced, the partitioned, then the cluster form. Each launch is made twice
// on re-poisoned outputs and partials (the merge counters left as the first launch left them) and must give the same
// bits; after every launch the workspace's counters must be back at zero.
//
// bf16 cases (dtype kBF16: a bf16 model) hold query, cache and output in bf16: the same sums,
// rounded to bf16's 8-bit significand, so the tolerance's 2^-11 terms become 2^-8.
//
// fp8 cases hold the cache as e4m3 bytes with per-tensor scales that are not powers of two
// (the kernels fold k_scale into the softmax scale and v_scale into the output); the
// reference reads the same bytes as e4m3 * scale, so the tolerance is the fp16 one.
//
// Tolerance: outputs are convex combinations of V values in [-1, 1] computed in fp32 and rounded
// to fp16 once: |error| <= 2^-11 |ref| (the rounding) + 3e-5 (fp32 dot products, exp2f and sums
// over up to 4,100 positions: ~sqrt(4100) * 6e-8 relative to max |v| = 1, with margin). The
// tensor-core kernels also round the probabilities to fp16 before P V (as FlashAttention does):
// at most 2^-11 * sum(p |v|) / sum(p) more, which the reference computes per output. A wrong
// position, head, mask or softmax weight shows up as errors of 1e-2 or more.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "common/dtype.h"
#include "kernels/fp8.h"
#include "kernels/cuda/paged_attention.h"
#include "kernels_cuda/reference.h"

namespace crosspoint::cuda {
namespace {

using testing::DeviceBuffer;

struct SeqShape {
  int num_new;      // query rows this step
  int context_len;  // tokens in the cache after this step
};

struct AttentionCase {
  std::string name;
  int num_heads, num_kv_heads, head_dim, block_size;
  std::vector<SeqShape> seqs;
  int padding_rows = 0;         // rows past seq_token_start[num_seqs] (a graph bucket's padding)
  int context_bound_extra = 0;  // host max_context_len = real max + this
  bool use_workspace = true;
  bool fp8 = false;   // an e4m3 cache with kFp8KScale / kFp8VScale
  bool bf16 = false;  // query, cache and output in bf16
};

constexpr float kFp8KScale = 0.0125f;  // K in [-1, 1] -> codes up to 80
constexpr float kFp8VScale = 0.0037f;  // V in [-1, 1] -> codes up to ~270

// The fp8 twin of a case: same shapes, "fp8 " before its name.
AttentionCase fp8_case(AttentionCase c) {
  c.name = "fp8 " + c.name;
  c.fp8 = true;
  return c;
}

// The bf16 twin of a case: same shapes, "bf16 " before its name.
AttentionCase bf16_case(AttentionCase c) {
  c.name = "bf16 " + c.name;
  c.bf16 = true;
  return c;
}

// A 16-bit value of the case's type.
float value_of(const AttentionCase& c, uint16_t bits) {
  return c.bf16 ? crosspoint::bf16_to_f32(bits) : crosspoint::f16_to_f32(bits);
}
// fp16 bits as bf16 (round to nearest even).
std::vector<uint16_t> to_bf16(const std::vector<uint16_t>& f16) {
  std::vector<uint16_t> out(f16.size());
  for (size_t i = 0; i < f16.size(); ++i) out[i] = crosspoint::f32_to_bf16(crosspoint::f16_to_f32(f16[i]));
  return out;
}

// Host inputs of one case, the tables as the runner would build them.
struct AttentionProblem {
  int num_tokens = 0, num_real_tokens = 0, max_blocks_per_seq = 0, num_blocks = 0, max_context = 0, max_query = 0;
  int64_t query_stride = 0, output_stride = 0;
  std::vector<int32_t> block_tables, seq_token_start, seq_context_len;
  std::vector<uint16_t> query, key_cache, value_cache;
  std::vector<uint8_t> key_cache_fp8, value_cache_fp8;  // fp8 cases: e4m3(x / scale) of the fp16 values
};

std::vector<uint8_t> quantize_e4m3(const std::vector<uint16_t>& values, float scale) {
  std::vector<uint8_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = f32_to_e4m3(crosspoint::f16_to_f32(values[i]) / scale);
  return out;
}

AttentionProblem make_problem(const AttentionCase& c, std::mt19937& rng) {
  AttentionProblem p;
  const int num_seqs = static_cast<int>(c.seqs.size());
  p.seq_token_start.push_back(0);
  int blocks_needed = 0;
  for (const SeqShape& s : c.seqs) {
    p.seq_token_start.push_back(p.seq_token_start.back() + s.num_new);
    p.seq_context_len.push_back(s.context_len);
    const int blocks = (s.context_len + c.block_size - 1) / c.block_size;
    blocks_needed += blocks;
    p.max_blocks_per_seq = std::max(p.max_blocks_per_seq, blocks);
    p.max_context = std::max(p.max_context, s.context_len);
    p.max_query = std::max(p.max_query, s.num_new);
  }
  p.max_blocks_per_seq += 1;  // a spare column, filled with -1: never read
  p.num_real_tokens = p.seq_token_start.back();
  p.num_tokens = p.num_real_tokens + c.padding_rows;
  p.num_blocks = blocks_needed + 3;  // spare blocks that belong to nobody
  std::vector<int32_t> order(p.num_blocks);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);  // physical blocks in no particular order
  p.block_tables.assign(static_cast<size_t>(num_seqs) * p.max_blocks_per_seq, -1);
  int next = 0;
  for (int s = 0; s < num_seqs; ++s)
    for (int b = 0; b < (c.seqs[s].context_len + c.block_size - 1) / c.block_size; ++b)
      p.block_tables[static_cast<size_t>(s) * p.max_blocks_per_seq + b] = order[next++];
  const int64_t row_width = static_cast<int64_t>(c.num_heads) * c.head_dim;
  p.query_stride = row_width + 2 * static_cast<int64_t>(c.num_kv_heads) * c.head_dim;  // rows of a fused qkv buffer
  p.output_stride = row_width + 8;
  // q in [-2, 2] makes some softmax rows peaked, others flat.
  p.query = testing::random_f16(rng, static_cast<size_t>(p.num_tokens) * p.query_stride, -2.f, 2.f);
  const size_t cache_count = static_cast<size_t>(p.num_blocks) * c.block_size * c.num_kv_heads * c.head_dim;
  p.key_cache = testing::random_f16(rng, cache_count, -1.f, 1.f);
  p.value_cache = testing::random_f16(rng, cache_count, -1.f, 1.f);
  if (c.bf16) {
    p.query = to_bf16(p.query);
    p.key_cache = to_bf16(p.key_cache);
    p.value_cache = to_bf16(p.value_cache);
  }
  if (c.fp8) {
    p.key_cache_fp8 = quantize_e4m3(p.key_cache, kFp8KScale);
    p.value_cache_fp8 = quantize_e4m3(p.value_cache, kFp8VScale);
  }
  return p;
}

// out[t][h][d] in double for the real rows, straight from the header's definition, and
// abs_weighted[t][h][d] = sum_p prob_p |v_p[d]| (the scale of a probability-rounding error).
struct AttentionRef {
  std::vector<double> out, abs_weighted;
};
AttentionRef attention_ref(const AttentionCase& c, const AttentionProblem& p, float scale) {
  AttentionRef ref;
  std::vector<double>& out = ref.out;
  out.assign(static_cast<size_t>(p.num_real_tokens) * c.num_heads * c.head_dim, 0.0);
  ref.abs_weighted.assign(out.size(), 0.0);
  const int group = c.num_heads / c.num_kv_heads;
  const size_t row = static_cast<size_t>(c.num_kv_heads) * c.head_dim;  // one position's [Hkv, D]
  for (size_t s = 0; s < c.seqs.size(); ++s) {
    const int num_new = c.seqs[s].num_new, context = c.seqs[s].context_len;
    // The sequence's K and V gathered through its block table: [context, Hkv, D] as double.
    std::vector<double> keys(context * row), values(context * row);
    for (int pos = 0; pos < context; ++pos) {
      const int block = p.block_tables[s * p.max_blocks_per_seq + pos / c.block_size];
      const size_t slot = static_cast<size_t>(block) * c.block_size + pos % c.block_size;
      for (size_t i = 0; i < row; ++i) {
        keys[pos * row + i] = c.fp8 ? static_cast<double>(e4m3_to_f32(p.key_cache_fp8[slot * row + i])) * kFp8KScale
                                    : value_of(c, p.key_cache[slot * row + i]);
        values[pos * row + i] = c.fp8 ? static_cast<double>(e4m3_to_f32(p.value_cache_fp8[slot * row + i])) * kFp8VScale
                                      : value_of(c, p.value_cache[slot * row + i]);
      }
    }
    for (int j = 0; j < num_new; ++j) {
      const int t = p.seq_token_start[s] + j;
      const int visible = context - num_new + j + 1;
      for (int h = 0; h < c.num_heads; ++h) {
        const size_t kv = static_cast<size_t>(h / group) * c.head_dim;
        std::vector<double> q(c.head_dim);
        for (int d = 0; d < c.head_dim; ++d) q[d] = value_of(c, p.query[t * p.query_stride + h * c.head_dim + d]);
        std::vector<double> score(visible);
        double max_score = -INFINITY;
        for (int pos = 0; pos < visible; ++pos) {
          double dot = 0;
          for (int d = 0; d < c.head_dim; ++d) dot += q[d] * keys[pos * row + kv + d];
          score[pos] = dot * scale;
          max_score = std::max(max_score, score[pos]);
        }
        double total = 0;
        for (double& x : score) total += (x = std::exp(x - max_score));
        const size_t out_at = (static_cast<size_t>(t) * c.num_heads + h) * c.head_dim;
        for (int pos = 0; pos < visible; ++pos) {
          for (int d = 0; d < c.head_dim; ++d) {
            const double v = values[pos * row + kv + d];
            out[out_at + d] += score[pos] * v;
            ref.abs_weighted[out_at + d] += score[pos] * std::fabs(v);
          }
        }
        for (int d = 0; d < c.head_dim; ++d) {
          out[out_at + d] /= total;
          ref.abs_weighted[out_at + d] /= total;
        }
      }
    }
  }
  return ref;
}

using Path = CudaAttentionKernels;
constexpr Path kAllPaths[] = {Path::kDefault,        Path::kSplitDecode,       Path::kDecodeOnly,   Path::kSplitOnly,
                              Path::kBalancedDecode, Path::kPartitionedDecode, Path::kClusterDecode};

const char* path_name(Path path) {
  switch (path) {
    case Path::kDefault: return "default     ";
    case Path::kSplitDecode: return "split decode";
    case Path::kDecodeOnly: return "decode only ";
    case Path::kSplitOnly: return "split only  ";
    case Path::kBalancedDecode: return "balanced    ";
    case Path::kPartitionedDecode: return "partitioned ";
    case Path::kClusterDecode: return "cluster     ";
  }
  return "?";
}

Status launch(Path path, const CudaPagedAttentionArgs& a, cudaStream_t stream) {
  if (path == Path::kDefault) return cuda_paged_attention(a, stream);
  if (path == Path::kSplitOnly) return cuda_paged_attention_split_only(a, stream);
  return cuda_paged_attention_with(a, path, stream);
}

// Whether a sequence of num_new rows may have been on a tensor-core kernel (fp16 probabilities).
bool on_tensor_cores(Path path, const AttentionCase& c, int num_new) {
  const bool decode_kernel = (c.head_dim == 64 || c.head_dim == 128) && c.num_heads / c.num_kv_heads <= 16;
  switch (path) {
    case Path::kDefault: return num_new >= 16 || decode_kernel;
    case Path::kSplitDecode: return num_new >= 16;
    case Path::kDecodeOnly: return decode_kernel;
    case Path::kSplitOnly: return false;
    case Path::kBalancedDecode: return num_new >= 16 || decode_kernel;
    case Path::kPartitionedDecode: return num_new >= 16 || decode_kernel;
    case Path::kClusterDecode: return num_new >= 16 || decode_kernel;
  }
  return true;
}

// The merge counters at the start of a workspace: zeroed here before a first launch, and
// expected back at zero after every launch.
void zero_counters(DeviceBuffer<uint8_t>& workspace, size_t workspace_bytes) {
  if (workspace_bytes == 0) return;
  ASSERT_EQ(cudaMemset(workspace.get(), 0, cuda_paged_attention_workspace_counter_bytes()), cudaSuccess);
}
// Re-poisons the partials only (NaN): a partial read before it is written shows.
void poison_partials(DeviceBuffer<uint8_t>& workspace, size_t workspace_bytes) {
  const size_t counters = cuda_paged_attention_workspace_counter_bytes();
  if (workspace_bytes <= counters) return;
  ASSERT_EQ(cudaMemset(workspace.get() + counters, 0xFF, workspace_bytes - counters), cudaSuccess);
}
void expect_counters_zero(const DeviceBuffer<uint8_t>& workspace, size_t workspace_bytes) {
  if (workspace_bytes == 0) return;
  std::vector<uint8_t> counters(cuda_paged_attention_workspace_counter_bytes());
  ASSERT_EQ(cudaMemcpy(counters.data(), workspace.get(), counters.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(std::all_of(counters.begin(), counters.end(), [](uint8_t b) { return b == 0; }))
      << "a launch left a merge counter non-zero";
}

// Checks every output element (real rows within tolerance, padding rows and stride gaps still
// poisoned); returns the largest error.
double expect_matches(const AttentionCase& c, const AttentionProblem& p, const AttentionRef& want,
                      const std::vector<uint16_t>& got, Path path) {
  std::vector<bool> rounded_probs(p.num_tokens, false);  // rows a tensor-core kernel may have written
  for (size_t s = 0; s < c.seqs.size(); ++s)
    for (int t = p.seq_token_start[s]; t < p.seq_token_start[s + 1]; ++t)
      rounded_probs[t] = on_tensor_cores(path, c, c.seqs[s].num_new);
  double max_err = 0;
  for (int t = 0; t < p.num_tokens; ++t) {
    for (int64_t col = 0; col < p.output_stride; ++col) {
      const uint16_t bits = got[static_cast<size_t>(t) * p.output_stride + col];
      if (t >= p.num_real_tokens || col >= static_cast<int64_t>(c.num_heads) * c.head_dim) {
        EXPECT_EQ(bits, 0xFFFF) << "padding row or stride gap written: t=" << t << " col=" << col;
        if (bits != 0xFFFF) return INFINITY;
        continue;
      }
      const size_t idx = static_cast<size_t>(t) * c.num_heads * c.head_dim + col;
      const double ref = want.out[idx];
      const double err = std::fabs(value_of(c, bits) - ref);
      max_err = std::max(max_err, std::isnan(err) ? INFINITY : err);
      const double ulp = c.bf16 ? 256.0 : 2048.0;  // 2^(significand bits + 1)
      const double tol = std::fabs(ref) / ulp + (rounded_probs[t] ? want.abs_weighted[idx] / ulp : 0.0) + 3e-5;
      EXPECT_LE(err, tol) << "t=" << t << " head=" << col / c.head_dim << " d=" << col % c.head_dim << " got "
                          << value_of(c, bits) << " want " << ref;
      if (!(err <= tol)) return INFINITY;  // one report per case is enough
    }
  }
  return max_err;
}

// Runs one path over the case; its output bits into *bits.
void run_path(const AttentionCase& c, const AttentionProblem& p, const AttentionRef& want, float scale, Path path,
              std::vector<uint16_t>* bits) {
  SCOPED_TRACE(c.name + " (" + path_name(path) + ")");
  DeviceBuffer<uint16_t> query(p.query), key(p.key_cache), value(p.value_cache);
  DeviceBuffer<uint8_t> key_fp8(p.key_cache_fp8), value_fp8(p.value_cache_fp8);
  DeviceBuffer<uint16_t> output(static_cast<size_t>(p.num_tokens) * p.output_stride);
  DeviceBuffer<int32_t> tables(p.block_tables), starts(p.seq_token_start), contexts(p.seq_context_len);
  output.poison();

  CudaPagedAttentionArgs a;
  a.query = query.get();
  a.query_stride = p.query_stride;
  a.output = output.get();
  a.output_stride = p.output_stride;
  if (c.fp8) {
    a.key_cache_fp8 = key_fp8.get();
    a.value_cache_fp8 = value_fp8.get();
    a.k_scale = kFp8KScale;
    a.v_scale = kFp8VScale;
  } else {
    a.key_cache = key.get();
    a.value_cache = value.get();
  }
  a.block_tables = tables.get();
  a.seq_token_start = starts.get();
  a.seq_context_len = contexts.get();
  a.num_seqs = static_cast<int>(c.seqs.size());
  a.num_tokens = p.num_tokens;
  a.max_blocks_per_seq = p.max_blocks_per_seq;
  a.max_query_len = p.max_query;
  a.max_context_len = p.max_context + c.context_bound_extra;
  a.num_heads = c.num_heads;
  a.num_kv_heads = c.num_kv_heads;
  a.head_dim = c.head_dim;
  a.block_size = c.block_size;
  a.scale = scale;
  a.dtype = c.bf16 ? DType::kBF16 : DType::kF16;
  const size_t workspace_bytes =
      c.use_workspace ? cuda_paged_attention_workspace_bytes(p.num_tokens, c.num_heads, c.head_dim, a.max_context_len)
                      : 0;
  DeviceBuffer<uint8_t> workspace(workspace_bytes);
  zero_counters(workspace, workspace_bytes);
  a.workspace = workspace_bytes ? workspace.get() : nullptr;
  a.workspace_bytes = workspace_bytes;

  std::vector<uint16_t> first;
  for (int repeat = 0; repeat < 2; ++repeat) {  // the second launch must not depend on the first's leftovers
    output.poison();
    poison_partials(workspace, workspace_bytes);  // partials must be written before they are read
    const Status st = launch(path, a, nullptr);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    expect_counters_zero(workspace, workspace_bytes);
    if (repeat == 0) {
      first = output.download();
    } else {
      ASSERT_TRUE(output.download() == first) << "a repeated launch gave different bits";
    }
  }
  const double max_err = expect_matches(c, p, want, first, path);
  std::printf("[ %-40s ] %s tokens %d, workspace %zu bytes, max |err| %.2e\n", c.name.c_str(), path_name(path),
              p.num_tokens, workspace_bytes, max_err);
  *bits = std::move(first);
}

void run_case(const AttentionCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  const AttentionProblem p = make_problem(c, rng);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  const AttentionRef want = attention_ref(c, p, scale);
  std::vector<uint16_t> bits;
  for (Path path : kAllPaths) {
    bits.clear();
    run_path(c, p, want, scale, path, &bits);
  }
}

TEST(CudaPagedAttention, DecodeAcrossBlockBoundariesGqa7) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  AttentionCase c{"decode 7:1 D128", 28, 4, 128, 16, {{1, 1}, {1, 15}, {1, 16}, {1, 17}, {1, 33}, {1, 1000}}};
  run_case(c, 201);
  c.name = "decode 7:1 D128 no workspace";
  c.use_workspace = false;
  run_case(c, 202);
}

TEST(CudaPagedAttention, LongDecodeSplitsTheContext) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  run_case({"decode 1:1 D64 ctx 4100", 8, 8, 64, 16, {{1, 4100}}}, 203);
  run_case({"decode 7:1 D128 ctx 2049 bound 4096", 28, 4, 128, 16, {{1, 2049}, {1, 200}}, 0, 4096 - 2049}, 204);
  // 40 rows x 4 KV heads: 128-token partitions, fewer CTAs per row than partitions, so each
  // CTA walks several partitions of its row (grid.z < partitions), under a 4,096 bound.
  AttentionCase many{"40 decodes 7:1 D128 bound 4096", 28, 4, 128, 16, {}, /*padding_rows=*/2,
                     /*context_bound_extra=*/0};
  for (int i = 0; i < 40; ++i) many.seqs.push_back({1, 1 + (i * 397) % 3000});
  many.context_bound_extra = 4096 - 2956;  // longest context above: 2,956
  run_case(many, 216);
}

// Decode batches of 1, 2, 3 and 8 at contexts on and around block (16) and tile (64)
// boundaries, one tile to 64 tiles, mixed in one batch; GQA 1:1, 4:1, 7:1 and 8:1; under the
// model's 4,096 host bound (most partitions past the real context) and under tight bounds.
TEST(CudaPagedAttention, SmallDecodeBatchesAtEveryContext) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  const std::vector<int> contexts = {1, 15, 16, 17, 511, 512, 513, 4096};
  const std::vector<std::vector<int>> batches = {{4096, 1}, {512, 513}, {15, 16, 17}, {511, 4096, 1}, contexts};
  struct Heads {
    int num_heads, num_kv_heads;
  };
  uint32_t seed = 300;
  for (const Heads heads : {Heads{8, 8}, Heads{16, 4}, Heads{28, 4}, Heads{32, 4}}) {
    const std::string gqa = std::to_string(heads.num_heads / heads.num_kv_heads) + ":1";
    for (const int context : contexts) {
      for (const bool model_bound : {true, false}) {
        if (!model_bound && context != 17 && context != 513 && context != 4096) continue;
        AttentionCase c{"B=1 " + gqa + " ctx " + std::to_string(context) + (model_bound ? " bound 4096" : ""),
                        heads.num_heads,
                        heads.num_kv_heads,
                        128,
                        16,
                        {{1, context}}};
        c.context_bound_extra = model_bound ? 4096 - context : 0;
        run_case(c, seed++);
      }
    }
    for (const std::vector<int>& batch : batches) {
      AttentionCase c{"B=" + std::to_string(batch.size()) + " " + gqa + " bound 4096",
                      heads.num_heads,
                      heads.num_kv_heads,
                      128,
                      16,
                      {}};
      for (const int context : batch) c.seqs.push_back({1, context});
      c.context_bound_extra = 4096 - *std::max_element(batch.begin(), batch.end());
      run_case(c, seed++);
    }
  }
  // The other kernel instances: head_dim 64 (8 lanes per row) and 96 (the generic 32 lanes).
  run_case({"B=3 7:1 D64 bound 4096", 14, 2, 64, 16, {{1, 4096}, {1, 513}, {1, 17}}, 0, 0}, seed++);
  run_case({"B=2 4:1 D96 bound 4096", 8, 2, 96, 16, {{1, 4000}, {1, 64}}, 0, 96}, seed++);
  run_case({"B=8 8:1 D64 tight bound", 16, 2, 64, 16, std::vector<SeqShape>(8, SeqShape{1, 700})}, seed++);
}

// The decode kernel's cover: batches 1, 3, 8, 64 and 200 at contexts around block (16) and
// tile (64) boundaries up to 4,100, GQA 1:1 to 16:1, head_dim 64 and 128, with and without a
// host bound above the real contexts. The batch sizes cross its partition policy (64, 128
// and 256 positions, unsplit) and the last row of a batch is followed by padding rows.
TEST(CudaPagedAttention, DecodeKernelBatchesContextsAndGroups) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  const std::vector<int> contexts = {1, 15, 16, 17, 63, 64, 65, 511, 512, 2048, 4100};
  struct Heads {
    int num_heads, num_kv_heads;
  };
  uint32_t seed = 400;
  for (const Heads heads : {Heads{8, 8}, Heads{16, 4}, Heads{28, 4}, Heads{32, 4}, Heads{32, 2}}) {
    for (const int head_dim : {64, 128}) {
      const std::string shape =
          std::to_string(heads.num_heads / heads.num_kv_heads) + ":1 D" + std::to_string(head_dim);
      // Batch 1 at every context, under the real context and under a 4,100 bound.
      for (size_t i = 0; i < contexts.size(); ++i) {
        const bool bound = i % 2 == 1;
        AttentionCase c{"B=1 " + shape + " ctx " + std::to_string(contexts[i]) + (bound ? " bound 4100" : ""),
                        heads.num_heads,
                        heads.num_kv_heads,
                        head_dim,
                        16,
                        {{1, contexts[i]}}};
        c.context_bound_extra = bound ? 4100 - contexts[i] : 0;
        run_case(c, seed++);
      }
      // Batches 3, 8 and 64 over the contexts in turn (a different start for each).
      for (const int batch : {3, 8, 64}) {
        AttentionCase c{
            "B=" + std::to_string(batch) + " " + shape, heads.num_heads, heads.num_kv_heads, head_dim, 16, {}};
        for (int i = 0; i < batch; ++i) c.seqs.push_back({1, contexts[(i * 5 + batch) % contexts.size()]});
        c.padding_rows = batch == 64 ? 3 : 0;
        c.context_bound_extra = batch == 8 ? 300 : 0;
        run_case(c, seed++);
      }
    }
  }
  // Batch 200 (unsplit at 4 KV heads, split at 2) at contexts up to 2,048, bound 4,096.
  for (const Heads heads : {Heads{28, 4}, Heads{32, 2}}) {
    AttentionCase c{"B=200 " + std::to_string(heads.num_heads / heads.num_kv_heads) + ":1 D128 bound 4096",
                    heads.num_heads,
                    heads.num_kv_heads,
                    128,
                    16,
                    {},
                    /*padding_rows=*/4};
    for (int i = 0; i < 200; ++i) c.seqs.push_back({1, contexts[i % 10]});
    c.context_bound_extra = 4096 - 2048;
    run_case(c, seed++);
  }
  // Short chunks of 2..15 new rows (not prefill): each row of the chunk has its own length.
  run_case({"chunks of 2, 7, 15 rows 7:1 D128", 28, 4, 128, 16, {{2, 70}, {7, 600}, {15, 15}, {1, 4100}}, 2, 0},
           seed++);
}

// A small cover of the tensor-core decode kernel's code paths for compute-sanitizer (whose
// racecheck takes seconds per launch): one and several partitions with the fused merge, GQA
// groups 1, 4, 7 and 16, head_dim 64 and 128, a batch past the small-batch partition policy,
// rows of a short chunk, a host bound above the contexts.
TEST(CudaPagedAttention, DecodeCompactCoverForTheSanitizers) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  run_case({"B=1 7:1 D128 ctx 1000 bound 4096", 28, 4, 128, 16, {{1, 1000}}, 0, 4096 - 1000}, 700);
  run_case({"B=3 16:1 D128", 32, 2, 128, 16, {{1, 17}, {1, 513}, {1, 2100}}}, 701);
  run_case({"B=4 1:1 D64", 8, 8, 64, 16, {{1, 1}, {1, 64}, {1, 65}, {1, 700}}}, 702);
  AttentionCase batch{"B=40 4:1 D128", 16, 4, 128, 16, {}, /*padding_rows=*/1};
  for (int i = 0; i < 40; ++i) batch.seqs.push_back({1, 1 + (i * 37) % 300});
  run_case(batch, 703);
  run_case({"chunk of 3 rows 7:1 D128", 28, 4, 128, 16, {{3, 90}, {1, 200}}}, 704);
}

TEST(CudaPagedAttention, PrefillChunks) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  run_case({"prefill 77 7:1 D64", 14, 2, 64, 16, {{77, 77}}}, 205);
  run_case({"chunked prefill 50 after 80 cached", 28, 4, 128, 16, {{50, 130}}}, 206);
  run_case({"prefill 300 1:1 D128 block 32", 4, 4, 128, 32, {{300, 300}}}, 207);
  run_case({"chunked prefill 100 after 600 cached", 14, 2, 128, 16, {{100, 700}}}, 213);
  run_case({"prefill 16 and 15 rows (threshold)", 28, 4, 128, 16, {{16, 40}, {15, 15}, {64, 64}, {65, 70}}}, 214);
  run_case({"prefill 40 D96 (no tensor-core path)", 8, 2, 96, 16, {{40, 50}}}, 215);
  // Two sequences with 3 and 2 tiles of 128 rows (the prefill kernel's tile ranks over sequences).
  run_case({"prefill 260, and 130 after 70 cached", 28, 4, 128, 16, {{260, 260}, {130, 200}}}, 230);
}

TEST(CudaPagedAttention, MixedBatchWithPaddingAndEmptySequence) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  AttentionCase c{"mixed 7:1 D128",           28, 4, 128, 16, {{33, 33}, {1, 300}, {20, 200}, {0, 10}, {1, 1}, {5, 16}},
                  /*padding_rows=*/3,
                  /*context_bound_extra=*/100};
  run_case(c, 208);
  c.name = "mixed 7:1 D128 no workspace";
  c.use_workspace = false;
  run_case(c, 209);
}

// A runner captures one call per graph bucket with host bounds and replays it while the
// device lengths change below them: replays must follow the new lengths, padding included.
// Captures one call of each path for `bounds` (tables and caches sized for its sequences; the
// host bounds max_context / max_query) and replays it for each of `steps` (same number of
// sequences, lengths at or below those of `bounds`).
void replay_graph(const AttentionCase& bounds, const std::vector<std::vector<SeqShape>>& steps, int max_context,
                  int max_query, uint32_t seed) {
  std::mt19937 rng(seed);
  const AttentionProblem base = make_problem(bounds, rng);
  const float scale = 1.0f / std::sqrt(static_cast<float>(bounds.head_dim));
  DeviceBuffer<uint16_t> query(base.query), key(base.key_cache), value(base.value_cache);
  DeviceBuffer<uint16_t> output(static_cast<size_t>(base.num_tokens) * base.output_stride);
  DeviceBuffer<int32_t> tables(base.block_tables), starts(base.seq_token_start), contexts(base.seq_context_len);
  const size_t workspace_bytes =
      cuda_paged_attention_workspace_bytes(base.num_tokens, bounds.num_heads, bounds.head_dim, max_context);
  DeviceBuffer<uint8_t> workspace(workspace_bytes);
  zero_counters(workspace, workspace_bytes);
  CudaPagedAttentionArgs a;
  a.query = query.get();
  a.query_stride = base.query_stride;
  a.output = output.get();
  a.output_stride = base.output_stride;
  a.key_cache = key.get();
  a.value_cache = value.get();
  a.block_tables = tables.get();
  a.seq_token_start = starts.get();
  a.seq_context_len = contexts.get();
  a.num_seqs = static_cast<int>(bounds.seqs.size());
  a.num_tokens = base.num_tokens;
  a.max_blocks_per_seq = base.max_blocks_per_seq;
  a.max_query_len = max_query;
  a.max_context_len = max_context;
  a.num_heads = bounds.num_heads;
  a.num_kv_heads = bounds.num_kv_heads;
  a.head_dim = bounds.head_dim;
  a.block_size = bounds.block_size;
  a.scale = scale;
  a.workspace = workspace.get();
  a.workspace_bytes = workspace_bytes;
  for (Path path : kAllPaths) {
    cudaStream_t stream;
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    const Status st = launch(path, a, stream);
    ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    for (size_t step = 0; step < steps.size(); ++step) {
      AttentionCase c = bounds;
      c.name = "graph replay step " + std::to_string(step);
      c.seqs = steps[step];
      AttentionProblem p = base;  // same tables, caches and queries; new lengths
      p.seq_token_start = {0};
      p.seq_context_len.clear();
      for (const SeqShape& seq : c.seqs) {
        p.seq_token_start.push_back(p.seq_token_start.back() + seq.num_new);
        p.seq_context_len.push_back(seq.context_len);
      }
      p.num_real_tokens = p.seq_token_start.back();
      starts.upload(p.seq_token_start);
      contexts.upload(p.seq_context_len);
      output.poison();
      poison_partials(workspace, workspace_bytes);
      ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      expect_counters_zero(workspace, workspace_bytes);
      const double max_err = expect_matches(c, p, attention_ref(c, p, scale), output.download(), path);
      std::printf("[ %-40s ] %s max |err| %.2e\n", c.name.c_str(), path_name(path), max_err);
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
  }
}

TEST(CudaPagedAttention, GraphReplayFollowsLengthsBelowTheBounds) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  // 5 padding rows make the bucket 56 tokens.
  const AttentionCase bounds{"graph bucket", 28, 4, 128, 16, {{1, 500}, {20, 200}, {30, 30}}, /*padding_rows=*/5};
  replay_graph(bounds, {{{1, 300}, {20, 200}, {0, 0}}, {{1, 500}, {1, 17}, {30, 30}}, {{1, 1}, {1, 1}, {1, 1}}},
               /*max_context=*/600, /*max_query=*/32, 216);
}

// A decode bucket of 4 sequences captured under a 4,096 bound (the model's max_model_len) and
// replayed at contexts from 1 to 4,096: the partitions follow the real lengths.
TEST(CudaPagedAttention, DecodeGraphReplayUnderAModelLengthBound) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  const AttentionCase bounds{"decode bucket", 28, 4, 128, 16, {{1, 4096}, {1, 4096}, {1, 600}, {1, 600}}};
  replay_graph(bounds,
               {{{1, 512}, {1, 1}, {1, 17}, {1, 600}},
                {{1, 4096}, {1, 513}, {1, 64}, {1, 65}},
                {{1, 1}, {1, 1}, {1, 1}, {1, 1}}},
               /*max_context=*/4096, /*max_query=*/1, 217);
}

// A decode bucket of 64 sequences (the decode kernel's 256-position partitions and fused
// merge) captured under a 2,048 bound and replayed as the lengths change.
TEST(CudaPagedAttention, DecodeBatch64GraphReplay) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  const AttentionCase bounds{"decode bucket 64", 28, 4, 128, 16, std::vector<SeqShape>(64, SeqShape{1, 1100})};
  std::vector<std::vector<SeqShape>> steps(3);
  for (int i = 0; i < 64; ++i) {
    steps[0].push_back({1, 1 + (i * 37) % 1100});
    steps[1].push_back({1, 1100 - i});
    steps[2].push_back({1, i % 3 == 0 ? 0 : 300});  // some slots idle (context 0 and no new row)
    if (i % 3 == 0) steps[2].back().num_new = 0;
  }
  replay_graph(bounds, steps, /*max_context=*/2048, /*max_query=*/1, 219);
}

TEST(CudaPagedAttention, GenericHeadDimsAndWideGroups) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  run_case({"D96 4:1", 8, 2, 96, 16, {{1, 70}, {9, 40}}}, 210);
  run_case({"D256 16:1 (two head chunks)", 16, 1, 256, 16, {{1, 129}, {3, 3}}}, 211);
  run_case({"D64 16:1 decode batch 40", 32, 2, 64, 16, std::vector<SeqShape>(40, SeqShape{1, 95})}, 212);
  // 32 query heads per KV head: past the decode kernel's 16 rows, so the split kernel's.
  run_case({"D128 32:1 (decode kernel does not apply)", 32, 1, 128, 16, {{1, 700}, {1, 3}}}, 218);
}

// The e4m3 cache on every kernel instance: decode batches across block and tile boundaries and
// a long split context (D 128 and 64, GQA 1:1 to 16:1), the balanced and partitioned decode
// kernels' merges, prefill chunks with and without a cached prefix, a mixed batch with
// padding, and the split kernel's generic head dims (96, 256).
TEST(CudaPagedAttention, Fp8CacheOnEveryKernel) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  run_case(fp8_case({"decode 7:1 D128", 28, 4, 128, 16, {{1, 1}, {1, 15}, {1, 16}, {1, 17}, {1, 33}, {1, 1000}}}), 801);
  run_case(fp8_case({"decode 1:1 D64 ctx 4100", 8, 8, 64, 16, {{1, 4100}}}), 802);
  run_case(fp8_case({"B=3 16:1 D128 bound 4096", 32, 2, 128, 16, {{1, 17}, {1, 513}, {1, 2100}}, 0, 4096 - 2100}), 803);
  AttentionCase batch{"B=40 7:1 D128 bound 4096", 28, 4, 128, 16, {}, /*padding_rows=*/2};
  for (int i = 0; i < 40; ++i) batch.seqs.push_back({1, 1 + (i * 397) % 3000});
  batch.context_bound_extra = 4096 - 2956;
  run_case(fp8_case(batch), 804);
  run_case(fp8_case({"prefill 77 7:1 D64", 14, 2, 64, 16, {{77, 77}}}), 805);
  run_case(fp8_case({"chunked prefill 100 after 600 cached", 14, 2, 128, 16, {{100, 700}}}), 806);
  run_case(
      fp8_case({"mixed 7:1 D128", 28, 4, 128, 16, {{33, 33}, {1, 300}, {20, 200}, {0, 10}, {1, 1}, {5, 16}}, 3, 100}),
      807);
  AttentionCase no_workspace = fp8_case({"mixed 7:1 D128 no workspace", 28, 4, 128, 16, {{40, 90}, {1, 300}, {3, 3}}});
  no_workspace.use_workspace = false;
  run_case(no_workspace, 808);
  run_case(fp8_case({"D96 4:1", 8, 2, 96, 16, {{1, 70}, {9, 40}, {40, 50}}}), 809);
  run_case(fp8_case({"D256 16:1 (two head chunks)", 16, 1, 256, 16, {{1, 129}, {3, 3}}}), 810);
}

// bf16 query, cache and output (a bf16 model) on every kernel: decodes across block boundaries
// and a long split context, the balanced / partitioned merges, prefill chunks (D 64 and 128, the
// prefill kernel's two query tiles), a mixed batch with padding, and the split kernel's D 96.
TEST(CudaPagedAttention, Bf16OnEveryKernel) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  run_case(bf16_case({"decode 7:1 D128", 28, 4, 128, 16, {{1, 1}, {1, 15}, {1, 16}, {1, 17}, {1, 33}, {1, 1000}}}),
           901);
  run_case(bf16_case({"decode 1:1 D64 ctx 4100", 8, 8, 64, 16, {{1, 4100}}}), 902);
  AttentionCase batch{"B=40 7:1 D128 bound 4096", 28, 4, 128, 16, {}, /*padding_rows=*/2};
  for (int i = 0; i < 40; ++i) batch.seqs.push_back({1, 1 + (i * 397) % 3000});
  batch.context_bound_extra = 4096 - 2956;
  run_case(bf16_case(batch), 903);
  run_case(bf16_case({"prefill 77 7:1 D64", 14, 2, 64, 16, {{77, 77}}}), 904);
  run_case(bf16_case({"prefill 260, and 130 after 70 cached", 28, 4, 128, 16, {{260, 260}, {130, 200}}}), 905);
  run_case(
      bf16_case({"mixed 7:1 D128", 28, 4, 128, 16, {{33, 33}, {1, 300}, {20, 200}, {0, 10}, {1, 1}, {5, 16}}, 3, 100}),
      906);
  run_case(bf16_case({"D96 4:1", 8, 2, 96, 16, {{1, 70}, {9, 40}, {40, 50}}}), 907);
}

// ---- host-only checks (run on CPU-only CI too) -----------------------------------------------

CudaPagedAttentionArgs valid_host_args() {
  CudaPagedAttentionArgs a;
  a.query = a.key_cache = a.value_cache = reinterpret_cast<const uint16_t*>(256);
  a.output = reinterpret_cast<uint16_t*>(256);
  a.block_tables = a.seq_token_start = a.seq_context_len = reinterpret_cast<const int32_t*>(256);
  a.num_seqs = 1;
  a.num_tokens = 1;
  a.max_blocks_per_seq = 4;
  a.max_query_len = 1;
  a.max_context_len = 64;
  a.num_heads = 28;
  a.num_kv_heads = 4;
  a.head_dim = 128;
  a.block_size = 16;
  a.scale = 0.088f;
  a.query_stride = (28 + 8) * 128;
  a.output_stride = 28 * 128;
  return a;
}

TEST(CudaPagedAttentionArgs, RefusesBadArgumentsWithAStatus) {
  auto expect_refused = [](CudaPagedAttentionArgs a, const char* field) {
    for (const Status& st : {cuda_paged_attention(a, nullptr), cuda_paged_attention_split_only(a, nullptr)}) {
      EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << field;
      EXPECT_NE(st.message().find(field), std::string::npos) << st.message();
    }
  };
  CudaPagedAttentionArgs a = valid_host_args();
  a.head_dim = 100;
  expect_refused(a, "head_dim");
  a.head_dim = 264;
  expect_refused(a, "head_dim");
  a = valid_host_args();
  a.num_heads = 30;  // not a multiple of 4
  expect_refused(a, "num_heads");
  a = valid_host_args();
  a.block_size = 0;
  expect_refused(a, "block_size");
  a = valid_host_args();
  a.query_stride = 28 * 128 + 4;  // not a multiple of 8: rows not 16-byte aligned
  expect_refused(a, "query_stride");
  a = valid_host_args();
  a.output_stride = 100;
  expect_refused(a, "output_stride");
  a = valid_host_args();
  a.key_cache = nullptr;
  expect_refused(a, "exactly one cache pair");
  a = valid_host_args();
  a.key_cache_fp8 = a.value_cache_fp8 = reinterpret_cast<const uint8_t*>(256);  // both pairs
  expect_refused(a, "exactly one cache pair");
  a.key_cache = a.value_cache = nullptr;  // the fp8 pair alone, with a bad scale
  a.v_scale = 0.f;
  expect_refused(a, "k_scale and v_scale");
  a.v_scale = 1.f;
  a.key_cache_fp8 = reinterpret_cast<const uint8_t*>(264);
  expect_refused(a, "aligned");
  a = valid_host_args();
  a.query = reinterpret_cast<const uint16_t*>(258);
  expect_refused(a, "aligned");
  a = valid_host_args();
  a.scale = 0.f;
  expect_refused(a, "scale");
  a = valid_host_args();
  a.dtype = DType::kF32;
  expect_refused(a, "dtype");
  a.dtype = DType::kBF16;  // with the fp8 pair: e4m3 is read as fp16
  a.key_cache = a.value_cache = nullptr;
  a.key_cache_fp8 = a.value_cache_fp8 = reinterpret_cast<const uint8_t*>(256);
  expect_refused(a, "float16 queries only");
  a = valid_host_args();
  a.num_tokens = 0;  // an empty batch is fine and touches nothing
  a.query = nullptr;
  EXPECT_TRUE(cuda_paged_attention(a, nullptr).is_ok());
}

TEST(CudaPagedAttentionArgs, WorkspaceBoundIsSmallAndMonotone) {
  EXPECT_EQ(cuda_paged_attention_workspace_bytes(256, 28, 128, 64), 0u);  // one tile: never split
  const size_t decode = cuda_paged_attention_workspace_bytes(1, 28, 128, 4096);
  EXPECT_GT(decode, 0u);
  EXPECT_LE(cuda_paged_attention_workspace_bytes(1, 28, 128, 1024), decode);
  // The (row, partition) pairs are capped (4,096), so the bound stays small whatever
  // max_num_tokens and the context are.
  const size_t big = cuda_paged_attention_workspace_bytes(8192, 28, 128, 32768);
  EXPECT_LE(big, size_t{4096} * 28 * 130 * sizeof(float) + cuda_paged_attention_workspace_counter_bytes());
  EXPECT_GE(big, cuda_paged_attention_workspace_bytes(16, 28, 128, 32768));
}

}  // namespace
}  // namespace crosspoint::cuda
