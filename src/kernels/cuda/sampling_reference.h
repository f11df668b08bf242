// The GPU sampler's rule (kernels/cuda/sampling.h), written once as plain C++: the per-row
// parameters, the order key and the fixed-point weight that the kernel and this host
// reference share, and a host reference that runs the same algorithm on one row. Built with
// and without CUDA, so its tests run on every CI machine (sanitizers included).
//
// The rule, for one row of fp16 logits l[0..V) and temperature T > 0:
//   candidates   every id whose logit is not NaN (-0 counts as +0).
//   order        larger logit first; equal logits: lower id first (the host sampler's order,
//                kernels/sampling.h), so every kept set below is a prefix of that order.
//   weight       w(l) = exp((l - max) / T) in double (1 exactly for l == max, so +inf and
//                all -inf rows are defined), stored as an unsigned fixed-point integer
//                W = round(w * 2^44). Sums of W are exact and independent of the order in
//                which threads add them, which is what lets the GPU and this reference agree.
//   top_k        0 < top_k < #candidates: keep the first top_k of the order; else all.
//   top_p        < 1: of those, keep the shortest prefix whose summed W reaches
//                ceil(top_p * kept W) (the host's "cumulative probability >= top_p").
//   draw         target = floor(kept W * u32 / 2^32) with u32 = floor(u * 2^32); walk the
//                kept ids in ascending id order and return the first whose running sum of W
//                exceeds target.
// Against kernels/sampling.cc (doubles, walk in sorted order) the kept set is the same, and
// each kept token is drawn with the same probability up to the 2^-45 rounding of W (a token
// with w < 2^-45, ~31 temperature-scaled logits below the max, gets weight 0 and is never
// drawn), and except where a top-p boundary is met exactly (e.g. 1000 equal logits and
// top_p 0.5): the host's running double sum may land on either side of it, this rule's
// integer sum keeps exactly 500. The token drawn for one given u differs in general: the host walks the kept set in
// probability order, this rule in id order. Rows the host sampler leaves undefined are
// defined here: NaN logits are never drawn, an all-NaN row gives token 0, an all -inf row is
// uniform over its ids, +inf logits share the whole mass.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#if defined(__CUDACC__)
#define CROSSPOINT_HOST_DEVICE __host__ __device__
#else
#define CROSSPOINT_HOST_DEVICE
#endif

namespace crosspoint::cuda {

// One sampled row of a step: the device array element the kernel reads (20 bytes, plain data).
struct SampledRowParams {
  int32_t logits_row = 0;    // row of the logits matrix; the token goes to out_tokens[logits_row]
  float temperature = 1.0f;  // > 0 (greedy rows take argmax_rows instead)
  int32_t top_k = 0;         // 0 (or >= vocab) = off
  float top_p = 1.0f;        // (0, 1]; 1 = off
  float uniform = 0.0f;      // u in [0, 1) from the request's seeded generator
};

// Fixed-point scale of the weights: W = round(w * 2^44), so a row sums to < vocab * 2^44,
// which fits in 64 bits while vocab < 2^20.
constexpr int kSamplingWeightBits = 44;
constexpr int32_t kSamplingMaxVocab = (1 << 20) - 1;

// Order key of an fp16 logit (or a bf16 one: the same sign-magnitude order, another NaN
// boundary): a larger logit has a larger key; -0 and +0 share one key. Returns false for NaN
// (not a candidate).
CROSSPOINT_HOST_DEVICE inline bool sampling_order_key(uint16_t bits, uint32_t* key, bool bf16 = false) {
  if ((bits & 0x7FFFu) > (bf16 ? 0x7F80u : 0x7C00u)) return false;  // NaN
  if (bits == 0x8000u) bits = 0;                                    // -0 -> +0
  *key = (bits & 0x8000u) ? (~bits & 0xFFFFu) : (bits | 0x8000u);
  return true;
}

// The 16-bit logit a key came from (its value is what the weight is computed from).
CROSSPOINT_HOST_DEVICE inline uint16_t sampling_key_bits(uint32_t key) {
  return static_cast<uint16_t>((key & 0x8000u) ? (key & 0x7FFFu) : (~key & 0xFFFFu));
}

// W of a logit given the row's max logit (both as float values of fp16 logits).
CROSSPOINT_HOST_DEVICE inline uint64_t sampling_weight(float logit, float max_logit, float temperature) {
  if (logit == max_logit) return uint64_t{1} << kSamplingWeightBits;
  const double w =
      ::exp((static_cast<double>(logit) - static_cast<double>(max_logit)) / static_cast<double>(temperature));
  // w in [0, 1): scaling by 2^44 is exact, then round to nearest (ties to even).
#if defined(__CUDA_ARCH__)
  return __double2ull_rn(w * 17592186044416.0);
#else
  return static_cast<uint64_t>(std::nearbyint(w * 17592186044416.0));
#endif
}

// The parameters the rule runs with: temperature <= 0 (or NaN) is greedy, i.e. top_k = 1 (the
// most likely token, lowest id on ties, as argmax), with temperature 1.
CROSSPOINT_HOST_DEVICE inline SampledRowParams sampling_effective_params(SampledRowParams params) {
  if (!(params.temperature > 0.0f)) {
    params.temperature = 1.0f;
    params.top_k = 1;
  }
  return params;
}

// ceil(top_p * kept_weight), at least 1 and at most kept_weight: the W a top-p prefix must reach.
CROSSPOINT_HOST_DEVICE inline uint64_t sampling_top_p_target(uint64_t kept_weight, float top_p) {
  const double target = ::ceil(static_cast<double>(kept_weight) * static_cast<double>(top_p));
  if (!(target >= 1.0)) return 1;
  if (target >= static_cast<double>(kept_weight)) return kept_weight;
  return static_cast<uint64_t>(target);
}

// floor(kept_weight * u32 / 2^32), u32 = floor(u * 2^32): always < kept_weight.
CROSSPOINT_HOST_DEVICE inline uint64_t sampling_draw_target(uint64_t kept_weight, float uniform) {
  double scaled = static_cast<double>(uniform) * 4294967296.0;
  if (!(scaled >= 0.0)) scaled = 0.0;
  if (scaled > 4294967295.0) scaled = 4294967295.0;
  const uint64_t u32 = static_cast<uint64_t>(scaled);
#if defined(__CUDA_ARCH__)
  return __umul64hi(kept_weight, u32 << 32);
#else
  return static_cast<uint64_t>((static_cast<unsigned __int128>(kept_weight) * u32) >> 32);
#endif
}

// The kept set of a row: id i is kept iff it is a candidate and
//   key(i) > cut_key, or key(i) == cut_key and i <= cut_last_id.
struct SamplingCut {
  uint32_t cut_key = 0;
  int32_t cut_last_id = 0;
  float max_logit = 0.0f;
  int32_t num_candidates = 0;  // non-NaN logits
};

// The host reference of the kernel, same algorithm (counts per key instead of radix passes;
// the integers it compares are the kernel's).
//   logits [vocab] fp16 bits; params.temperature > 0.
SamplingCut gpu_sampling_cut_reference(const uint16_t* logits, int32_t vocab, const SampledRowParams& params);
// The kept ids in ascending id order, with their W.
std::vector<int32_t> gpu_sampling_kept_ids_reference(const uint16_t* logits, int32_t vocab,
                                                     const SampledRowParams& params);
// The token the kernel draws for params.uniform (0 for an all-NaN row).
int32_t gpu_sample_row_reference(const uint16_t* logits, int32_t vocab, const SampledRowParams& params);

}  // namespace crosspoint::cuda
