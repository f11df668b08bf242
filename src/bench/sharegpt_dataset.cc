#include "bench/sharegpt_dataset.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "bench/python_random.h"
#include "common/mapped_file.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint::bench {

namespace {

using Json = nlohmann::json;

// SAX handler that keeps conversations[0].value and conversations[1].value of each top-level
// entry (and, when dialogues is given, every turn's from and value). depth counts open
// containers: 1 = the top array, 2 = an entry, 3 = its conversations array, 4 = one turn.
class ShareGptSax : public nlohmann::json_sax<Json> {
 public:
  ShareGptSax(std::vector<std::pair<std::string, std::string>>& out, std::vector<std::vector<ShareGptTurn>>* dialogues)
      : out_(out), dialogues_(dialogues) {}

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t) override { return scalar(); }
  bool number_unsigned(number_unsigned_t) override { return scalar(); }
  bool number_float(number_float_t, const string_t&) override { return scalar(); }
  bool binary(binary_t&) override { return scalar(); }
  bool string(string_t& value) override {
    if (depth_ == 4 && in_conversations_ && turn_key_ == "from" && dialogues_ && !turns_.empty())
      turns_.back().from = value;
    if (depth_ == 4 && in_conversations_ && turn_key_ == "value") {
      if (dialogues_ && !turns_.empty()) turns_.back().text = value;
      if (num_turns_ == 1) prompt_ = std::move(value);
      if (num_turns_ == 2) reply_ = std::move(value);
    }
    return scalar();
  }
  bool key(string_t& value) override {
    if (depth_ == 2) entry_key_ = value;
    if (depth_ == 4) turn_key_ = value;
    return true;
  }
  bool start_object(std::size_t) override {
    if (depth_ == 0) return fail("the top level is an object, not a list of conversations");
    if (depth_ == 1) {
      num_turns_ = 0;
      prompt_.clear();
      reply_.clear();
      entry_key_.clear();
      turns_.clear();
    }
    if (depth_ == 3 && in_conversations_) {
      ++num_turns_;
      turn_key_.clear();
      if (dialogues_) turns_.emplace_back();
    }
    ++depth_;
    return true;
  }
  bool end_object() override {
    --depth_;
    if (depth_ == 1 && num_turns_ >= 2) {
      out_.emplace_back(std::move(prompt_), std::move(reply_));
      if (dialogues_) dialogues_->push_back(std::move(turns_));
    }
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == 2 && entry_key_ == "conversations") in_conversations_ = true;
    if (depth_ == 3 && in_conversations_) ++num_turns_;  // a non-object turn still counts
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    if (depth_ == 2) in_conversations_ = false;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    error_ = "invalid JSON at byte " + std::to_string(position) + ": " + e.what();
    error_position_ = position;
    return false;
  }
  size_t error_position() const { return error_position_; }
  const std::string& error() const { return error_; }

 private:
  bool scalar() {
    if (depth_ == 0) return fail("the top level is not a list of conversations");
    if (depth_ == 3 && in_conversations_) ++num_turns_;
    return true;
  }
  bool fail(const std::string& message) {
    error_ = message;
    return false;
  }

  std::vector<std::pair<std::string, std::string>>& out_;
  std::vector<std::vector<ShareGptTurn>>* dialogues_;
  std::vector<ShareGptTurn> turns_;  // the current entry's object turns (dialogues only)
  int depth_ = 0;
  bool in_conversations_ = false;
  int num_turns_ = 0;
  std::string entry_key_, turn_key_, prompt_, reply_, error_;
  size_t error_position_ = 0;
};

}  // namespace

Result<ShareGptFile> load_sharegpt_file(const std::string& path, bool keep_all_turns) {
  if (!std::filesystem::is_regular_file(path)) return not_found("ShareGPT dataset: " + path + ": no such file");
  // Parsed from a memory map: nlohmann's FILE* reader goes one getc at a time.
  auto mapped = MappedFile::open(path);
  if (!mapped.is_ok()) return not_found("ShareGPT dataset: " + mapped.status().message());
  const char* begin = reinterpret_cast<const char*>(mapped->data());
  const size_t num_bytes = mapped->size();
  ShareGptFile result;
  ShareGptSax handler(result.conversations, keep_all_turns ? &result.dialogues : nullptr);
  bool ok = false;
  try {
    ok = Json::sax_parse(begin, begin + num_bytes, &handler);
  } catch (const std::exception& e) { return corrupt("ShareGPT dataset: " + path + ": " + e.what()); }
  if (!ok) {
    // An error at the very end of the file is a cut-off copy, not a malformed one.
    if (handler.error_position() + 1 >= num_bytes && !result.conversations.empty()) {
      result.truncated = true;
    } else {
      return corrupt("ShareGPT dataset: " + path + ": " + handler.error());
    }
  }
  if (result.conversations.empty())
    return corrupt("ShareGPT dataset: " + path + ": no entry with two conversation turns");
  return result;
}

int count_prompt_tokens(const Tokenizer& tokenizer, const std::string& text) {
  // vLLM counts tokenizer(text).input_ids: with the special tokens the post-processor adds.
  return static_cast<int>(tokenizer.encode(text, /*parse_special=*/true).size()) + tokenizer.num_added_special_tokens();
}

std::vector<SampleRequest> sample_sharegpt(std::vector<std::pair<std::string, std::string>> conversations,
                                           const Tokenizer& tokenizer, const ShareGptSampling& sampling,
                                           DatasetSummary* summary) {
  {
    PythonRandom rng(sampling.seed);
    rng.shuffle(conversations);
  }
  std::vector<SampleRequest> samples;
  int num_scanned = 0;
  for (auto& [prompt, reply] : conversations) {
    if (static_cast<int>(samples.size()) >= sampling.num_requests) break;
    ++num_scanned;
    const int prompt_len = count_prompt_tokens(tokenizer, prompt);
    const int output_len =
        sampling.fixed_output_len ? *sampling.fixed_output_len : count_prompt_tokens(tokenizer, reply);
    // vLLM's is_valid_sequence with its defaults (min 4, prompt <= 1024, total <= 2048).
    if (prompt_len < 4) continue;
    if (!sampling.fixed_output_len && output_len < 4) continue;
    if (prompt_len > 1024) continue;
    if (prompt_len + output_len > 2048) continue;
    samples.push_back({std::move(prompt), prompt_len, output_len});
  }
  int num_oversampled = 0;
  if (!samples.empty() && static_cast<int>(samples.size()) < sampling.num_requests) {
    PythonRandom rng(sampling.seed);  // vLLM re-seeds before oversampling
    const size_t num_accepted = samples.size();
    while (static_cast<int>(samples.size()) < sampling.num_requests) {
      samples.push_back(samples[rng.choice_index(num_accepted)]);
      ++num_oversampled;
    }
  }
  if (summary) {
    summary->num_entries_scanned = num_scanned;
    summary->num_oversampled = num_oversampled;
  }
  return samples;
}

}  // namespace crosspoint::bench
