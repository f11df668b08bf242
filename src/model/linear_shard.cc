#include "model/linear_shard.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <type_traits>
#include <variant>
#include <vector>

#include "kernels/fp8.h"
#include "kernels/fp8_block.h"
#include "kernels/int8.h"
#include "kernels/linear.h"
#include "kernels/w4a16_linear.h"

namespace crosspoint {

namespace {

// Rows `rows` and columns `keep_cols` of a row-major [*, cols] matrix.
template <typename T>
std::vector<T> sub_matrix(const T* src, int64_t cols, IndexRange rows, IndexRange keep_cols) {
  std::vector<T> out(static_cast<size_t>(rows.size() * keep_cols.size()));
  for (int64_t r = rows.begin; r < rows.end; ++r)
    std::memcpy(out.data() + (r - rows.begin) * keep_cols.size(), src + r * cols + keep_cols.begin,
                static_cast<size_t>(keep_cols.size()) * sizeof(T));
  return out;
}

struct ShardParts {
  std::vector<uint8_t> weight;  // the storage's main array, whatever its element type
  std::vector<float> weight_scale;
  std::vector<uint16_t> scales;  // int4: fp16 group scales
  std::vector<uint8_t> zeros;
  std::vector<int32_t> k_perm;
  std::vector<int32_t> g_idx;  // int4 reference path: each row's group, empty on the fast path
  std::vector<float> bias;
};

template <typename T>
std::vector<uint8_t> as_bytes(const std::vector<T>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

class ShardedLinearWeight final : public LinearWeight {
 public:
  ShardedLinearWeight(ShardParts parts, LinearWeightStorage storage, int64_t in, int64_t out, size_t bytes,
                      std::string format)
      : parts_(std::move(parts)), in_(in), out_(out), bytes_(bytes), format_(std::move(format)) {
    rebind(storage);
  }

  Status forward(const float* x, int64_t num_rows, int64_t x_row_stride, float* y) const override {
    const float* bias = parts_.bias.empty() ? nullptr : parts_.bias.data();
    if (const auto* s = std::get_if<DenseWeightStorage>(&storage_))
      return linear({x, x_row_stride, s->weight, s->dtype, bias, y, num_rows, in_, out_});
    if (const auto* s = std::get_if<Fp8WeightStorage>(&storage_)) {
      Fp8LinearArgs a{x, x_row_stride, s->weight, s->weight_scale, bias, y, num_rows, in_, out_, s->input_scale};
      return fp8_linear(a);
    }
    if (const auto* s = std::get_if<Int8WeightStorage>(&storage_)) {
      Int8LinearArgs a{x, x_row_stride, s->weight, s->weight_scale, bias, y, num_rows, in_, out_, s->input_scale};
      return int8_linear(a);
    }
    if (const auto* s = std::get_if<Fp8BlockWeightStorage>(&storage_)) {
      Fp8BlockLinearArgs a{x,        x_row_stride, s->weight, s->weight_scale, s->block_n, s->block_k, bias, y,
                           num_rows, in_,          out_};
      return fp8_block_linear(a);
    }
    const auto& s = std::get<Int4GroupWeightStorage>(storage_);
    W4A16LinearArgs a;
    a.x = x;
    a.x_row_stride = x_row_stride;
    a.qweight = s.qweight;
    a.scales = s.scales;
    a.zeros = s.zeros;
    a.bias = bias;
    a.y = y;
    a.num_rows = num_rows;
    a.in_features = in_;
    a.out_features = out_;
    if (parts_.g_idx.empty()) {
      a.k_perm = s.k_perm;
      a.group_size = s.group_size;
      return w4a16_linear(a);
    }
    a.g_idx = parts_.g_idx.data();
    a.group_size = 1;  // with g_idx the size only bounds the group count, which is at most one per row
    return w4a16_linear_ref(a);
  }

  int64_t in_features() const override { return in_; }
  int64_t out_features() const override { return out_; }
  size_t weight_bytes() const override { return bytes_; }
  std::string format_name() const override { return format_; }
  LinearWeightView view() const override { return {storage_, parts_.bias.empty() ? nullptr : parts_.bias.data()}; }

 private:
  // Points the storage's arrays at this object's own copies.
  void rebind(LinearWeightStorage storage) {
    std::visit(
        [&](auto& s) {
          using S = std::decay_t<decltype(s)>;
          if constexpr (std::is_same_v<S, DenseWeightStorage>) {
            s.weight = parts_.weight.data();
          } else if constexpr (std::is_same_v<S, Int4GroupWeightStorage>) {
            s.qweight = reinterpret_cast<const int32_t*>(parts_.weight.data());
            s.scales = parts_.scales.data();
            s.zeros = parts_.zeros.data();
            s.k_perm = parts_.k_perm.empty() ? nullptr : parts_.k_perm.data();
            if (!parts_.g_idx.empty()) s.group_size = 0;  // not groups of a size: no form the GPU kernels take
          } else if constexpr (std::is_same_v<S, Int8WeightStorage>) {
            s.weight = reinterpret_cast<const int8_t*>(parts_.weight.data());
            s.weight_scale = parts_.weight_scale.data();
          } else {
            s.weight = parts_.weight.data();
            s.weight_scale = parts_.weight_scale.data();
          }
        },
        storage);
    storage_ = storage;
  }

  ShardParts parts_;
  LinearWeightStorage storage_;
  int64_t in_;
  int64_t out_;
  size_t bytes_;
  std::string format_;
};

std::string range_text(IndexRange r) { return "[" + std::to_string(r.begin) + ", " + std::to_string(r.end) + ")"; }

// The int4 rows of input features `range` (checkpoint order), with their group scales and zero
// points. Whole groups keep the fast kernel's layout (contiguous groups, k_perm local to the
// range); otherwise each row keeps its group index for the reference kernel.
void shard_int4_rows(const Int4GroupWeightStorage& s, int64_t K, int64_t N, IndexRange range, ShardParts& parts) {
  const int64_t G = s.group_size, num_groups = w4a16_num_groups(K, G);
  std::vector<int64_t> stored_row(static_cast<size_t>(K));  // checkpoint row -> stored row
  for (int64_t i = 0; i < K; ++i) stored_row[s.k_perm ? s.k_perm[i] : i] = i;
  std::vector<int64_t> rows_in_group(static_cast<size_t>(num_groups), 0);
  for (int64_t k = range.begin; k < range.end; ++k) ++rows_in_group[stored_row[k] / G];
  bool whole_groups = true;
  std::map<int64_t, int32_t> compact;  // group -> its index among the shard's groups, in order
  for (int64_t g = 0; g < num_groups; ++g) {
    if (rows_in_group[g] == 0) continue;
    const int64_t full = std::min(G, K - g * G);
    whole_groups = whole_groups && rows_in_group[g] == full && full == G;
    compact.emplace(g, static_cast<int32_t>(compact.size()));
  }
  // Local rows in stored order on the fast path, in checkpoint order on the reference path.
  std::vector<int64_t> local_to_stored;
  for (int64_t i = 0; i < K && whole_groups; ++i) {
    const int64_t k = s.k_perm ? s.k_perm[i] : i;
    if (k >= range.begin && k < range.end) local_to_stored.push_back(i);
  }
  for (int64_t k = range.begin; k < range.end && !whole_groups; ++k) local_to_stored.push_back(stored_row[k]);

  const int64_t Kl = range.size();
  std::vector<int32_t> qweight(static_cast<size_t>(Kl / 8 * N), 0);
  for (int64_t j = 0; j < Kl; ++j) {
    const int64_t i = local_to_stored[j];
    for (int64_t n = 0; n < N; ++n) {
      const uint32_t q = (static_cast<uint32_t>(s.qweight[(i / 8) * N + n]) >> (4 * (i % 8))) & 0xFu;
      qweight[(j / 8) * N + n] =
          static_cast<int32_t>(static_cast<uint32_t>(qweight[(j / 8) * N + n]) | q << 4 * (j % 8));
    }
  }
  parts.weight = as_bytes(qweight);
  for (const auto& [g, c] : compact) {
    parts.scales.insert(parts.scales.end(), s.scales + g * N, s.scales + (g + 1) * N);
    parts.zeros.insert(parts.zeros.end(), s.zeros + g * N, s.zeros + (g + 1) * N);
  }
  if (whole_groups) {
    bool identity = true;
    for (int64_t j = 0; j < Kl; ++j) {
      const int64_t k = (s.k_perm ? s.k_perm[local_to_stored[j]] : local_to_stored[j]) - range.begin;
      parts.k_perm.push_back(static_cast<int32_t>(k));
      identity = identity && k == j;
    }
    if (identity) parts.k_perm.clear();
  } else {
    for (int64_t j = 0; j < Kl; ++j) parts.g_idx.push_back(compact.at(local_to_stored[j] / G));
  }
}

}  // namespace

Result<std::unique_ptr<LinearWeight>> shard_linear_weight(const LinearWeight& weight, ShardAxis axis, IndexRange range,
                                                          bool keep_bias, const std::string& name) {
  const int64_t K = weight.in_features(), N = weight.out_features();
  const bool by_output = axis == ShardAxis::kOutput;
  const int64_t limit = by_output ? N : K;
  if (range.begin < 0 || range.end > limit || range.size() <= 0)
    return invalid_argument(name + ": shard " + range_text(range) + " is outside the " + std::to_string(limit) +
                            (by_output ? " output" : " input") + " features");
  const IndexRange all_rows{0, N}, all_cols{0, K};
  const IndexRange rows = by_output ? range : all_rows, cols = by_output ? all_cols : range;
  const int64_t out = rows.size(), in = cols.size();

  const LinearWeightView view = weight.view();
  ShardParts parts;
  if (view.bias != nullptr && (by_output || keep_bias)) parts.bias.assign(view.bias + rows.begin, view.bias + rows.end);
  LinearWeightStorage storage = view.storage;
  size_t bytes = parts.bias.size() * sizeof(float);

  if (auto* s = std::get_if<DenseWeightStorage>(&storage)) {
    const size_t elem = dtype_size(s->dtype);
    parts.weight.resize(static_cast<size_t>(out * in) * elem);
    const auto* src = static_cast<const uint8_t*>(s->weight);
    for (int64_t r = 0; r < out; ++r)
      std::memcpy(parts.weight.data() + r * in * elem, src + ((rows.begin + r) * K + cols.begin) * elem, in * elem);
    bytes += parts.weight.size();
  } else if (auto* s = std::get_if<Fp8WeightStorage>(&storage)) {
    parts.weight = sub_matrix(s->weight, K, rows, cols);
    parts.weight_scale.assign(s->weight_scale + rows.begin, s->weight_scale + rows.end);
    bytes += parts.weight.size() + parts.weight_scale.size() * sizeof(float);
  } else if (auto* s = std::get_if<Int8WeightStorage>(&storage)) {
    parts.weight = as_bytes(sub_matrix(s->weight, K, rows, cols));
    parts.weight_scale.assign(s->weight_scale + rows.begin, s->weight_scale + rows.end);
    bytes += parts.weight.size() + parts.weight_scale.size() * sizeof(float);
  } else if (auto* s = std::get_if<Fp8BlockWeightStorage>(&storage)) {
    const int64_t block = by_output ? s->block_n : s->block_k;
    if (range.begin % block != 0 || (range.end % block != 0 && range.end != limit))
      return invalid_argument(name + ": shard " + range_text(range) + " of the " + (by_output ? "output" : "input") +
                              " features splits a weight block of " + std::to_string(block));
    const int64_t scale_cols = (K + s->block_k - 1) / s->block_k;
    const IndexRange scale_rows{rows.begin / s->block_n, (rows.end + s->block_n - 1) / s->block_n};
    const IndexRange scale_keep{cols.begin / s->block_k, (cols.end + s->block_k - 1) / s->block_k};
    parts.weight = sub_matrix(s->weight, K, rows, cols);
    parts.weight_scale = sub_matrix(s->weight_scale, scale_cols, scale_rows, scale_keep);
    bytes += parts.weight.size() + parts.weight_scale.size() * sizeof(float);
  } else {
    const auto& q = std::get<Int4GroupWeightStorage>(storage);
    const int64_t num_groups = w4a16_num_groups(K, q.group_size);
    if (by_output) {
      parts.weight = as_bytes(sub_matrix(q.qweight, N, {0, K / 8}, rows));
      parts.scales = sub_matrix(q.scales, N, {0, num_groups}, rows);
      parts.zeros = sub_matrix(q.zeros, N, {0, num_groups}, rows);
      if (q.k_perm != nullptr) parts.k_perm.assign(q.k_perm, q.k_perm + K);
    } else {
      if (range.begin % 8 != 0 || range.end % 8 != 0)
        return invalid_argument(name + ": shard " + range_text(range) +
                                " of the input features splits a word of 8 int4 rows");
      shard_int4_rows(q, K, N, range, parts);
    }
    bytes += parts.weight.size() + parts.scales.size() * 2 + parts.zeros.size() +
             (parts.k_perm.size() + parts.g_idx.size()) * sizeof(int32_t);
  }
  return std::unique_ptr<LinearWeight>(
      new ShardedLinearWeight(std::move(parts), storage, in, out, bytes, weight.format_name()));
}

}  // namespace crosspoint
