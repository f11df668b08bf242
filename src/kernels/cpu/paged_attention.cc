#include <algorithm>
#include <cstring>
#include <vector>

#include "common/thread_pool.h"
#include "kernels/cpu/simd.h"
#include "kernels/fp8.h"
#include "kernels/paged_attention.h"
#include "kernels/softmax.h"

namespace crosspoint {
namespace {

float dot(const float* a, const float* b, int64_t n, bool vector) {
  if (vector) return simd::dot_f32(a, b, n);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void axpy(float alpha, const float* x, float* y, int64_t n, bool vector) {
  if (vector) return simd::axpy_f32(alpha, x, y, n);
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

// e4m3(fp16(x) / scale): the value rounded as the GPU holds it, the IEEE division, then round to
// nearest even.
void quantize_row(const float* x, float scale, uint8_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = f32_to_e4m3(round_to_f16_saturated(x[i]) / scale);
}

// An fp8 cache row as f32 (into `buffer`), or the f32 cache row itself.
const float* cache_row(const float* f32_cache, const uint8_t* fp8_cache, float scale, int64_t offset, int64_t n,
                       float* buffer) {
  if (f32_cache != nullptr) return f32_cache + offset;
  const float* table = e4m3_to_f32_table();
  for (int64_t i = 0; i < n; ++i) buffer[i] = table[fp8_cache[offset + i]] * scale;
  return buffer;
}

}  // namespace

Status kv_cache_write(const KvCacheWriteArgs& a) {
  const PagedKvLayout& l = a.layout;
  const int32_t num_tokens = l.seq_token_start[l.num_seqs];
  CROSSPOINT_RETURN_IF_ERROR(validate_paged_kv_layout(l, num_tokens));
  const int64_t row = int64_t{l.num_kv_heads} * l.head_dim;
  const int64_t k_stride = a.key_row_stride ? a.key_row_stride : row;
  const int64_t v_stride = a.value_row_stride ? a.value_row_stride : row;
  for (int32_t s = 0; s < l.num_seqs; ++s) {
    const int32_t num_new = l.seq_token_start[s + 1] - l.seq_token_start[s];
    for (int32_t j = 0; j < num_new; ++j) {
      const int32_t t = l.seq_token_start[s] + j;
      const int32_t position = l.seq_context_len[s] - num_new + j;
      const int32_t block = l.block_tables[int64_t{s} * l.max_blocks_per_seq + position / l.block_size];
      const int64_t slot = int64_t{block} * l.block_size + position % l.block_size;
      if (l.key_cache != nullptr) {
        std::memcpy(l.key_cache + slot * row, a.key + t * k_stride, row * sizeof(float));
        std::memcpy(l.value_cache + slot * row, a.value + t * v_stride, row * sizeof(float));
      } else {
        quantize_row(a.key + t * k_stride, l.k_scale, l.key_cache_fp8 + slot * row, row);
        quantize_row(a.value + t * v_stride, l.v_scale, l.value_cache_fp8 + slot * row, row);
      }
    }
  }
  return Status::ok();
}

Status paged_attention(const PagedAttentionArgs& a) {
  const PagedKvLayout& l = a.layout;
  if (a.num_heads <= 0 || l.num_kv_heads <= 0 || a.num_heads % l.num_kv_heads != 0)
    return invalid_argument("paged_attention: num_heads must be a positive multiple of num_kv_heads");
  const int32_t num_tokens = l.seq_token_start[l.num_seqs];
  CROSSPOINT_RETURN_IF_ERROR(validate_paged_kv_layout(l, num_tokens));
  const int64_t q_stride = a.query_row_stride ? a.query_row_stride : int64_t{a.num_heads} * l.head_dim;
  const int32_t group = a.num_heads / l.num_kv_heads;
  const int64_t head_dim = l.head_dim;
  const int64_t kv_row = int64_t{l.num_kv_heads} * head_dim;  // elements per cached token
  const bool vector = simd::cpu_has_avx2();

  // token index -> sequence, so work items can be any (token, KV head) pair.
  std::vector<int32_t> token_seq(num_tokens);  // [num_tokens]
  for (int32_t s = 0; s < l.num_seqs; ++s)
    for (int32_t t = l.seq_token_start[s]; t < l.seq_token_start[s + 1]; ++t) token_seq[t] = s;

  // One work item per (token, KV head): each cached row is read (and for an fp8 cache
  // dequantised) once for the `group` query heads that share it. Per query head the order of
  // every sum is the same as one head at a time.
  const size_t num_items = static_cast<size_t>(num_tokens) * l.num_kv_heads;
  global_thread_pool().parallel_for(num_items, [&](size_t i0, size_t i1) {
    std::vector<float> scores;                // [group, visible] f32
    std::vector<float> row_buffer(head_dim);  // an fp8 cache row, dequantised
    for (size_t item = i0; item < i1; ++item) {
      const int32_t t = static_cast<int32_t>(item / l.num_kv_heads);
      const int32_t kv_head = static_cast<int32_t>(item % l.num_kv_heads);
      const int32_t s = token_seq[t];
      const int32_t num_new = l.seq_token_start[s + 1] - l.seq_token_start[s];
      const int32_t visible = l.seq_context_len[s] - num_new + (t - l.seq_token_start[s]) + 1;
      const int32_t* table = l.block_tables + int64_t{s} * l.max_blocks_per_seq;
      const int64_t head_offset = int64_t{kv_head} * head_dim;
      const int32_t first_head = kv_head * group;
      scores.resize(static_cast<size_t>(group) * visible);
      for (int32_t p = 0; p < visible; ++p) {
        const int64_t slot = int64_t{table[p / l.block_size]} * l.block_size + p % l.block_size;
        const float* k = cache_row(l.key_cache, l.key_cache_fp8, l.k_scale, slot * kv_row + head_offset, head_dim,
                                   row_buffer.data());
        for (int32_t g = 0; g < group; ++g) {
          const float* q = a.query + t * q_stride + int64_t{first_head + g} * head_dim;
          scores[static_cast<size_t>(g) * visible + p] = dot(q, k, head_dim, vector) * a.scale;
        }
      }
      for (int32_t g = 0; g < group; ++g) {
        softmax_row(scores.data() + static_cast<size_t>(g) * visible, visible);
        float* out = a.output + (int64_t{t} * a.num_heads + first_head + g) * head_dim;
        std::fill(out, out + head_dim, 0.0f);
      }
      for (int32_t p = 0; p < visible; ++p) {
        const int64_t slot = int64_t{table[p / l.block_size]} * l.block_size + p % l.block_size;
        const float* v = cache_row(l.value_cache, l.value_cache_fp8, l.v_scale, slot * kv_row + head_offset, head_dim,
                                   row_buffer.data());
        for (int32_t g = 0; g < group; ++g) {
          float* out = a.output + (int64_t{t} * a.num_heads + first_head + g) * head_dim;
          axpy(scores[static_cast<size_t>(g) * visible + p], v, out, head_dim, vector);
        }
      }
    }
  });
  return Status::ok();
}

}  // namespace crosspoint
