// Quality of a (quantised) model on text: perplexity of the next token and greedy-token
// agreement with a reference model, both teacher-forced on the same token sequences.
//   perplexity = exp(mean over predicted positions of -log p(token[i+1] | token[..i]))
//   agreement  = fraction of positions where argmax of the model's logits equals the
//                reference's argmax
//   KL divergence = per position sum_v p_ref(v) (log p_ref(v) - log p(v)), nats, in double:
//                the reference's next-token distribution against the model's (llama.cpp's
//                `perplexity --kl-divergence`), reported as its mean, 99th percentile and max
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/status.h"
#include "model/model.h"

namespace crosspoint {

struct EvalTotals {
  double nll_sum = 0.0;               // nats, over predicted positions
  int64_t num_predicted = 0;          // positions with a next token
  int64_t num_compared = 0;           // positions compared with the reference
  int64_t num_agree = 0;              // of those, equal argmax
  double ref_nll_sum = 0.0;           // the reference's nll on the same positions
  std::vector<double> kl_divergence;  // per compared position, nats

  double perplexity() const;
  double reference_perplexity() const;
  double agreement() const;           // NaN without a reference
  double mean_kl_divergence() const;  // NaN without a reference
  // The q-quantile (0..1, nearest rank) of the per-position KL divergence; NaN without one.
  double kl_divergence_quantile(double q) const;
};

// Adds one sequence's statistics (reference may be null). kv_dtype is the model's KV cache
// (kF8E4M3: an fp8 cache); the reference always runs with an f32 cache.
Status evaluate_sequence(const Model& model, const Model* reference, const std::vector<int32_t>& tokens,
                         EvalTotals& totals, DType kv_dtype = DType::kF32);

// The logits of every position of one sequence, [tokens, vocab] f32, on whichever device runs it.
using SequenceLogits = std::function<Status(const std::vector<int32_t>& tokens, std::vector<float>& logits)>;
// The same statistics from two such functions (reference may be null): what --device cuda runs.
Status evaluate_sequence(const SequenceLogits& model, const SequenceLogits* reference, int64_t vocab,
                         const std::vector<int32_t>& tokens, EvalTotals& totals);

// -log softmax(logits)[target] in double, for one row of `vocab` logits.
double token_nll(const float* logits, int64_t vocab, int32_t target);
// KL(softmax(ref_logits) || softmax(logits)) in nats, double precision, one row of `vocab`.
double kl_divergence(const float* ref_logits, const float* logits, int64_t vocab);
// Index of the largest logit (the first on ties).
int32_t greedy_token(const float* logits, int64_t vocab);

}  // namespace crosspoint
