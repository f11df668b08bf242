// The tiny byte-level BPE tokenizer of tests/fixtures/bench, loaded once per test binary, for
// the server's unit tests (request preparation, output processing, logprobs JSON).
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "tokenizer/tokenizer.h"

namespace crosspoint::testing {

// Throws (failing the test that asked) when the file does not load.
inline const Tokenizer& fixture_tokenizer() {
  static const std::unique_ptr<Tokenizer> tokenizer = [] {
    auto t =
        Tokenizer::from_tokenizer_json(std::string(CROSSPOINT_FIXTURES_DIR) + "/bench/tiny_tokenizer/tokenizer.json");
    if (!t.is_ok()) throw std::runtime_error(t.status().to_string());
    return std::move(t).value();
  }();
  return *tokenizer;
}

}  // namespace crosspoint::testing
