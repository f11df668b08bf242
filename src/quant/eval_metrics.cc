#include "quant/eval_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "quant/sequence_forward.h"

namespace crosspoint {

double EvalTotals::perplexity() const { return num_predicted ? std::exp(nll_sum / num_predicted) : NAN; }
double EvalTotals::reference_perplexity() const { return num_compared ? std::exp(ref_nll_sum / num_compared) : NAN; }
double EvalTotals::agreement() const { return num_compared ? static_cast<double>(num_agree) / num_compared : NAN; }

double EvalTotals::mean_kl_divergence() const {
  if (kl_divergence.empty()) return NAN;
  double sum = 0.0;
  for (double v : kl_divergence) sum += v;
  return sum / static_cast<double>(kl_divergence.size());
}

double EvalTotals::kl_divergence_quantile(double q) const {
  if (kl_divergence.empty()) return NAN;
  std::vector<double> sorted = kl_divergence;
  std::sort(sorted.begin(), sorted.end());
  const double rank = std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(sorted.size()));
  return sorted[static_cast<size_t>(std::max(1.0, rank)) - 1];
}

namespace {

// log softmax(logits) in double: logits - max - log(sum exp(logits - max)).
void log_softmax(const float* logits, int64_t vocab, std::vector<double>& out) {
  out.resize(static_cast<size_t>(vocab));
  double max_logit = -std::numeric_limits<double>::infinity();
  for (int64_t v = 0; v < vocab; ++v) max_logit = std::max(max_logit, static_cast<double>(logits[v]));
  double sum = 0.0;
  for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(logits[v]) - max_logit);
  const double log_sum = std::log(sum);
  for (int64_t v = 0; v < vocab; ++v) out[v] = static_cast<double>(logits[v]) - max_logit - log_sum;
}

}  // namespace

double kl_divergence(const float* ref_logits, const float* logits, int64_t vocab) {
  std::vector<double> log_p, log_q;
  log_softmax(ref_logits, vocab, log_p);
  log_softmax(logits, vocab, log_q);
  double kl = 0.0;
  for (int64_t v = 0; v < vocab; ++v) kl += std::exp(log_p[v]) * (log_p[v] - log_q[v]);
  return std::max(kl, 0.0);  // rounding can leave -1e-17 for identical rows
}

double token_nll(const float* logits, int64_t vocab, int32_t target) {
  double max_logit = -std::numeric_limits<double>::infinity();
  for (int64_t v = 0; v < vocab; ++v) max_logit = std::max(max_logit, static_cast<double>(logits[v]));
  double sum = 0.0;
  for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(logits[v]) - max_logit);
  return -(static_cast<double>(logits[target]) - max_logit - std::log(sum));
}

int32_t greedy_token(const float* logits, int64_t vocab) {
  int32_t best = 0;
  for (int64_t v = 1; v < vocab; ++v)
    if (logits[v] > logits[best]) best = static_cast<int32_t>(v);
  return best;
}

Status evaluate_sequence(const Model& model, const Model* reference, const std::vector<int32_t>& tokens,
                         EvalTotals& totals, DType kv_dtype) {
  if (reference && reference->vocab_size() != model.vocab_size())
    return invalid_argument("eval: the reference model's vocab_size differs from the model's");
  const SequenceLogits model_logits = [&](const std::vector<int32_t>& t, std::vector<float>& out) {
    return forward_sequences(model, {t}, /*all_positions=*/true, out, kv_dtype);
  };
  const SequenceLogits reference_logits = [&](const std::vector<int32_t>& t, std::vector<float>& out) {
    return forward_sequences(*reference, {t}, /*all_positions=*/true, out);
  };
  return evaluate_sequence(model_logits, reference ? &reference_logits : nullptr, model.vocab_size(), tokens, totals);
}

Status evaluate_sequence(const SequenceLogits& model, const SequenceLogits* reference, int64_t vocab,
                         const std::vector<int32_t>& tokens, EvalTotals& totals) {
  if (tokens.size() < 2) return invalid_argument("eval: a sequence needs at least 2 tokens");
  std::vector<float> logits, ref_logits;  // [num_tokens, vocab] f32
  CROSSPOINT_RETURN_IF_ERROR(model(tokens, logits));
  if (reference) CROSSPOINT_RETURN_IF_ERROR((*reference)(tokens, ref_logits));
  const size_t rows = tokens.size();
  if (logits.size() != rows * static_cast<size_t>(vocab) ||
      (reference && ref_logits.size() != rows * static_cast<size_t>(vocab)))
    return internal_error("eval: a forward returned the wrong number of logits");
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    const float* row = logits.data() + i * vocab;
    totals.nll_sum += token_nll(row, vocab, tokens[i + 1]);
    ++totals.num_predicted;
    if (reference) {
      const float* ref_row = ref_logits.data() + i * vocab;
      totals.ref_nll_sum += token_nll(ref_row, vocab, tokens[i + 1]);
      ++totals.num_compared;
      if (greedy_token(row, vocab) == greedy_token(ref_row, vocab)) ++totals.num_agree;
      totals.kl_divergence.push_back(kl_divergence(ref_row, row, vocab));
    }
  }
  return Status::ok();
}

}  // namespace crosspoint
