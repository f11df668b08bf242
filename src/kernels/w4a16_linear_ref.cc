#include <algorithm>
#include <numeric>
#include <string>

#include "common/dtype.h"
#include "kernels/w4a16_linear.h"

namespace crosspoint {

int64_t w4a16_num_groups(int64_t in_features, int64_t group_size) {
  return group_size > 0 ? (in_features + group_size - 1) / group_size : 1;
}

Status validate_w4a16_linear_args(const W4A16LinearArgs& a, const char* op) {
  const std::string name(op);
  if (a.num_rows < 0 || a.in_features <= 0 || a.out_features <= 0 || a.group_size <= 0)
    return invalid_argument(name + ": sizes must be positive (rows " + std::to_string(a.num_rows) + ", in " +
                            std::to_string(a.in_features) + ", out " + std::to_string(a.out_features) + ", group " +
                            std::to_string(a.group_size) + ")");
  if (a.in_features % 8 != 0)
    return invalid_argument(name + ": in_features " + std::to_string(a.in_features) + " is not a multiple of 8");
  if (a.num_rows > 0 &&
      (a.x == nullptr || a.qweight == nullptr || a.scales == nullptr || a.zeros == nullptr || a.y == nullptr))
    return invalid_argument(name + ": null x, qweight, scales, zeros or y");
  if (a.x_row_stride != 0 && a.x_row_stride < a.in_features)
    return invalid_argument(name + ": x_row_stride smaller than in_features");
  return Status::ok();
}

namespace {

inline int nibble(const int32_t* qweight, int64_t N, int64_t k, int64_t n) {
  return static_cast<int>((static_cast<uint32_t>(qweight[(k / 8) * N + n]) >> (4 * (k % 8))) & 0xFu);
}

}  // namespace

Status w4a16_linear_ref(const W4A16LinearArgs& a) {
  CROSSPOINT_RETURN_IF_ERROR(validate_w4a16_linear_args(a, "w4a16_linear_ref"));
  const int64_t K = a.in_features, N = a.out_features;
  const int64_t num_groups = w4a16_num_groups(K, a.group_size);
  const int64_t stride = a.x_row_stride ? a.x_row_stride : K;
  for (int64_t k = 0; k < K && a.g_idx; ++k) {
    if (a.g_idx[k] < 0 || a.g_idx[k] >= num_groups)
      return invalid_argument("w4a16_linear_ref: g_idx[" + std::to_string(k) + "] = " + std::to_string(a.g_idx[k]) +
                              " outside [0, " + std::to_string(num_groups) + ")");
  }
  for (int64_t m = 0; m < a.num_rows; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      double sum = a.bias ? a.bias[n] : 0.0;
      for (int64_t k = 0; k < K; ++k) {
        const int64_t g = a.g_idx ? a.g_idx[k] : k / a.group_size;
        const double w = static_cast<double>(f16_to_f32(a.scales[g * N + n])) *
                         (nibble(a.qweight, N, k, n) - static_cast<int>(a.zeros[g * N + n]));
        sum += static_cast<double>(a.x[m * stride + k]) * w;
      }
      a.y[m * N + n] = static_cast<float>(sum);
    }
  }
  return Status::ok();
}

bool w4a16_g_idx_is_trivial(const int32_t* g_idx, int64_t in_features, int64_t group_size) {
  for (int64_t k = 0; k < in_features; ++k)
    if (g_idx[k] != k / group_size) return false;
  return true;
}

Result<W4A16SortedRows> w4a16_sort_rows_by_group(const int32_t* qweight, const int32_t* g_idx, int64_t K, int64_t N,
                                                 int64_t group_size, const std::string& name) {
  if (K % 8 != 0 || group_size <= 0 || K % group_size != 0)
    return invalid_argument(name + ": in_features " + std::to_string(K) + " must be a multiple of 8 and of group " +
                            std::to_string(group_size));
  W4A16SortedRows out;
  out.k_perm.resize(static_cast<size_t>(K));
  std::iota(out.k_perm.begin(), out.k_perm.end(), 0);
  std::stable_sort(out.k_perm.begin(), out.k_perm.end(), [&](int32_t a, int32_t b) { return g_idx[a] < g_idx[b]; });
  for (int64_t i = 0; i < K; ++i) {
    if (g_idx[out.k_perm[i]] != i / group_size)
      return corrupt(name + ": g_idx does not give every group exactly " + std::to_string(group_size) +
                     " rows (sorted row " + std::to_string(i) + " has group " + std::to_string(g_idx[out.k_perm[i]]) +
                     ")");
  }
  out.qweight.assign(static_cast<size_t>(K / 8 * N), 0);
  for (int64_t i = 0; i < K; ++i) {
    const int64_t src = out.k_perm[i];
    for (int64_t n = 0; n < N; ++n) {
      const uint32_t q = (static_cast<uint32_t>(qweight[(src / 8) * N + n]) >> (4 * (src % 8))) & 0xFu;
      uint32_t& word = reinterpret_cast<uint32_t&>(out.qweight[(i / 8) * N + n]);
      word |= q << (4 * (i % 8));
    }
  }
  return out;
}

}  // namespace crosspoint
