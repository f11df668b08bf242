// A request refused before it runs: why, and which of its fields; the server names the field
// in its API's terms and words the answer once.
#pragma once

#include "common/status.h"

namespace crosspoint {

// The request field a refusal is about (the server names it in its own terms: "prompt" or
// "messages", "logprobs" or "top_logprobs", ...).
enum class RefusedField { kPrompt, kMaxTokens, kLogprobs, kPromptLogprobs };

// A request the engine can never run: why (invalid_argument or resource_exhausted) and which
// field.
struct RequestRefusal {
  RefusedField field = RefusedField::kPrompt;
  Status status;
};

}  // namespace crosspoint
