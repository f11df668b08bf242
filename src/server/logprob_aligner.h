// Keeps a streamed choice's logprobs with its text. The decoder holds back bytes of incomplete
// characters and the stop-string matcher text that may start a stop string, so a token's text
// can go out chunks after the token: its logprobs go out in the chunk that carries the last byte
// of text it produced. A token that produced no text on its own goes with the next token that
// does; whatever is still held at the end (a stop string's tokens, the EOS token) goes with the
// final chunk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "request/logprobs.h"

namespace crosspoint {

class LogprobAligner {
 public:
  // The next generated token (before its text is pushed through decoded()).
  void push_token(TokenLogprobs logprobs);
  // The decoder turned the tokens pushed so far into `bytes` more bytes of text.
  void decoded(size_t bytes);
  // `bytes` more bytes of that text were emitted: the logprobs whose text is now all out.
  std::vector<TokenLogprobs> emitted(size_t bytes);
  // The end of the choice: everything not yet returned.
  std::vector<TokenLogprobs> flush();

 private:
  static constexpr int64_t kNoTextYet = -1;
  struct Pending {
    TokenLogprobs logprobs;
    int64_t text_end = kNoTextYet;  // decoded bytes up to the end of this token's text
  };
  std::deque<Pending> pending_;
  int64_t decoded_bytes_ = 0;
  int64_t emitted_bytes_ = 0;
};

}  // namespace crosspoint
