#include "bench/sonnet_dataset.h"

#include <algorithm>
#include <cmath>

#include "bench/custom_dataset.h"
#include "bench/python_random.h"
#include "common/mapped_file.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint::bench {

namespace {

constexpr const char* kBasePrompt = "Pick as many lines as you can from these poem lines:\n";

// Python's round(): halves to even (the default rounding mode of nearbyint).
int python_round(double value) { return static_cast<int>(std::nearbyint(value)); }

}  // namespace

Result<std::vector<std::string>> load_poem_lines(const std::string& path) {
  Result<std::string> text = read_text_file(path);
  if (!text.is_ok()) return Status(text.status().code(), "sonnet dataset: " + text.status().message());
  // Python's readlines(): each line keeps its '\n', a last line without one stays as it is.
  std::vector<std::string> lines;
  for (size_t start = 0; start < text->size();) {
    const size_t end = std::min(text->find('\n', start), text->size() - 1) + 1;
    lines.push_back(text->substr(start, end - start));
    start = end;
  }
  if (lines.empty()) return invalid_argument("sonnet dataset: " + path + ": empty");
  return lines;
}

Result<std::vector<SampleRequest>> sample_sonnet(const std::vector<std::string>& lines, const Tokenizer& tokenizer,
                                                 const ChatTemplate& chat_template, const SonnetSampling& s) {
  double total = 0;
  for (const std::string& line : lines) total += count_prompt_tokens(tokenizer, line);
  const double avg_len = total / static_cast<double>(lines.size());
  CROSSPOINT_ASSIGN_OR_RETURN(std::string base_formatted, render_user_prompt(chat_template, kBasePrompt));
  const int base_offset = count_prompt_tokens(tokenizer, base_formatted);
  if (s.input_len <= base_offset)
    return invalid_argument("--sonnet-input-len " + std::to_string(s.input_len) +
                            ": must exceed the base prompt's length in the chat template (" +
                            std::to_string(base_offset) + " tokens)");
  const int num_input_lines = python_round((s.input_len - base_offset) / avg_len);
  const int num_prefix_lines = std::max(python_round((s.prefix_len - base_offset) / avg_len), 0);
  std::string prefix = kBasePrompt;
  for (int i = 0; i < std::min<int>(num_prefix_lines, static_cast<int>(lines.size())); ++i) prefix += lines[i];

  PythonRandom rng(s.seed);
  std::vector<SampleRequest> samples;
  const long max_draws = 100L * s.num_requests + 1000;
  for (long draw = 0; static_cast<int>(samples.size()) < s.num_requests; ++draw) {
    if (draw == max_draws)
      return invalid_argument("sonnet dataset: no draw of " + std::to_string(num_input_lines) +
                              " lines fits --sonnet-input-len " + std::to_string(s.input_len) + " tokens");
    std::string prompt = prefix;
    for (int k = 0; k < num_input_lines - num_prefix_lines; ++k)
      prompt += lines[static_cast<size_t>(std::floor(rng.random() * static_cast<double>(lines.size())))];
    CROSSPOINT_ASSIGN_OR_RETURN(std::string formatted, render_user_prompt(chat_template, prompt));
    const int prompt_len = count_prompt_tokens(tokenizer, formatted);
    if (prompt_len > s.input_len) continue;
    SampleRequest sample;
    sample.prompt = s.send_formatted ? formatted : prompt;
    sample.prompt_len = prompt_len;
    sample.expected_output_len = s.output_len;
    samples.push_back(std::move(sample));
  }
  return samples;
}

}  // namespace crosspoint::bench
