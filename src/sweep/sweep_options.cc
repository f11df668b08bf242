#include "sweep/sweep_options.h"

#include "sweep/engine.h"

#include <algorithm>
#include <map>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "analysis/hardware_table.h"
#include "sweep/harness_quality.h"

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

bool parse_positive_int(const std::string& text, int& value) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && ptr == text.data() + text.size() && value > 0;
}

// The quantization_config of DIR/config.json as "quant_method" or "quant_method/format"
// ("compressed-tensors/pack-quantized"), "" when there is none, or an error naming the file.
Result<std::string> checkpoint_quant_method(const std::string& dir, const std::string& option) {
  const std::string path = dir + "/config.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(option + ": " + path + ": no such file");
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json config = nlohmann::json::parse(text.str(), nullptr, false);
  if (!config.is_object()) return corrupt(option + ": " + path + ": not a JSON object");
  auto q = config.find("quantization_config");
  if (q == config.end() || !q->is_object()) return std::string();
  auto method = q->find("quant_method");
  if (method == q->end() || !method->is_string()) return std::string("?");
  auto format = q->find("format");
  if (*method == "compressed-tensors" && format != q->end() && format->is_string())
    return method->get<std::string>() + "/" + format->get<std::string>();
  return method->get<std::string>();
}

}  // namespace

Status parse_num_prompts(const std::string& num_prompts_text, const std::string& concurrency_text,
                         SweepOptions& options) {
  const std::vector<std::string> counts = split_commas(num_prompts_text);
  std::vector<int> values;
  for (const std::string& item : counts) {
    int value = 0;
    if (!parse_positive_int(item, value)) {
      return invalid_argument("--num-prompts: '" + item + "' is not a positive integer");
    }
    values.push_back(value);
  }
  if (values.empty()) return invalid_argument("--num-prompts: empty");
  options.num_prompts_by_level.clear();
  if (values.size() == 1) {
    options.num_prompts = values[0];
    return Status::ok();
  }
  const std::vector<std::string> levels = split_commas(concurrency_text);
  if (levels.size() != values.size()) {
    return invalid_argument("--num-prompts: " + std::to_string(values.size()) + " values for " +
                            std::to_string(levels.size()) +
                            " --concurrency levels (give one number, or one per level in the same order)");
  }
  for (size_t i = 0; i < levels.size(); ++i) {
    int level = 0;
    if (!parse_positive_int(levels[i], level)) {
      return invalid_argument("--concurrency: '" + levels[i] + "' is not an integer in 1..100000");
    }
    auto [it, inserted] = options.num_prompts_by_level.emplace(level, values[i]);
    if (!inserted && it->second != values[i]) {
      return invalid_argument("--num-prompts: concurrency " + levels[i] + " is given two different counts");
    }
  }
  // The single number stays what the largest level asks for (used by the report's source line).
  options.num_prompts = options.num_prompts_by_level.rbegin()->second;
  return Status::ok();
}

int num_prompts_for_level(const SweepOptions& options, int concurrency) {
  if (options.num_prompts_by_level.empty()) return options.num_prompts;
  auto it = options.num_prompts_by_level.lower_bound(concurrency);
  if (it == options.num_prompts_by_level.end()) return options.num_prompts_by_level.rbegin()->second;
  return it->second;
}

Status parse_precision_model(const std::string& text, SweepOptions& options) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return invalid_argument("--precision-model: '" + text + "' is not PRECISION=DIR (e.g. w4a16=/models/qwen-gptq)");
  }
  const std::string precision = text.substr(0, eq);
  if (precision == "fp16") {
    return invalid_argument("--precision-model: fp16 is served from --model; give the FP16 directory there");
  }
  if (precision != "w8a8-fp8" && precision != "w8a8-int8" && precision != "w4a16") {
    return invalid_argument("--precision-model: unknown precision '" + precision + "' (w8a8-fp8, w8a8-int8 or w4a16)");
  }
  if (options.precision_models.count(precision)) {
    return invalid_argument("--precision-model: " + precision + " given twice");
  }
  options.precision_models[precision] = text.substr(eq + 1);
  return Status::ok();
}

