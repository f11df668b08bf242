// Temperature / top-k / top-p sampling of many logits rows in one launch, on the GPU.
//
// The rule (kept set, weights, draw) is written out in kernels/cuda/sampling_reference.h, with
// a host reference of the same algorithm. In short: the kept set is the host sampler's
// (kernels/sampling.h: softmax of logits / temperature, the first top_k of the order "larger
// logit, then lower id", then the shortest prefix of that order reaching top_p of their mass),
// and each kept token is drawn with the host's probability up to a 2^-45 fixed-point rounding
// of its weight. The token drawn for one given u is NOT in general the host sampler's: the
// host walks the kept tokens from most to least likely, this kernel walks them in id order
// (a scan over the row instead of a sort). The distribution is the same; a fixed seed still
// fixes the tokens, but GPU and CPU runs of one seed give different sequences.
//
// One block of 1024 threads per row; the row (fp16) is read a few times from L2:
//   1. max and a 256-bin histogram of the high byte of each logit's 16-bit order key;
//   2. top-k: a low-byte histogram inside the high-byte bin that holds the k-th logit gives
//      the exact cut key (radix select); ties at the cut keep the lowest ids (a block scan);
//   3. top-p: fixed-point weights (exp in double, round(w * 2^44)) summed per high-byte bin,
//      then the bin that reaches the target is split by key as in 2 (integer sums, so the
//      result does not depend on the order in which threads add);
//   4. draw: per-thread weight sums over contiguous id ranges, a block scan, and the owning
//      thread's warp finds the token.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/dtype.h"
#include "common/status.h"
#include "kernels/cuda/sampling_reference.h"

namespace crosspoint::cuda {

// For each i < num_sampled_rows, with p = row_params[i] (device array):
//   out_tokens[p.logits_row] = the token drawn from logits[p.logits_row, 0:vocab_size].
//   logits      [num_logits_rows, vocab_size] fp16 (bf16 with dtype kBF16), row stride `stride` elements (device)
//   row_params  [num_sampled_rows] SampledRowParams (device); p.temperature <= 0 draws the
//               most likely token (lowest id on ties); a p.logits_row outside
//               [0, num_logits_rows) is skipped (nothing read or written)
//   out_tokens  [num_logits_rows] int32 (device); rows not named in row_params are untouched
// vocab_size in [1, kSamplingMaxVocab]. Launches only (no synchronisation); graph-capturable.
Status sample_rows(const uint16_t* logits, int64_t stride, int num_logits_rows, const SampledRowParams* row_params,
                   int num_sampled_rows, int32_t* out_tokens, int vocab_size, cudaStream_t stream,
                   DType dtype = DType::kF16);

}  // namespace crosspoint::cuda
