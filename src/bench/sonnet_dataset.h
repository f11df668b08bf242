// vLLM's sonnet dataset (SonnetDataset, deprecated there but still offered): the lines of a
// poem file (vLLM's benchmarks/sonnet.txt, Shakespeare's sonnets), every prompt
// "Pick as many lines as you can from these poem lines:\n" followed by the file's first lines
// (a prefix shared by all prompts, about prefix_len tokens) and lines drawn with
// random.choices (CPython's generator seeded with the seed, reproduced), as many as make about
// input_len tokens by the lines' mean length. The prompt's length is counted in the chat
// template; a draw longer than input_len is drawn again. Sent in the chat template on
// /v1/completions, as written (the server applies the template) on /v1/chat/completions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/sample_request.h"
#include "common/status.h"

namespace crosspoint {
class Tokenizer;
struct ChatTemplate;
}  // namespace crosspoint

namespace crosspoint::bench {

// The file's lines, each with its '\n' (Python's readlines).
Result<std::vector<std::string>> load_poem_lines(const std::string& path);

struct SonnetSampling {
  int num_requests = 0;
  int input_len = 550;
  int output_len = 150;
  int prefix_len = 200;
  bool send_formatted = true;  // false for the chat endpoint
  uint64_t seed = 0;
};

Result<std::vector<SampleRequest>> sample_sonnet(const std::vector<std::string>& lines, const Tokenizer& tokenizer,
                                                 const ChatTemplate& chat_template, const SonnetSampling& sampling);

}  // namespace crosspoint::bench
