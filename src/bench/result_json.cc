// BenchResult -> JSON with vLLM's key names and order (vllm/benchmarks/serve.py, current),
// then crosspoint's additions under their own names.
#include <cmath>
#include <nlohmann/json.hpp>

#include "bench/bench_result.h"

namespace crosspoint::bench {

namespace {

using OrderedJson = nlohmann::ordered_json;

// Python's json writes inf as Infinity, which strict readers reject; vLLM itself stores the
// request rate as the string "inf".
OrderedJson number_or_inf(double value) {
  if (std::isinf(value)) return "inf";
  return value;
}

void add_metric_keys(OrderedJson& j, const std::string& name, const MetricStats& stats) {
  j["mean_" + name + "_ms"] = stats.mean_ms;
  j["median_" + name + "_ms"] = stats.median_ms;
  j["std_" + name + "_ms"] = stats.std_ms;
  for (const auto& [p, value] : stats.percentiles_ms) j["p" + percentile_key_text(p) + "_" + name + "_ms"] = value;
}

OrderedJson optional_number(const std::optional<double>& value) {
  return value ? OrderedJson(*value) : OrderedJson(nullptr);
}

OrderedJson result_to_json(const BenchResult& r) {
  const BenchMetrics& m = r.metrics;
  OrderedJson j;
  j["date"] = r.date;
  j["endpoint_type"] = r.endpoint_type;
  j["backend"] = r.endpoint_type;
  j["label"] = r.label.empty() ? r.endpoint_type : r.label;
  j["model_id"] = r.model_id;
  j["tokenizer_id"] = r.tokenizer_id;
  j["num_prompts"] = r.num_prompts;
  for (const auto& [key, value] : r.metadata) j[key] = value;
  j["request_rate"] = number_or_inf(r.request_rate);
  j["burstiness"] = number_or_inf(r.burstiness);
  j["max_concurrency"] = r.max_concurrency ? OrderedJson(*r.max_concurrency) : OrderedJson(nullptr);
  if (!r.ramp_up_strategy.empty()) {
    j["ramp_up_strategy"] = r.ramp_up_strategy;
    j["ramp_up_start_rps"] = r.ramp_up_start_rps;
    j["ramp_up_end_rps"] = r.ramp_up_end_rps;
  }
  j["duration"] = r.duration_s;
  j["completed"] = m.completed;
  j["failed"] = m.failed;
  j["total_input_tokens"] = m.total_input_tokens;
  j["total_output_tokens"] = m.total_output_tokens;
  j["request_throughput"] = m.request_throughput;
  j["request_goodput"] = r.goodput.any() ? OrderedJson(m.request_goodput) : OrderedJson(nullptr);
  j["output_throughput"] = m.output_throughput;
  j["total_token_throughput"] = m.total_token_throughput;
  // Per-request lists, as vLLM's --save-detailed (seconds; failed requests keep output 0).
  OrderedJson input_lens = OrderedJson::array(), output_lens = OrderedJson::array(), ttfts = OrderedJson::array(),
              itls = OrderedJson::array(), latencies = OrderedJson::array(), start_times = OrderedJson::array(),
              queue_times = OrderedJson::array(), texts = OrderedJson::array(), errors = OrderedJson::array();
  for (const RequestRecord& rec : r.records) {
    input_lens.push_back(rec.prompt_len);
    output_lens.push_back(rec.success ? rec.output_len : 0);
    ttfts.push_back(rec.ttft_s);
    itls.push_back(rec.itl_s);
    latencies.push_back(rec.latency_s);
    start_times.push_back(rec.start_s);
    queue_times.push_back(rec.queue_time_s());
    texts.push_back(rec.generated_text);
    errors.push_back(rec.error);
  }
  j["input_lens"] = std::move(input_lens);
  j["output_lens"] = std::move(output_lens);
  j["ttfts"] = std::move(ttfts);
  j["itls"] = std::move(itls);
  j["latencies"] = std::move(latencies);
  j["start_times"] = std::move(start_times);
  j["queue_times"] = std::move(queue_times);
  j["generated_texts"] = std::move(texts);
  j["errors"] = std::move(errors);
  j["max_output_tokens_per_s"] = m.max_output_tokens_per_s;
  j["max_concurrent_requests"] = m.max_concurrent_requests;
  j["rtfx"] = 0.0;  // audio only in vLLM
  for (const std::string& name : r.percentile_metrics) {
    if (name == "ttft") add_metric_keys(j, name, m.ttft);
    if (name == "tpot") add_metric_keys(j, name, m.tpot);
    if (name == "itl") add_metric_keys(j, name, m.itl);
    if (name == "e2el") add_metric_keys(j, name, m.e2el);
  }

  // crosspoint's additions.
  j["base_url"] = r.base_url;
  j["endpoint"] = r.endpoint;
  j["percentiles"] = r.percentiles;
  j["goodput_slos_ms"] = {{"ttft", optional_number(r.goodput.ttft_ms)},
                          {"tpot", optional_number(r.goodput.tpot_ms)},
                          {"e2el", optional_number(r.goodput.e2el_ms)}};
  j["good_requests"] = r.goodput.any() ? OrderedJson(m.good_requests) : OrderedJson(nullptr);
  OrderedJson scheduled_times = OrderedJson::array(), arrival_times = OrderedJson::array(),
              is_good = OrderedJson::array(), tpots = OrderedJson::array(), statuses = OrderedJson::array(),
              sources = OrderedJson::array(), expected = OrderedJson::array();
  for (size_t i = 0; i < r.records.size(); ++i) {
    const RequestRecord& rec = r.records[i];
    scheduled_times.push_back(rec.scheduled_s);
    arrival_times.push_back(rec.arrival_s);
    is_good.push_back(static_cast<bool>(m.is_good[i]));
    tpots.push_back(m.tpot_s[i]);
    statuses.push_back(rec.http_status);
    sources.push_back(rec.output_len_source);
    expected.push_back(rec.expected_output_len);
  }
  j["scheduled_arrival_times"] = std::move(scheduled_times);
  j["arrival_times"] = std::move(arrival_times);
  j["tpots"] = std::move(tpots);
  j["request_is_good"] = std::move(is_good);
  j["http_statuses"] = std::move(statuses);
  j["output_len_sources"] = std::move(sources);
  j["expected_output_lens"] = std::move(expected);
  if (!r.turns.empty()) {
    OrderedJson conversation_idxs = OrderedJson::array(), turn_idxs = OrderedJson::array(),
                by_turn = OrderedJson::array();
    for (const RequestRecord& rec : r.records) {
      conversation_idxs.push_back(rec.conversation_idx);
      turn_idxs.push_back(rec.turn_idx);
    }
    for (const TurnStats& t : r.turns) {
      by_turn.push_back({{"turn_idx", t.turn_idx},
                         {"num_requests", t.num_requests},
                         {"mean_input_tokens", t.mean_input_tokens},
                         {"median_ttft_ms", t.median_ttft_ms}});
    }
    j["multi_turn"] = {{"num_conversations", r.num_conversations},
                       {"conversation_idxs", std::move(conversation_idxs)},
                       {"turn_idxs", std::move(turn_idxs)},
                       {"by_turn", std::move(by_turn)}};
  }
  j["concurrency_reached"] = r.load.max_in_flight;
  j["mean_concurrency"] = r.load.mean_in_flight;
  const ClientOverhead& o = r.load.overhead;
  j["client_overhead"] = {{"cpu_s", o.cpu_s},
                          {"cpu_fraction", o.cpu_fraction},
                          {"parse_s", o.parse_s},
                          {"num_chunks", o.num_chunks},
                          {"mean_parse_us_per_chunk", o.mean_parse_us_per_chunk},
                          {"mean_dispatch_lag_ms", o.mean_dispatch_lag_ms},
                          {"max_dispatch_lag_ms", o.max_dispatch_lag_ms}};
  const ServerMetricsSummary& s = r.server;
  OrderedJson server = {{"available", s.available}};
  if (s.available) {
    server["num_samples"] = s.num_samples;
    server["mean_running"] = s.mean_running;
    server["max_running"] = s.max_running;
    server["mean_running_while_busy"] = optional_number(s.mean_running_while_busy);
    server["mean_waiting"] = s.mean_waiting;
    server["max_waiting"] = s.max_waiting;
    server["mean_kv_cache_usage"] = optional_number(s.mean_kv_cache_usage);
    server["max_kv_cache_usage"] = optional_number(s.max_kv_cache_usage);
    server["num_preemptions"] = optional_number(s.num_preemptions);
    server["prefix_cache_queries"] = optional_number(s.prefix_cache_queries);
    server["prefix_cache_hits"] = optional_number(s.prefix_cache_hits);
    server["prefix_cache_hit_rate"] = optional_number(s.prefix_cache_hit_rate);
  } else {
    server["reason"] = r.load.metrics_error.empty() ? s.unavailable_reason : r.load.metrics_error;
  }
  const SteadyStateWindow& w = r.steady;
  OrderedJson steady = {{"valid", w.valid}};
  if (w.valid) {
    steady["start_s"] = w.start_s;
    steady["end_s"] = w.end_s;
    steady["duration_s"] = w.duration_s();
    steady["client_mean_in_flight"] = w.client_mean_in_flight;
    steady["num_server_samples"] = w.num_server_samples;
    steady["steady_mean_running"] = optional_number(w.server_mean_running);
  } else {
    steady["reason"] = w.reason.empty() ? "no concurrency cap" : w.reason;
  }
  OrderedJson samples = OrderedJson::array();
  for (const ServerMetricsSample& sample : r.load.server_samples) {
    samples.push_back({{"time_s", sample.time_s},
                       {"num_running", optional_number(sample.num_running)},
                       {"num_waiting", optional_number(sample.num_waiting)},
                       {"kv_cache_usage", optional_number(sample.kv_cache_usage)},
                       {"num_preemptions", optional_number(sample.num_preemptions)}});
  }
  server["samples"] = std::move(samples);
  j["server_metrics"] = std::move(server);
  const GpuEnergySummary& e = r.gpu_energy;
  OrderedJson energy = {{"measured", e.measured}};
  if (e.measured) {
    energy["devices"] = e.devices;
    energy["joules"] = e.joules;
    energy["joules_per_request"] = e.joules_per_request;
    energy["joules_per_output_token"] = e.joules_per_output_token;
    energy["mean_watts"] = e.mean_watts;
  } else {
    energy["note"] = e.note;
  }
  j["gpu_energy"] = std::move(energy);
  j["steady_state"] = std::move(steady);
  j["dataset"] = {{"name", r.dataset.name},
                  {"path", r.dataset.path},
                  {"num_requests", r.dataset.num_requests},
                  {"mean_input_tokens", r.dataset.mean_input_tokens},
                  {"mean_output_tokens", r.dataset.mean_output_tokens},
                  {"num_entries_scanned", r.dataset.num_entries_scanned},
                  {"num_oversampled", r.dataset.num_oversampled},
                  {"num_entries_in_file", r.dataset.num_entries_in_file},
                  {"file_truncated", r.dataset.file_truncated}};
  return j;
}

}  // namespace

std::string result_to_json_text(const BenchResult& r) {
  return result_to_json(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string result_to_json_line(const BenchResult& r, bool detailed) {
  OrderedJson j = result_to_json(r);
  if (!detailed) {
    for (const char* key : {"input_lens", "output_lens", "start_times", "ttfts", "itls", "generated_texts", "errors",
                            "scheduled_arrival_times", "arrival_times", "tpots", "request_is_good", "http_statuses",
                            "output_len_sources", "expected_output_lens"})
      j.erase(key);
    if (j.contains("multi_turn")) {
      j["multi_turn"].erase("conversation_idxs");
      j["multi_turn"].erase("turn_idxs");
    }
    if (j.contains("server_metrics")) j["server_metrics"].erase("samples");
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace crosspoint::bench
