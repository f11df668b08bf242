// W4A16 linear: int4 weights with one fp16 scale (and a 4-bit zero point) per group of
// input rows and output column, f32 activations, fp32 accumulation. Two entry points:
//
//  * w4a16_linear_ref reads the GPTQ checkpoint layout directly (the independent reference):
//      qweight [K/8, N] int32: word [r][n] holds rows k = 8r..8r+7 of column n, row 8r+j in
//                              bits [4j, 4j+4)
//      scales  [num_groups, N] fp16 bits;  zeros [num_groups, N] uint8 (the real zero point,
//                              v1's stored z-1 already incremented), g_idx [K] int32
//      y[m, n] = sum_k x[m, k] * scales[g_idx[k], n] * (q[k, n] - zeros[g_idx[k], n]) + bias[n]
//
//  * w4a16_linear runs the same math on the same qweight words but requires each group to be
//    a contiguous run of group_size rows (g_idx[k] == k / group_size). Act-order checkpoints
//    are made so at load time by w4a16_sort_rows_by_group (rows reordered, k_perm recorded),
//    and the kernel gathers x through k_perm. Dequantisation is fused into the dot product:
//      sum_{k in g} x_k s (q_k - z) = s * (sum_{k in g} x_k q_k - z * sum_{k in g} x_k)
//    so the inner loop is int4 -> f32 and an FMA, and scales are applied once per group.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace crosspoint {

struct W4A16LinearArgs {
  const float* x = nullptr;          // [num_rows, in_features] f32, rows x_row_stride apart
  int64_t x_row_stride = 0;          // elements; 0 means in_features
  const int32_t* qweight = nullptr;  // [in_features / 8, out_features] packed int4
  const uint16_t* scales = nullptr;  // [num_groups, out_features] fp16 bits
  const uint8_t* zeros = nullptr;    // [num_groups, out_features] zero points 0..15
  const int32_t* g_idx = nullptr;    // ref: [in_features] group of each row, null = k / group_size
  const int32_t* k_perm = nullptr;   // fast: [in_features] row k of the packed weight is x column
                                     // k_perm[k]; null = identity
  const float* bias = nullptr;       // [out_features] f32, or null
  float* y = nullptr;                // [num_rows, out_features] f32
  int64_t num_rows = 0;
  int64_t in_features = 0;   // K, a multiple of 8
  int64_t out_features = 0;  // N
  int64_t group_size = 0;    // G; the fast kernel needs K % G == 0 and G % 8 == 0
};

// Number of groups for K input rows: ceil(K / G).
int64_t w4a16_num_groups(int64_t in_features, int64_t group_size);

// Null pointers, non-positive sizes, K % 8; `op` prefixes the message.
Status validate_w4a16_linear_args(const W4A16LinearArgs& args, const char* op);

Status w4a16_linear_ref(const W4A16LinearArgs& args);
Status w4a16_linear(const W4A16LinearArgs& args);

// Reorders the rows of a GPTQ int4 weight so that each group is contiguous (stable sort of
// rows by g_idx), for act-order (desc_act) checkpoints.
//   qweight [K/8, N] int32 in checkpoint order -> sorted_qweight [K/8, N] int32
//   k_perm  [K]: sorted row i is checkpoint row k_perm[i]
// Fails (naming `name`) when a group does not end up with exactly group_size rows, which
// would break the contiguous-group assumption of w4a16_linear.
struct W4A16SortedRows {
  std::vector<int32_t> qweight;  // [K/8, N]
  std::vector<int32_t> k_perm;   // [K]
};
Result<W4A16SortedRows> w4a16_sort_rows_by_group(const int32_t* qweight, const int32_t* g_idx, int64_t in_features,
                                                 int64_t out_features, int64_t group_size, const std::string& name);

// True when g_idx[k] == k / group_size for every k (no reordering needed).
bool w4a16_g_idx_is_trivial(const int32_t* g_idx, int64_t in_features, int64_t group_size);

}  // namespace crosspoint
