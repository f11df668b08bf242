#include <cstring>

#include "kernels/cpu/simd.h"
#include "kernels/embedding.h"
#include "kernels/weight_dtype.h"

namespace crosspoint {

Status check_embedding_ids(const EmbeddingArgs& a);  // embedding_ref.cc

namespace {

CROSSPOINT_AVX2_TARGET void convert_row_avx2(const uint16_t* src, DType dtype, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, dtype == DType::kF16 ? simd::load8_f16(src + i) : simd::load8_bf16(src + i));
  for (; i < n; ++i) dst[i] = load_weight(src, dtype, i);
}

}  // namespace

// A gather of a few rows is memory-latency bound and tiny: one thread is enough.
Status embedding(const EmbeddingArgs& a) {
  CROSSPOINT_RETURN_IF_ERROR(check_embedding_ids(a));
  const bool vector = simd::cpu_has_avx2();
  for (int64_t t = 0; t < a.num_tokens; ++t) {
    const int64_t offset = static_cast<int64_t>(a.token_ids[t]) * a.hidden_size;
    float* dst = a.out + t * a.hidden_size;
    if (a.table_dtype == DType::kF32) {
      std::memcpy(dst, static_cast<const float*>(a.table) + offset, a.hidden_size * sizeof(float));
    } else if (vector) {
      convert_row_avx2(static_cast<const uint16_t*>(a.table) + offset, a.table_dtype, dst, a.hidden_size);
    } else {
      for (int64_t i = 0; i < a.hidden_size; ++i) dst[i] = load_weight(a.table, a.table_dtype, offset + i);
    }
  }
  return Status::ok();
}

}  // namespace crosspoint
