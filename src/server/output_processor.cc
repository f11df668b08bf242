#include "server/output_processor.h"

#include <limits>
#include <utility>

namespace crosspoint {
namespace {

// The logprobs of token i of an update (asked for by the request), or its id with an unknown
// logprob should the runner not have computed them.
TokenLogprobs token_logprobs(const RequestOutput& out, size_t i) {
  if (i < out.new_logprobs.size()) return out.new_logprobs[i];
  return {{out.new_token_ids[i], std::numeric_limits<double>::quiet_NaN()}, {}};
}

// The echoed prompt's logprobs: the first prompt token's unknown (null, as in vLLM), then each
// later one's with the request's number of top logprobs.
std::vector<TokenLogprobs> echoed_prompt_logprobs(const Choice& choice, int32_t num_logprobs) {
  std::vector<TokenLogprobs> out;
  out.push_back({{choice.first_prompt_token, std::numeric_limits<double>::quiet_NaN()}, {}});
  for (const TokenLogprobs& t : choice.prompt_logprobs) {
    out.push_back(t);
    if (out.back().top.size() > static_cast<size_t>(num_logprobs)) out.back().top.resize(num_logprobs);
  }
  return out;
}

}  // namespace

ChoiceDelta process_output(Choice& choice, const RequestOutput& out, int32_t num_logprobs) {
  ChoiceDelta d;
  if (choice.finished) return d;
  choice.completion_tokens = out.num_output_tokens;
  if (!out.prompt_logprobs.empty()) choice.prompt_logprobs = out.prompt_logprobs;
  const bool wants_logprobs = num_logprobs >= 0;
  auto emit = [&](std::string text) {
    if (wants_logprobs) {
      for (TokenLogprobs& lp : choice.logprob_aligner.emitted(text.size())) d.logprobs.push_back(std::move(lp));
    }
    d.text += text;
  };
  ChoiceEnd end;
  for (size_t i = 0; i < out.new_token_ids.size() && !d.finished; ++i) {
    if (wants_logprobs) choice.logprob_aligner.push_token(token_logprobs(out, i));
    // The token that ended the request by EOS or stop_token_ids is not part of the text (its
    // logprobs are, as in vLLM: they go out with the final chunk).
    const bool is_stop_token =
        out.finished && out.finish_reason == FinishReason::kStop && i + 1 == out.new_token_ids.size();
    if (is_stop_token) break;
    const std::string text = choice.decoder->push(out.new_token_ids[i]);
    if (wants_logprobs) choice.logprob_aligner.decoded(text.size());
    auto piece = choice.stop->push(text);
    emit(std::move(piece.text));
    if (piece.stopped) {
      d.finished = true;
      d.stop_string_matched = true;
      end.finish_reason = "stop";
      end.stop_string = piece.matched_stop;
    }
  }
  if (!d.finished && out.finished) {
    const std::string text = choice.decoder->flush();
    if (wants_logprobs) choice.logprob_aligner.decoded(text.size());
    auto piece = choice.stop->push(text);
    emit(std::move(piece.text));
    if (piece.stopped) {
      end.stop_string = piece.matched_stop;
    } else {
      emit(choice.stop->flush());
    }
    d.finished = true;
    const char* reason = finish_reason_name(out.finish_reason);
    end.finish_reason = piece.stopped ? "stop" : (reason != nullptr ? reason : "abort");
    end.stop_token_id = out.stop_token_id;
    if (out.finish_reason == FinishReason::kError) {
      d.error = ApiError{500, "the engine failed while generating this request", ""};
    } else if (out.finish_reason == FinishReason::kAbort) {
      // An abort the client did not cause (the engine stopped): an error, never a normal
      // finish with whatever text there was.
      d.error = ApiError{503, "the request was aborted: the server is shutting down", ""};
    }
  }
  if (d.finished && wants_logprobs) {
    for (TokenLogprobs& lp : choice.logprob_aligner.flush()) d.logprobs.push_back(std::move(lp));
  }
  if (d.finished) {
    choice.finished = true;
    choice.end = end;
  }
  if (choice.echo_only) {  // the prompt alone: the generated token is dropped
    d.text.clear();
    d.logprobs.clear();
  }
  if (choice.echo && !choice.echoed) {  // the prompt goes first, with the first update (as in vLLM)
    choice.echoed = true;
    d.text = choice.echo_text + d.text;
    if (wants_logprobs) {
      std::vector<TokenLogprobs> with_prompt = echoed_prompt_logprobs(choice, num_logprobs);
      for (TokenLogprobs& lp : d.logprobs) with_prompt.push_back(std::move(lp));
      d.logprobs = std::move(with_prompt);
    }
  }
  return d;
}

}  // namespace crosspoint
