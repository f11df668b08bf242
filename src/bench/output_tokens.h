// Output length of a request as vLLM's benchmark counts it: the server's usage
// completion_tokens when it sent a non-zero count, else the tokenizer on the generated text as
// tokenizer(text, add_special_tokens=False) does it, special-token text (a "<|im_end|>" a
// server left in the text) counting as the one token it is.
#pragma once

#include <string_view>

#include "bench/request_record.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint::bench {

int count_output_tokens(const Tokenizer& tokenizer, std::string_view text);

// Sets record.output_len and record.output_len_source ("usage" or "tokenizer").
void resolve_output_len(RequestRecord& record, const Tokenizer& tokenizer);

}  // namespace crosspoint::bench
