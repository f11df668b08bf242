// The server's output processor: the engine's updates for one choice of a request become the
// text and logprobs to send, with the choice's incremental detokeniser, stop strings, logprob
// alignment and echoed prompt. It holds no socket and calls no engine: the HTTP loop sends
// what it returns and aborts the engine sequence when it says so.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine_request.h"
#include "request/logprobs.h"
#include "server/api_error.h"
#include "server/logprob_aligner.h"
#include "server/openai_response.h"
#include "server/stop_string_matcher.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint {

// One of a request's n choices: its own engine sequence, text and stop-string state.
struct Choice {
  int32_t index = 0;
  int64_t engine_id = -1;  // -1 until submitted (while the request is prepared)
  bool finished = false;   // its last update is processed
  std::unique_ptr<IncrementalDecoder> decoder;
  std::unique_ptr<StopStringMatcher> stop;
  std::string text;  // non-streaming: the whole completion so far
  int64_t completion_tokens = 0;
  ChoiceEnd end;
  // logprobs (the request's num_logprobs >= 0): held until their text is emitted.
  LogprobAligner logprob_aligner;
  std::vector<TokenLogprobs> logprobs;  // non-streaming: every token's so far
  int64_t emitted_chars = 0;            // streaming: characters sent so far (completions' text_offset)
  // Completions' echo: echo_text (the prompt) goes out ahead of the first text, with the prompt
  // tokens' logprobs ahead of the first logprobs; echo_only (max_tokens 0) drops the one token
  // the engine generates.
  bool echo = false;
  bool echo_only = false;
  bool echoed = false;
  std::string echo_text;
  int32_t first_prompt_token = -1;
  // Prompt logprobs (num_prompt_logprobs >= 0): the choice's prompt_logprobs, non-streaming only.
  int32_t num_prompt_logprobs = -1;
  bool report_prompt_logprobs = false;
  std::vector<TokenLogprobs> prompt_logprobs;
};

// What one engine update adds to a choice.
struct ChoiceDelta {
  std::string text;                     // to send (the echoed prompt first, once)
  std::vector<TokenLogprobs> logprobs;  // of the tokens whose text is in `text` (logprobs asked for)
  bool finished = false;                // the choice is complete: choice.end says why
  bool stop_string_matched = false;     // the engine sequence should stop: nothing more is wanted
  // The request must end with this error instead: the engine failed, or stopped it without the
  // client asking (shutdown).
  std::optional<ApiError> error;
};

// Applies `out` to `choice` (whose request asked for num_logprobs top logprobs, -1 for none).
// A choice already finished gets an empty delta.
ChoiceDelta process_output(Choice& choice, const RequestOutput& out, int32_t num_logprobs);

}  // namespace crosspoint
