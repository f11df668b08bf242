#include "bench/pytorch_benchmark_format.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "bench/vllm_bench_flags.h"

namespace crosspoint::bench {
namespace {

using OrderedJson = nlohmann::ordered_json;

constexpr const char* kHeadlineMetrics[] = {"median_ttft_ms", "mean_ttft_ms",   "std_ttft_ms", "p99_ttft_ms",
                                            "mean_tpot_ms",   "median_tpot_ms", "std_tpot_ms", "p99_tpot_ms",
                                            "median_itl_ms",  "mean_itl_ms",    "std_itl_ms",  "p99_itl_ms"};
constexpr const char* kIgnoredKeys[] = {"ttfts", "itls", "generated_texts", "errors"};

template <typename T>
OrderedJson optional_value(const std::optional<T>& v) {
  return v ? OrderedJson(*v) : OrderedJson(nullptr);
}

// Python's json writes an infinite float as Infinity; vLLM's encoder writes "inf" instead.
OrderedJson finite_or_inf(double v) { return std::isinf(v) ? OrderedJson(v > 0 ? "inf" : "-inf") : OrderedJson(v); }

OrderedJson strings_or_null(const std::vector<std::pair<std::string, std::string>>& items) {
  if (items.empty()) return nullptr;
  OrderedJson out = OrderedJson::array();
  for (const auto& [key, value] : items) out.push_back(key + "=" + value);
  return out;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace

bool pytorch_benchmark_format_requested() {
  const char* value = std::getenv(kPytorchBenchmarkFormatEnv);
  return value != nullptr && value[0] != '\0';
}

OrderedJson vllm_args_namespace(const BenchOptions& o) {
  OrderedJson args;
  args["backend"] = o.backend;
  args["base_url"] = o.base_url;
  args["endpoint"] = o.endpoint;
  args["header"] = o.headers.empty() ? OrderedJson(nullptr) : OrderedJson("<redacted>");
  args["max_concurrency"] = optional_value(o.max_concurrency);
  args["model"] = o.model;
  args["served_model_name"] = o.served_model_name.empty() ? OrderedJson(nullptr) : OrderedJson(o.served_model_name);
  args["tokenizer"] = o.tokenizer_dir.empty() ? OrderedJson(nullptr) : OrderedJson(o.tokenizer_dir);
  args["dataset_name"] = o.dataset_name;
  args["dataset_path"] = o.dataset_path.empty() ? OrderedJson(nullptr) : OrderedJson(o.dataset_path);
  args["num_prompts"] = o.num_prompts;
  args["request_rate"] = finite_or_inf(o.request_rate);
  args["burstiness"] = o.burstiness;
  args["ramp_up_strategy"] = o.ramp_up_strategy.empty() ? OrderedJson(nullptr) : OrderedJson(o.ramp_up_strategy);
  args["ramp_up_start_rps"] = optional_value(o.ramp_up_start_rps);
  args["ramp_up_end_rps"] = optional_value(o.ramp_up_end_rps);
  args["seed"] = o.seed;
  args["logprobs"] = optional_value(o.logprobs);
  args["ignore_eos"] = o.ignore_eos;
  args["percentile_metrics"] = join(o.percentile_metrics);
  std::vector<std::string> percentiles;
  for (double p : o.metric_percentiles)  // as typed: "99", "99.9"
    percentiles.push_back(p == std::floor(p) ? std::to_string(static_cast<int>(p)) : python_float_text(p));
  args["metric_percentiles"] = join(percentiles);
  args["num_warmups"] = o.num_warmups;
  args["save_result"] = o.save_result;
  args["save_detailed"] = o.save_detailed;
  args["append_result"] = o.append_result;
  args["metadata"] = strings_or_null(o.metadata);
  args["result_dir"] = o.result_dir.empty() ? OrderedJson(nullptr) : OrderedJson(o.result_dir);
  args["result_filename"] = o.result_filename.empty() ? OrderedJson(nullptr) : OrderedJson(o.result_filename);
  args["request_id_prefix"] = o.request_id_prefix;
  args["label"] = o.label.empty() ? OrderedJson(nullptr) : OrderedJson(o.label);
  args["top_p"] = optional_value(o.sampling.top_p);
  args["top_k"] = optional_value(o.sampling.top_k);
  args["min_p"] = optional_value(o.sampling.min_p);
  args["temperature"] = optional_value(o.temperature ? o.temperature : o.sampling.temperature);
  args["frequency_penalty"] = optional_value(o.sampling.frequency_penalty);
  args["presence_penalty"] = optional_value(o.sampling.presence_penalty);
  args["repetition_penalty"] = optional_value(o.sampling.repetition_penalty);
  args["random_input_len"] = o.random_input_len;
  args["random_output_len"] = o.random_output_len;
  args["random_range_ratio"] = o.random_range_ratio;
  args["sharegpt_output_len"] = optional_value(o.sharegpt_output_len);
  args["custom_output_len"] = o.custom_output_len;
  args["sonnet_input_len"] = o.sonnet_input_len;
  args["sonnet_output_len"] = o.sonnet_output_len;
  args["sonnet_prefix_len"] = o.sonnet_prefix_len;
  args["prefix_repetition_prefix_len"] = o.prefix_repetition_prefix_len;
  args["prefix_repetition_suffix_len"] = o.prefix_repetition_suffix_len;
  args["prefix_repetition_num_prefixes"] = o.prefix_repetition_num_prefixes;
  args["prefix_repetition_output_len"] = o.prefix_repetition_output_len;
  args["disable_tqdm"] = o.disable_progress;
  return args;
}

OrderedJson pytorch_benchmark_records(const BenchOptions& o, const OrderedJson& result) {
  const auto is_metric = [](const std::string& key) {
    return std::find_if(std::begin(kHeadlineMetrics), std::end(kHeadlineMetrics),
                        [&](const char* m) { return key == m; }) != std::end(kHeadlineMetrics);
  };
  const auto is_ignored = [](const std::string& key) {
    return std::find_if(std::begin(kIgnoredKeys), std::end(kIgnoredKeys), [&](const char* m) { return key == m; }) !=
           std::end(kIgnoredKeys);
  };
  OrderedJson extra_info = OrderedJson::object();
  for (const auto& [key, value] : result.items())
    if (!is_metric(key) && !is_ignored(key)) extra_info[key] = value;
  OrderedJson args = vllm_args_namespace(o);
  // vLLM keeps a tensor_parallel_size given as --metadata when its own arguments have none.
  if (extra_info.contains("tensor_parallel_size")) args["tensor_parallel_size"] = extra_info["tensor_parallel_size"];
  const OrderedJson model_name = result.contains("model_id") ? result["model_id"] : OrderedJson(o.model);
  OrderedJson records = OrderedJson::array();
  for (const char* metric : kHeadlineMetrics) {
    if (!result.contains(metric)) continue;
    OrderedJson record;
    record["benchmark"] = {{"name", "vLLM benchmark"}, {"extra_info", {{"args", args}}}};
    record["model"] = {{"name", model_name}};
    record["metric"] = {
        {"name", metric}, {"benchmark_values", OrderedJson::array({result[metric]})}, {"extra_info", extra_info}};
    records.push_back(std::move(record));
  }
  return records;
}

std::string pytorch_benchmark_path(const std::string& result_path) {
  // Python's os.path.splitext: the extension starts at the last dot of the last component,
  // unless that dot leads the component.
  const size_t slash = result_path.find_last_of('/');
  const size_t base = slash == std::string::npos ? 0 : slash + 1;
  size_t dot = result_path.find_last_of('.');
  if (dot == std::string::npos || dot < base) return result_path + ".pytorch.json";
  size_t first = base;
  while (first < result_path.size() && result_path[first] == '.') ++first;
  if (dot < first) return result_path + ".pytorch.json";
  return result_path.substr(0, dot) + ".pytorch.json";
}

Result<std::string> save_pytorch_benchmark_format(const BenchOptions& o, const OrderedJson& result,
                                                  const std::string& result_path) {
  const OrderedJson records = pytorch_benchmark_records(o, result);
  const std::string path = pytorch_benchmark_path(result_path);
  if (records.empty()) return std::string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return io_error("pytorch benchmark file: " + path + ": cannot open for writing");
  out << records.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (!out) return io_error("pytorch benchmark file: " + path + ": write failed");
  return path;
}

}  // namespace crosspoint::bench
