#include "cli/calibration_text.h"

#include "bench/bench_options.h"
#include "bench/sharegpt_dataset.h"
#include "common/paths.h"

namespace crosspoint::cli {

Result<std::vector<std::vector<int32_t>>> load_text_samples(const std::string& dataset, const Tokenizer& tokenizer,
                                                            int num_samples, int max_tokens, int min_tokens, int skip,
                                                            bool pack) {
  if (num_samples <= 0 || max_tokens <= 1) return invalid_argument("need at least one sample of at least 2 tokens");
  const std::string path = dataset == "sharegpt" ? bench::default_sharegpt_path() : dataset;
  CROSSPOINT_ASSIGN_OR_RETURN(bench::ShareGptFile file, bench::load_sharegpt_file(path));
  std::vector<std::vector<int32_t>> samples;
  if (pack) {
    std::vector<int32_t> current;
    for (size_t i = static_cast<size_t>(std::max(skip, 0)); i < file.conversations.size(); ++i) {
      const auto& [prompt, reply] = file.conversations[i];
      for (int32_t id : tokenizer.encode(prompt + "\n" + reply + "\n", /*parse_special=*/false)) {
        current.push_back(id);
        if (static_cast<int>(current.size()) == max_tokens) {
          samples.push_back(std::move(current));
          current.clear();
          if (static_cast<int>(samples.size()) == num_samples) return samples;
        }
      }
    }
    return not_found(path + ": " + std::to_string(samples.size()) + " packed samples of " + std::to_string(max_tokens) +
                     " tokens, not the " + std::to_string(num_samples) +
                     " asked for (a larger file, or fewer or shorter samples)");
  }
  for (size_t i = static_cast<size_t>(std::max(skip, 0)); i < file.conversations.size(); ++i) {
    const auto& [prompt, reply] = file.conversations[i];
    std::vector<int32_t> ids = tokenizer.encode(prompt + "\n" + reply, /*parse_special=*/false);
    if (static_cast<int>(ids.size()) < min_tokens) continue;
    if (static_cast<int>(ids.size()) > max_tokens) ids.resize(static_cast<size_t>(max_tokens));
    samples.push_back(std::move(ids));
    if (static_cast<int>(samples.size()) == num_samples) break;
  }
  if (samples.empty())
    return not_found(path + ": no conversation of at least " + std::to_string(min_tokens) + " tokens");
  return samples;
}

}  // namespace crosspoint::cli
