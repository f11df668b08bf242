#include "bench/multi_turn_dataset.h"

#include "bench/python_random.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint::bench {

std::vector<Conversation> sample_multi_turn(std::vector<std::vector<ShareGptTurn>> dialogues,
                                            const Tokenizer& tokenizer, const MultiTurnSampling& sampling,
                                            DatasetSummary* summary) {
  {
    PythonRandom rng(sampling.seed);
    rng.shuffle(dialogues);
  }
  std::vector<Conversation> conversations;
  int num_scanned = 0;
  for (const std::vector<ShareGptTurn>& dialogue : dialogues) {
    if (static_cast<int>(conversations.size()) >= sampling.num_conversations) break;
    ++num_scanned;
    Conversation c;
    int context = 0;
    for (size_t k = 0; k + 1 < dialogue.size() && static_cast<int>(c.turns.size()) < sampling.max_turns; k += 2) {
      if (dialogue[k].from != "human" || dialogue[k + 1].from != "gpt") break;
      const int user_len = count_prompt_tokens(tokenizer, dialogue[k].text);
      const int reply_len =
          sampling.fixed_output_len ? *sampling.fixed_output_len : count_prompt_tokens(tokenizer, dialogue[k + 1].text);
      if (user_len < 4 || reply_len < 4) break;
      if (context + user_len + reply_len > sampling.max_context_tokens) break;
      context += user_len + reply_len;
      c.turns.push_back({dialogue[k].text, user_len, reply_len});
    }
    if (c.turns.size() >= 2) conversations.push_back(std::move(c));
  }
  int num_oversampled = 0;
  if (!conversations.empty() && static_cast<int>(conversations.size()) < sampling.num_conversations) {
    PythonRandom rng(sampling.seed);
    const size_t num_accepted = conversations.size();
    while (static_cast<int>(conversations.size()) < sampling.num_conversations) {
      conversations.push_back(conversations[rng.choice_index(num_accepted)]);
      ++num_oversampled;
    }
  }
  if (summary) {
    summary->num_entries_scanned = num_scanned;
    summary->num_oversampled = num_oversampled;
  }
  return conversations;
}

}  // namespace crosspoint::bench
