#include "bench/output_tokens.h"

namespace crosspoint::bench {

int count_output_tokens(const Tokenizer& tokenizer, std::string_view text) {
  return static_cast<int>(tokenizer.encode(text, /*parse_special=*/true).size());
}

void resolve_output_len(RequestRecord& r, const Tokenizer& tokenizer) {
  if (r.usage_completion_tokens > 0) {
    r.output_len = r.usage_completion_tokens;
    r.output_len_source = "usage";
  } else {
    r.output_len = count_output_tokens(tokenizer, r.generated_text);
    r.output_len_source = "tokenizer";
  }
}

}  // namespace crosspoint::bench
