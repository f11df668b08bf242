#include "bench/custom_dataset.h"

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "bench/python_random.h"
#include "bench/sharegpt_dataset.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint::bench {

Result<std::string> render_user_prompt(const ChatTemplate& chat_template, const std::string& prompt) {
  ChatRenderOptions options;
  options.add_generation_prompt = true;
  return apply_chat_template(chat_template, {{"user", prompt}}, options);
}

Result<std::vector<std::string>> load_custom_prompts(const std::string& path) {
  if (path.size() < 6 || path.compare(path.size() - 6, 6, ".jsonl") != 0)
    return invalid_argument("custom dataset: " + path + ": only JSONL files (*.jsonl) are read, as vLLM's");
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("custom dataset: " + path + ": cannot open");
  std::vector<std::string> prompts;
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto row = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    const std::string where = "custom dataset: " + path + ":" + std::to_string(line_number);
    if (row.is_discarded() || !row.is_object()) return invalid_argument(where + ": not a JSON object");
    if (!row.contains("prompt") || !row["prompt"].is_string())
      return invalid_argument(where + ": no \"prompt\" string (each line needs one)");
    prompts.push_back(row["prompt"].get<std::string>());
  }
  if (prompts.empty()) return invalid_argument("custom dataset: " + path + ": no prompts");
  return prompts;
}

Result<std::vector<SampleRequest>> sample_custom(std::vector<std::string> prompts, const Tokenizer& tokenizer,
                                                 const ChatTemplate& chat_template, const CustomSampling& s) {
  if (!s.disable_shuffle) {
    PythonRandom rng(s.seed);
    rng.shuffle(prompts);
  }
  std::vector<SampleRequest> samples;
  for (const std::string& text : prompts) {
    if (static_cast<int>(samples.size()) >= s.num_requests) break;
    SampleRequest sample;
    if (s.skip_chat_template) {
      sample.prompt = text;
    } else {
      CROSSPOINT_ASSIGN_OR_RETURN(sample.prompt, render_user_prompt(chat_template, text));
    }
    sample.prompt_len = count_prompt_tokens(tokenizer, sample.prompt);
    sample.expected_output_len = s.output_len;
    samples.push_back(std::move(sample));
  }
  if (!s.no_oversample && static_cast<int>(samples.size()) < s.num_requests) {
    // random.seed(seed); random.choices(samples, k=missing): floor(random() * n) each.
    PythonRandom rng(s.seed);
    const size_t n = samples.size();
    const int missing = s.num_requests - static_cast<int>(n);
    for (int k = 0; k < missing; ++k) samples.push_back(samples[static_cast<size_t>(std::floor(rng.random() * n))]);
  }
  return samples;
}

}  // namespace crosspoint::bench
