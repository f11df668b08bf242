#include "sweep/sweep_options.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <sstream>

namespace crosspoint::sweep {
namespace {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    items.push_back(item);
  }
  return items;
}

bool parse_positive_number(const std::string& text, double& value) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end && value > 0;
}

}  // namespace

Result<std::vector<std::string>> parse_precision_list(const std::string& text) {
  static const std::vector<std::string> kKnown = {"fp16", "w8a8-fp8", "w4a16"};
  std::vector<std::string> precisions;
  for (const std::string& item : split_commas(text)) {
    if (std::find(kKnown.begin(), kKnown.end(), item) == kKnown.end()) {
      return invalid_argument("--precisions: unknown precision '" + item + "' (known: fp16, w8a8-fp8, w4a16)");
    }
    if (std::find(precisions.begin(), precisions.end(), item) != precisions.end()) {
      return invalid_argument("--precisions: '" + item + "' given twice");
    }
    precisions.push_back(item);
  }
  if (precisions.empty()) return invalid_argument("--precisions: empty list");
  return precisions;
}

Result<std::vector<int>> parse_concurrency_list(const std::string& text) {
  std::vector<int> levels;
  for (const std::string& item : split_commas(text)) {
    int value = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (ec != std::errc() || ptr != item.data() + item.size() || value < 1 || value > 100000) {
      return invalid_argument("--concurrency: '" + item + "' is not an integer in 1..100000");
    }
    levels.push_back(value);
  }
  if (levels.empty()) return invalid_argument("--concurrency: empty list");
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  return levels;
}

Status parse_slo(const std::string& text, SweepOptions& options) {
  for (const std::string& item : split_commas(text)) {
    const size_t colon = item.find(':');
    double value = 0;
    if (colon == std::string::npos || !parse_positive_number(item.substr(colon + 1), value)) {
      return invalid_argument("--slo: '" + item + "' is not METRIC:MS with a positive number (e.g. ttft:500,tpot:50)");
    }
    const std::string metric = item.substr(0, colon);
    if (metric == "ttft") {
      options.slo_ttft_ms = value;
    } else if (metric == "tpot") {
      options.slo_tpot_ms = value;
    } else {
      return invalid_argument("--slo: unknown metric '" + metric + "' (ttft or tpot)");
    }
  }
  return Status::ok();
}

Status validate_sweep_options(const SweepOptions& o) {
  namespace fs = std::filesystem;
  if (o.crosspoint_exe.empty() || !fs::is_regular_file(o.crosspoint_exe)) {
    return invalid_argument("crosspoint executable not found: '" + o.crosspoint_exe + "'");
  }
  if (o.precisions.empty()) return invalid_argument("--precisions: empty list");
  if (o.concurrency.empty()) return invalid_argument("--concurrency: empty list");
  if (o.num_prompts < 1) return invalid_argument("--num-prompts must be at least 1");
  if (o.dataset != "sharegpt" && o.dataset != "random") {
    return invalid_argument("--dataset: '" + o.dataset + "' (sharegpt or random)");
  }
  if (!o.dataset_path.empty() && !fs::is_regular_file(o.dataset_path)) {
    return not_found("--dataset-path: " + o.dataset_path + ": no such file");
  }
  if (o.output_len < 0) return invalid_argument("--output-len must be 0 (the dataset's) or positive");
  if (o.device == "cuda") {
    return invalid_argument("--device cuda: this build serves on the CPU only (crosspoint serve has no CUDA path yet)");
  }
  if (o.device != "auto" && o.device != "cpu") return invalid_argument("--device: '" + o.device + "' (auto, cpu or cuda)");
  if (o.bisect_resolution < 1) return invalid_argument("--bisect-resolution must be at least 1");
  if (o.max_bisect_runs < 0) return invalid_argument("--max-bisect-runs must be 0 or more");
  if (o.out_dir.empty()) return invalid_argument("--out: empty");
  if (o.quant_method != "gptq" && o.quant_method != "rtn") return invalid_argument("--quant-method: gptq or rtn");
  if (o.quant_calib_samples < 1 || o.eval_samples < 0 || o.eval_max_tokens < 2) {
    return invalid_argument("--quant-calib-samples must be >= 1, --eval-samples >= 0, --eval-max-tokens >= 2");
  }
  if (o.max_model_len < 16) return invalid_argument("--max-model-len must be at least 16");
  if (o.threads < 0) return invalid_argument("--threads must be 0 (all cores) or positive");
  return Status::ok();
}

}  // namespace crosspoint::sweep