Result<std::vector<std::string>> parse_precision_list(const std::string& text) {
  static const std::vector<std::string> kKnown = {"fp16", "w8a8-fp8", "w8a8-int8", "w4a16"};
  std::vector<std::string> precisions;
  for (const std::string& item : split_commas(text)) {
    if (std::find(kKnown.begin(), kKnown.end(), item) == kKnown.end()) {
      return invalid_argument("--precisions: unknown precision '" + item +
                              "' (known: fp16, w8a8-fp8, w8a8-int8, w4a16)");
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
  // --report-only starts no child, so it needs no executable.
  if (!o.report_only && (o.crosspoint_exe.empty() || !fs::is_regular_file(o.crosspoint_exe))) {
    return invalid_argument("crosspoint executable not found: '" + o.crosspoint_exe + "'");
  }
  if (o.precisions.empty()) return invalid_argument("--precisions: empty list");
  CROSSPOINT_RETURN_IF_ERROR(parse_engine(o.engine).status());
  if (o.engine != "crosspoint" || !o.serve_cmd.empty()) {
    // Other servers serve one model file per precision, with their own KV cache and prefix cache.
    if (o.kv_cache_dtypes != std::vector<std::string>{"auto"} ||
        o.prefix_caching != std::vector<std::string>{"default"} || o.tensor_parallel_sizes != std::vector<int>{1}) {
      return invalid_argument(
          "--kv-cache-dtypes, --prefix-caching and --tensor-parallel-sizes apply to --engine crosspoint only");
    }
  }
  if (!o.serve_cmd.empty() && o.engine != "crosspoint")
    return invalid_argument("--serve-cmd and --engine " + o.engine + ": give one of them");
  if (!o.engine_exe.empty() && o.engine != "vllm" && o.engine != "sglang")
    return invalid_argument("--engine-exe applies to --engine vllm and sglang");
  if (!o.gguf.empty()) {
    if (o.engine != "llama.cpp" || !o.serve_cmd.empty())
      return invalid_argument("--gguf applies to --engine llama.cpp");
    if (!fs::is_regular_file(o.gguf)) return not_found("--gguf " + o.gguf + ": no such file");
  }
  if (!o.serve_cmd.empty()) {
    for (const std::string& precision : o.precisions) {
      if (precision != "fp16" && !o.precision_models.count(precision))
        return invalid_argument("--serve-cmd: " + precision + " needs --precision-model " + precision + "=PATH");
    }
  }
  if (o.kv_cache_dtypes.empty()) return invalid_argument("--kv-cache-dtypes: empty list");
  for (size_t i = 0; i < o.kv_cache_dtypes.size(); ++i) {
    const std::string& kv = o.kv_cache_dtypes[i];
    if (kv != "auto" && kv != "fp8") return invalid_argument("--kv-cache-dtypes: '" + kv + "' (auto or fp8)");
    if (std::find(o.kv_cache_dtypes.begin(), o.kv_cache_dtypes.begin() + i, kv) != o.kv_cache_dtypes.begin() + i)
      return invalid_argument("--kv-cache-dtypes: '" + kv + "' given twice");
  }
  if (o.tensor_parallel_sizes.empty()) return invalid_argument("--tensor-parallel-sizes: empty list");
  for (size_t i = 0; i < o.tensor_parallel_sizes.size(); ++i) {
    const int tp = o.tensor_parallel_sizes[i];
    if (tp < 1 || tp > 1024) return invalid_argument("--tensor-parallel-sizes: " + std::to_string(tp) + " (1 to 1024)");
    if (std::find(o.tensor_parallel_sizes.begin(), o.tensor_parallel_sizes.begin() + i, tp) !=
        o.tensor_parallel_sizes.begin() + i)
      return invalid_argument("--tensor-parallel-sizes: " + std::to_string(tp) + " given twice");
  }
  if (o.concurrency.empty()) return invalid_argument("--concurrency: empty list");
  if (o.num_prompts < 1) return invalid_argument("--num-prompts must be at least 1");
  for (const auto& [level, count] : o.num_prompts_by_level) {
    if (count < 1)
      return invalid_argument("--num-prompts must be at least 1 (concurrency " + std::to_string(level) + ")");
    if (std::find(o.concurrency.begin(), o.concurrency.end(), level) == o.concurrency.end()) {
      return invalid_argument("--num-prompts: concurrency " + std::to_string(level) + " is not in --concurrency");
    }
  }
  if (o.dataset != "sharegpt" && o.dataset != "random" && o.dataset != "prefix_repetition") {
    return invalid_argument("--dataset: '" + o.dataset + "' (sharegpt, random or prefix_repetition)");
  }
  if (o.prefix_len < 1 || o.suffix_len < 1 || o.num_prefixes < 1)
    return invalid_argument("--prefix-len, --suffix-len and --num-prefixes must be positive");
  if (o.prefix_caching.empty()) return invalid_argument("--prefix-caching: empty list");
  for (size_t i = 0; i < o.prefix_caching.size(); ++i) {
    const std::string& mode = o.prefix_caching[i];
    if (mode != "on" && mode != "off" && mode != "default")
      return invalid_argument("--prefix-caching: '" + mode + "' (on or off)");
    if (std::find(o.prefix_caching.begin(), o.prefix_caching.begin() + i, mode) != o.prefix_caching.begin() + i)
      return invalid_argument("--prefix-caching: '" + mode + "' given twice");
  }
  if (!o.dataset_path.empty() && !fs::is_regular_file(o.dataset_path)) {
    return not_found("--dataset-path: " + o.dataset_path + ": no such file");
  }
  if (o.output_len < 0) return invalid_argument("--output-len must be 0 (the dataset's) or positive");
  if (o.device != "auto" && o.device != "cpu" && o.device != "cuda") {
    return invalid_argument("--device: '" + o.device + "' (auto, cpu or cuda)");
  }
  if (!(o.gpu_memory_utilization > 0 && o.gpu_memory_utilization <= 1)) {
    return invalid_argument("--gpu-memory-utilization must be in (0, 1]");
  }
  for (const auto& [precision, file] : o.harness_results) {
    const std::string option = "--harness-results " + precision + "=" + file;
    std::ifstream in(file);
    if (!in) return not_found(option + ": no such file");
    const nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) return invalid_argument(option + ": not JSON");
    CROSSPOINT_RETURN_IF_ERROR(harness_scores_from_json(json, option).status());
  }
  if (!o.hardware.empty()) {
    if (auto entry = analysis::find_datasheet(o.hardware); !entry.is_ok()) {
      return invalid_argument("--hardware: " + entry.status().message());
    }
  }
  if (!o.ceilings_path.empty() && !fs::is_regular_file(o.ceilings_path)) {
    return not_found("--ceilings: " + o.ceilings_path + ": no such file");
  }
  for (const auto& [precision, dir] : o.precision_models) {
    const std::string option = "--precision-model " + precision + "=" + dir;
    if (std::find(o.precisions.begin(), o.precisions.end(), precision) == o.precisions.end()) {
      return invalid_argument(option + ": " + precision + " is not in --precisions");
    }
    // Other engines' model files are theirs: a GGUF for llama.cpp, anything for --serve-cmd.
    if (o.engine == "llama.cpp" && o.serve_cmd.empty()) {
      if (!fs::is_regular_file(dir)) return not_found(option + ": no such GGUF file");
      continue;
    }
    if (!o.serve_cmd.empty()) continue;
    CROSSPOINT_ASSIGN_OR_RETURN(std::string method, checkpoint_quant_method(dir, option));
    // The layouts each precision loads from (docs/formats.md, "Quantised checkpoints").
    static const std::map<std::string, std::vector<std::string>> kLayouts = {
        {"w4a16", {"gptq", "awq", "compressed-tensors/pack-quantized"}},
        {"w8a8-fp8", {"compressed-tensors/float-quantized", "fp8"}},
        {"w8a8-int8", {"compressed-tensors/int-quantized"}}};
    const std::vector<std::string>& layouts = kLayouts.at(precision);
    if (std::find(layouts.begin(), layouts.end(), method) == layouts.end()) {
      std::string expected;
      for (const std::string& layout : layouts) expected += (expected.empty() ? "'" : ", '") + layout + "'";
      return invalid_argument(option + ": config.json's quantization_config is '" + method + "', expected " + expected);
    }
  }
  if (o.random_input_len < 0) return invalid_argument("--random-input-len must be 0 (bench's default) or positive");
  if (o.bisect_resolution < 1) return invalid_argument("--bisect-resolution must be at least 1");
  if (o.max_bisect_runs < 0) return invalid_argument("--max-bisect-runs must be 0 or more");
  if (o.out_dir.empty()) return invalid_argument("--out: empty");
  if (o.quant_method != "gptq" && o.quant_method != "rtn") return invalid_argument("--quant-method: gptq or rtn");
  if (o.quant_calib_samples < 1 || o.eval_samples < 0 || o.eval_max_tokens < 2) {
    return invalid_argument("--quant-calib-samples must be >= 1, --eval-samples >= 0, --eval-max-tokens >= 2");
  }
  if (o.max_model_len < 16) return invalid_argument("--max-model-len must be at least 16");
  if (o.max_num_seqs < 0) return invalid_argument("--max-num-seqs must be 0 (serve's default) or positive");
  if (o.threads < 0) return invalid_argument("--threads must be 0 (all cores) or positive");
  if (o.repeats < 1 || o.repeats > 100) return invalid_argument("--repeats must be in 1..100");
  if (std::isnan(o.time_budget_s)) return invalid_argument("--time-budget must be a number of seconds");
  if (o.max_runs_per_cell < o.repeats) return invalid_argument("--max-runs-per-cell must be at least --repeats");
  if (o.rerun_interfered < 0 || o.rerun_interfered > 10) return invalid_argument("--rerun-interfered must be in 0..10");
  return Status::ok();
}

}  // namespace crosspoint::sweep
