#include "kernels/cuda/sampling_reference.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

namespace crosspoint::cuda {
namespace {

float key_value(uint32_t key) {
  // fp16 bits -> float, exact (a small local copy keeps this file free of other folders).
  const uint16_t h = sampling_key_bits(key);
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  uint32_t mantissa = h & 0x3FFu;
  uint32_t bits;
  if (exponent == 0x1Fu) {
    bits = sign | 0x7F800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    bits = sign | ((113u - shift) << 23) | ((mantissa & 0x3FFu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Id of the n-th (1-based) candidate with `key`, in ascending id order.
int32_t nth_id_with_key(const std::vector<uint32_t>& keys, const std::vector<bool>& valid, uint32_t key, int64_t n) {
  for (size_t i = 0; i < keys.size(); ++i)
    if (valid[i] && keys[i] == key && --n == 0) return static_cast<int32_t>(i);
  return static_cast<int32_t>(keys.size()) - 1;  // not reached for a consistent n
}

struct RowKeys {
  std::vector<uint32_t> keys;  // [vocab]
  std::vector<bool> valid;     // [vocab] not NaN
  // Distinct candidate keys, largest first, with their number of candidates.
  std::vector<uint32_t> distinct;
  std::vector<int64_t> counts;
  int32_t num_candidates = 0;
};

RowKeys row_keys(const uint16_t* logits, int32_t vocab) {
  RowKeys r;
  r.keys.assign(vocab, 0);
  r.valid.assign(vocab, false);
  std::vector<uint32_t> sorted;
  for (int32_t i = 0; i < vocab; ++i) {
    uint32_t key;
    if (!sampling_order_key(logits[i], &key)) continue;
    r.keys[i] = key;
    r.valid[i] = true;
    sorted.push_back(key);
  }
  r.num_candidates = static_cast<int32_t>(sorted.size());
  std::sort(sorted.begin(), sorted.end(), std::greater<uint32_t>());
  for (uint32_t key : sorted) {
    if (r.distinct.empty() || r.distinct.back() != key) {
      r.distinct.push_back(key);
      r.counts.push_back(0);
    }
    ++r.counts.back();
  }
  return r;
}

}  // namespace

SamplingCut gpu_sampling_cut_reference(const uint16_t* logits, int32_t vocab, const SampledRowParams& row_params) {
  const SampledRowParams params = sampling_effective_params(row_params);
  const RowKeys r = row_keys(logits, vocab);
  SamplingCut cut;
  cut.num_candidates = r.num_candidates;
  cut.cut_key = 0;
  cut.cut_last_id = vocab - 1;
  if (r.num_candidates == 0) return cut;
  cut.max_logit = key_value(r.distinct[0]);
  const auto weight = [&](uint32_t key) { return sampling_weight(key_value(key), cut.max_logit, params.temperature); };

  // Top-k: walk keys from the largest; the key where the count reaches top_k is the cut, and
  // of its ties only the first (top_k - count above) ids stay.
  std::vector<int64_t> kept_count = r.counts;  // [distinct] kept candidates per key
  size_t num_kept_keys = r.distinct.size();
  if (params.top_k > 0 && params.top_k < r.num_candidates) {
    int64_t above = 0;
    for (size_t d = 0; d < r.distinct.size(); ++d) {
      if (above + r.counts[d] >= params.top_k) {
        const int64_t need = params.top_k - above;
        cut.cut_key = r.distinct[d];
        if (need < r.counts[d]) cut.cut_last_id = nth_id_with_key(r.keys, r.valid, cut.cut_key, need);
        kept_count[d] = need;
        num_kept_keys = d + 1;
        break;
      }
      above += r.counts[d];
    }
  }

  // Top-p over what top-k kept: the same walk, by weight.
  if (params.top_p < 1.0f) {
    uint64_t kept_weight = 0;
    for (size_t d = 0; d < num_kept_keys; ++d)
      kept_weight += static_cast<uint64_t>(kept_count[d]) * weight(r.distinct[d]);
    const uint64_t target = sampling_top_p_target(kept_weight, params.top_p);
    uint64_t above = 0;
    for (size_t d = 0; d < num_kept_keys; ++d) {
      const uint64_t w = weight(r.distinct[d]);
      const uint64_t key_weight = static_cast<uint64_t>(kept_count[d]) * w;
      if (above + key_weight >= target) {
        // Ties all weigh w: the first `need` of them (in id order) reach the target.
        int64_t need = w == 0 ? kept_count[d] : static_cast<int64_t>((target - above + w - 1) / w);
        if (need < 1) need = 1;
        if (need < kept_count[d]) {
          cut.cut_last_id = nth_id_with_key(r.keys, r.valid, r.distinct[d], need);
        } else if (r.distinct[d] != cut.cut_key) {
          cut.cut_last_id = vocab - 1;
        }
        cut.cut_key = r.distinct[d];
        break;
      }
      above += key_weight;
    }
  }
  return cut;
}

namespace {

std::vector<int32_t> kept_ids(const uint16_t* logits, int32_t vocab, const SamplingCut& cut) {
  std::vector<int32_t> kept;
  for (int32_t i = 0; i < vocab; ++i) {
    uint32_t key;
    if (!sampling_order_key(logits[i], &key)) continue;
    if (key > cut.cut_key || (key == cut.cut_key && i <= cut.cut_last_id)) kept.push_back(i);
  }
  return kept;
}

}  // namespace

std::vector<int32_t> gpu_sampling_kept_ids_reference(const uint16_t* logits, int32_t vocab,
                                                     const SampledRowParams& params) {
  return kept_ids(logits, vocab, gpu_sampling_cut_reference(logits, vocab, params));
}

int32_t gpu_sample_row_reference(const uint16_t* logits, int32_t vocab, const SampledRowParams& row_params) {
  const SampledRowParams params = sampling_effective_params(row_params);
  const SamplingCut cut = gpu_sampling_cut_reference(logits, vocab, params);
  if (cut.num_candidates == 0) return 0;
  const std::vector<int32_t> kept = kept_ids(logits, vocab, cut);
  std::vector<uint64_t> weights(kept.size());
  uint64_t total = 0;
  for (size_t i = 0; i < kept.size(); ++i) {
    uint32_t key = 0;
    sampling_order_key(logits[kept[i]], &key);
    weights[i] = sampling_weight(key_value(key), cut.max_logit, params.temperature);
    total += weights[i];
  }
  const uint64_t target = sampling_draw_target(total, params.uniform);
  uint64_t running = 0;
  for (size_t i = 0; i < kept.size(); ++i) {
    running += weights[i];
    if (running > target) return kept[i];
  }
  return kept.back();  // not reached: target < total
}

}  // namespace crosspoint::cuda
