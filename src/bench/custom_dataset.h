// vLLM's custom dataset (CustomDataset): a JSONL file, one {"prompt": "..."} object per line.
// random.seed(seed) then random.shuffle(rows) (CPython's generator, reproduced) unless
// disable_shuffle; the first num_requests rows become requests, each prompt wrapped in the
// tokenizer's chat template as one user message (add_generation_prompt) unless
// skip_chat_template, its length counted as tokenizer(prompt).input_ids (special tokens added);
// every request asks for output_len tokens. Fewer rows than num_requests: random.seed(seed) and
// random.choices fill up the rest, unless no_oversample.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/sample_request.h"
#include "bench/sharegpt_dataset.h"  // count_prompt_tokens
#include "common/status.h"

namespace crosspoint {
class Tokenizer;
struct ChatTemplate;
}  // namespace crosspoint

namespace crosspoint::bench {

// The "prompt" of every line, in file order. A line that is not a JSON object with a string
// "prompt", or a file that does not end in .jsonl (vLLM reads only JSONL), is an error naming
// the file and line.
Result<std::vector<std::string>> load_custom_prompts(const std::string& path);

struct CustomSampling {
  int num_requests = 0;
  int output_len = 256;
  bool skip_chat_template = false;
  bool disable_shuffle = false;
  bool no_oversample = false;
  uint64_t seed = 0;
};

Result<std::vector<SampleRequest>> sample_custom(std::vector<std::string> prompts, const Tokenizer& tokenizer,
                                                 const ChatTemplate& chat_template, const CustomSampling& sampling);

// The prompt as one user message in the chat template, with the generation prompt.
Result<std::string> render_user_prompt(const ChatTemplate& chat_template, const std::string& prompt);

}  // namespace crosspoint::bench
