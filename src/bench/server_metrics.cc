#include "bench/server_metrics.h"

#include <algorithm>
#include <cstdlib>
#include <initializer_list>

namespace crosspoint::bench {

std::map<std::string, double> parse_prometheus_text(std::string_view text) {
  std::map<std::string, double> values;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || line.front() == '#') continue;
    size_t name_end = line.find_first_of("{ \t");
    if (name_end == std::string_view::npos) continue;
    const std::string name(line.substr(0, name_end));
    size_t value_start = name_end;
    if (line[name_end] == '{') {
      const size_t close = line.find('}', name_end);  // label values may hold '}' only escaped
      if (close == std::string_view::npos) continue;
      value_start = close + 1;
    }
    const std::string rest(line.substr(value_start));
    char* parse_end = nullptr;
    const double value = std::strtod(rest.c_str(), &parse_end);
    if (parse_end == rest.c_str()) continue;
    values[name] += value;
  }
  return values;
}

namespace {

std::optional<double> first_of(const std::map<std::string, double>& values, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    auto it = values.find(name);
    if (it != values.end()) return it->second;
  }
  return std::nullopt;
}

}  // namespace

ServerMetricsSample reduce_sample(const std::map<std::string, double>& values, double time_s) {
  ServerMetricsSample sample;
  sample.time_s = time_s;
  sample.num_running =
      first_of(values, {"vllm:num_requests_running", "crosspoint:num_requests_running", "sglang:num_running_reqs"});
  sample.num_waiting =
      first_of(values, {"vllm:num_requests_waiting", "crosspoint:num_requests_waiting", "sglang:num_queue_reqs"});
  sample.kv_cache_usage = first_of(values, {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc",
                                            "crosspoint:kv_cache_usage_perc", "sglang:token_usage"});
  sample.num_preemptions =
      first_of(values, {"vllm:num_preemptions_total", "vllm:num_preemptions", "crosspoint:num_preemptions_total"});
  sample.prefix_cache_queries = first_of(values, {"vllm:prefix_cache_queries_total", "vllm:prefix_cache_queries"});
  sample.prefix_cache_hits = first_of(values, {"vllm:prefix_cache_hits_total", "vllm:prefix_cache_hits"});
  return sample;
}

ServerMetricsSummary summarize_server_metrics(const std::vector<ServerMetricsSample>& samples) {
  ServerMetricsSummary summary;
  std::vector<const ServerMetricsSample*> usable;
  for (const auto& s : samples) {
    if (s.num_running) usable.push_back(&s);
  }
  if (usable.empty()) {
    summary.unavailable_reason =
        samples.empty() ? "no /metrics sample was taken" : "/metrics has no running-requests gauge";
    return summary;
  }
  summary.available = true;
  summary.num_samples = static_cast<int>(usable.size());
  double kv_sum = 0;
  int kv_count = 0;
  std::optional<double> first_preemptions, last_preemptions;
  std::optional<double> first_queries, last_queries, first_hits, last_hits;
  for (const ServerMetricsSample* s : usable) {
    summary.mean_running += *s->num_running;
    summary.max_running = std::max(summary.max_running, *s->num_running);
    const double waiting = s->num_waiting.value_or(0);
    summary.mean_waiting += waiting;
    summary.max_waiting = std::max(summary.max_waiting, waiting);
    if (s->kv_cache_usage) {
      kv_sum += *s->kv_cache_usage;
      ++kv_count;
      summary.max_kv_cache_usage = std::max(summary.max_kv_cache_usage.value_or(0), *s->kv_cache_usage);
    }
    if (s->num_preemptions) {
      if (!first_preemptions) first_preemptions = s->num_preemptions;
      last_preemptions = s->num_preemptions;
    }
    if (s->prefix_cache_queries && s->prefix_cache_hits) {
      if (!first_queries) first_queries = s->prefix_cache_queries, first_hits = s->prefix_cache_hits;
      last_queries = s->prefix_cache_queries, last_hits = s->prefix_cache_hits;
    }
  }
  double busy_sum = 0;
  int num_busy = 0;
  for (const ServerMetricsSample* s : usable) {
    if (*s->num_running > 0) busy_sum += *s->num_running, ++num_busy;
  }
  if (num_busy > 0) summary.mean_running_while_busy = busy_sum / num_busy;
  summary.mean_running /= static_cast<double>(usable.size());
  summary.mean_waiting /= static_cast<double>(usable.size());
  if (kv_count > 0) summary.mean_kv_cache_usage = kv_sum / kv_count;
  if (first_preemptions) summary.num_preemptions = *last_preemptions - *first_preemptions;
  if (first_queries) {
    summary.prefix_cache_queries = *last_queries - *first_queries;
    summary.prefix_cache_hits = *last_hits - *first_hits;
    if (*summary.prefix_cache_queries > 0)
      summary.prefix_cache_hit_rate = *summary.prefix_cache_hits / *summary.prefix_cache_queries;
  }
  return summary;
}

}  // namespace crosspoint::bench
