// Multi-turn conversations from ShareGPT: each conversation is a chain of requests where turn
// k sends the whole history (every earlier user message and the server's own answer to it)
// followed by user message k, so the history is what a prefix cache can reuse. The sampler
// picks conversations; the bench builds each turn's body when the previous turn has finished.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench/sample_request.h"
#include "bench/sharegpt_dataset.h"

namespace crosspoint {
class Tokenizer;
}

namespace crosspoint::bench {

// One sampled conversation: turn k's prompt is user message k alone (prompt_len its tokens)
// and expected_output_len the tokens of the dataset's reply to it (or the fixed length).
struct Conversation {
  std::vector<SampleRequest> turns;
};

struct MultiTurnSampling {
  int num_conversations = 0;
  int max_turns = 8;              // user turns kept per conversation (from the start)
  int max_context_tokens = 2048;  // history + this user turn + its reply stays within this
  uint64_t seed = 0;
  std::optional<int> fixed_output_len;  // --sharegpt-output-len
};

// random.seed(seed) + shuffle of the dialogues, as the single-turn sampler; keeps those whose
// turns alternate human / gpt from a human turn, takes turn pairs while each user message and
// reply has at least 4 tokens and the running context fits max_context_tokens, and accepts a
// conversation with at least two such pairs. Too few accepted: repeated with random.choice.
std::vector<Conversation> sample_multi_turn(std::vector<std::vector<ShareGptTurn>> dialogues,
                                            const Tokenizer& tokenizer, const MultiTurnSampling& sampling,
                                            DatasetSummary* summary);

}  // namespace crosspoint::bench
