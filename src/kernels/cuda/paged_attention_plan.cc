// Host-side planning of paged attention (paged_attention.cu launches what this decides):
// argument checks, the two-kernel path's context partitions, the cluster sizes of the
// single-kernel decode path, and the workspace bound. Plain host code, so its rules are
// testable without a GPU.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/cuda/paged_attention.h"
#include "kernels/cuda/paged_attention_params.cuh"

namespace crosspoint::cuda {
namespace attention_internal {
namespace {

// Context partition for a launch of num_tokens rows x ctas_per_row CTAs: 0 (no split) when
// the rows alone give the GPU enough CTAs, else finer partitions for smaller batches.
int partition_tokens_for(int num_tokens, int ctas_per_row) {
  const int64_t ctas = static_cast<int64_t>(num_tokens) * ctas_per_row;
  if (ctas >= kUnsplitCtas) return 0;
  if (ctas < 64) return kTileTokens;
  if (ctas < 256) return 2 * kTileTokens;
  return 4 * kTileTokens;
}

int64_t partial_bytes(int num_tokens, int num_heads, int num_splits, int head_dim) {
  return static_cast<int64_t>(num_tokens) * num_heads * num_splits * (head_dim + 2) * static_cast<int64_t>(sizeof(float));
}

Status bad(const std::string& what) { return invalid_argument("cuda_paged_attention: " + what); }

}  // namespace

Status check_paged_attention_args(const CudaPagedAttentionArgs& a) {
  if (a.num_seqs < 0 || a.num_tokens < 0)
    return bad("num_seqs " + std::to_string(a.num_seqs) + " and num_tokens " + std::to_string(a.num_tokens) +
               " must be >= 0");
  if (a.num_heads <= 0 || a.num_kv_heads <= 0 || a.num_heads % a.num_kv_heads != 0)
    return bad("num_heads " + std::to_string(a.num_heads) + " must be a positive multiple of num_kv_heads " +
               std::to_string(a.num_kv_heads));
  const int64_t head_chunks = (a.num_heads / a.num_kv_heads + kHeadsPerCta - 1) / kHeadsPerCta;
  if (a.num_kv_heads * head_chunks > 65535) return bad("num_kv_heads x head chunks exceeds the grid limit");
  if (a.head_dim < 8 || a.head_dim > kMaxHeadDim || a.head_dim % 8 != 0)
    return bad("head_dim " + std::to_string(a.head_dim) + " must be a multiple of 8 in [8, 256]");
  if (a.block_size <= 0) return bad("block_size " + std::to_string(a.block_size) + " must be positive");
  if (a.max_blocks_per_seq <= 0) return bad("max_blocks_per_seq must be positive");
  if (a.max_query_len < 0 || a.max_context_len < 0) return bad("max_query_len and max_context_len must be >= 0");
  if (!(a.scale > 0.f) || !std::isfinite(a.scale)) return bad("scale must be positive and finite");
  const int64_t row_width = static_cast<int64_t>(a.num_heads) * a.head_dim;
  if (a.query_stride < row_width || a.query_stride % 8 != 0)
    return bad("query_stride " + std::to_string(a.query_stride) + " must be >= H * D and a multiple of 8");
  if (a.output_stride < row_width) return bad("output_stride " + std::to_string(a.output_stride) + " < H * D");
  if (a.num_tokens == 0) return Status::ok();
  if (!a.query || !a.output || !a.key_cache || !a.value_cache || !a.block_tables || !a.seq_token_start ||
      !a.seq_context_len)
    return bad("null query, output, cache or table pointer");
  if (a.num_seqs == 0) return bad("num_tokens > 0 but num_seqs == 0");
  auto aligned16 = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  if (!aligned16(a.query) || !aligned16(a.key_cache) || !aligned16(a.value_cache))
    return bad("query, key_cache and value_cache must be 16-byte aligned");
  return Status::ok();
}

// CTAs per cluster for a launch with row_ctas (row, KV head, head chunk) triples under a host
// context bound: 1 (no cluster: the two-kernel path) past kMaxClusterRowCtas, without
// clusters (limit < 2) or when one tile covers the bound; else enough to spread the bound's
// tiles, at most ~kUnsplitCtas CTAs in all and `limit`.
int cluster_ctas_for(int64_t row_ctas, int bound, int limit) {
  if (row_ctas <= 0 || row_ctas > kMaxClusterRowCtas || limit < 2) return 1;
  const int64_t tiles = (static_cast<int64_t>(std::max(bound, 1)) + kTileTokens - 1) / kTileTokens;
  return static_cast<int>(std::min<int64_t>({limit, tiles, std::max<int64_t>(1, kUnsplitCtas / row_ctas)}));
}

TwoPassPlan plan_two_pass(int num_tokens, int ctas_per_row, int bound, int num_heads, int head_dim,
                          const void* workspace, size_t workspace_bytes) {
  // Partitions as the batch wants them (partition_tokens_for), covering the host's context
  // bound; longer partitions when the caller's workspace holds fewer (a smaller workspace
  // costs speed, never correctness; none at all means one split).
  bound = std::max(bound, 1);
  int partition = partition_tokens_for(num_tokens, ctas_per_row);
  int num_splits = partition > 0 ? (bound + partition - 1) / partition : 1;
  const int64_t bytes_per_split = partial_bytes(num_tokens, num_heads, 1, head_dim);
  const int64_t splits_that_fit = workspace == nullptr ? 0 : static_cast<int64_t>(workspace_bytes) / bytes_per_split;
  const int64_t max_splits = std::min<int64_t>(kMaxSplits, splits_that_fit);
  if (num_splits > max_splits && max_splits > 1) {
    const int per_split = (bound + static_cast<int>(max_splits) - 1) / static_cast<int>(max_splits);
    partition = (per_split + kTileTokens - 1) / kTileTokens * kTileTokens;
    num_splits = (bound + partition - 1) / partition;
  }
  if (num_splits <= 1 || max_splits <= 1) {
    num_splits = 1;
    partition = 1 << 30;  // one split covers any context
  }
  // CTAs per (row, KV head): enough for ~kUnsplitCtas in all; each walks every grid_z-th partition.
  const int64_t row_ctas = static_cast<int64_t>(num_tokens) * ctas_per_row;
  const int grid_z = static_cast<int>(std::min<int64_t>(num_splits, (kUnsplitCtas + row_ctas - 1) / row_ctas));
  return {partition, num_splits, std::max(grid_z, 1)};
}

}  // namespace attention_internal

using namespace attention_internal;

size_t cuda_paged_attention_workspace_bytes(int max_num_tokens, int num_heads, int head_dim, int max_context_len) {
  if (max_num_tokens <= 0 || num_heads <= 0 || head_dim <= 0) return 0;
  // At most ceil(context / one tile) partitions per row, and never more (row, partition)
  // pairs than kMaxPartialRows: a launch that would need more uses longer partitions.
  const int64_t max_splits = std::min<int64_t>(kMaxSplits, (std::max(max_context_len, 1) + kTileTokens - 1) / kTileTokens);
  if (max_splits <= 1) return 0;
  const int64_t split_rows = std::min<int64_t>(static_cast<int64_t>(max_num_tokens) * max_splits, kMaxPartialRows);
  return static_cast<size_t>(split_rows * num_heads * (head_dim + 2) * static_cast<int64_t>(sizeof(float)));
}

int cuda_paged_attention_cluster_ctas(int num_tokens, int num_heads, int num_kv_heads, int max_context_len,
                                      int cluster_limit) {
  if (num_tokens <= 0 || num_heads <= 0 || num_kv_heads <= 0 || num_heads % num_kv_heads != 0) return 1;
  const int head_chunks = (num_heads / num_kv_heads + kHeadsPerCta - 1) / kHeadsPerCta;
  return cluster_ctas_for(static_cast<int64_t>(num_tokens) * num_kv_heads * head_chunks, max_context_len,
                          std::min(cluster_limit, kMaxClusterCtas));
}

}  // namespace crosspoint::cuda
