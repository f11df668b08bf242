#include "server/prometheus_metrics.h"

#include <fmt/format.h>

namespace crosspoint {
namespace {

class Writer {
 public:
  explicit Writer(const std::string& model_name)
      : labels_(fmt::format("model_name=\"{}\",engine=\"0\"", escape(model_name))) {}

  void gauge(const char* name, const char* help, double value) {
    header(name, help, "gauge");
    out_ += fmt::format("{}{{{}}} {}\n", name, labels_, number(value));
  }
  // name without the _total suffix, as prometheus_client declares counters.
  void counter(const char* name, const char* help, double value) {
    header(name, help, "counter");
    out_ += fmt::format("{}_total{{{}}} {}\n", name, labels_, number(value));
  }
  void counter_family_header(const char* name, const char* help) { header(name, help, "counter"); }
  void counter_sample(const char* name, const std::string& extra_label, double value) {
    out_ += fmt::format("{}_total{{{},{}}} {}\n", name, labels_, extra_label, number(value));
  }
  void histogram(const char* name, const char* help, const Histogram& h) {
    header(name, help, "histogram");
    for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
      out_ +=
          fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels_, number(h.upper_bounds[i]), h.bucket_counts[i]);
    }
    out_ += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels_, h.count);
    out_ += fmt::format("{}_sum{{{}}} {}\n", name, labels_, number(h.sum));
    out_ += fmt::format("{}_count{{{}}} {}\n", name, labels_, h.count);
  }
  std::string take() { return std::move(out_); }

 private:
  void header(const char* name, const char* help, const char* type) {
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  static std::string number(double v) {
    std::string s = fmt::format("{}", v);
    return s;
  }
  static std::string escape(const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c == '\\' || c == '"') out += '\\';
      if (c == '\n') {
        out += "\\n";
        continue;
      }
      out += c;
    }
    return out;
  }
  std::string labels_;
  std::string out_;
};

}  // namespace

std::string prometheus_text(const EngineMetrics& m, const std::string& model_name) {
  Writer w(model_name);
  w.gauge("vllm:num_requests_running", "Number of requests in model execution batches.", m.num_requests_running);
  w.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", m.num_requests_waiting);
  w.gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", m.kv_cache_usage);
  w.gauge("crosspoint:num_free_kv_blocks", "KV cache blocks on the free list.", m.num_free_blocks);
  w.gauge("crosspoint:num_kv_blocks", "KV cache blocks in all.", m.num_total_blocks);
  w.counter("vllm:num_preemptions", "Cumulative number of preemptions from the engine.",
            static_cast<double>(m.num_preemptions));
  w.counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.",
            static_cast<double>(m.prefix_cache_queries));
  w.counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
            static_cast<double>(m.prefix_cache_hits));
  w.counter("vllm:prompt_tokens", "Number of prefill tokens processed.", static_cast<double>(m.prompt_tokens));
  w.counter("vllm:generation_tokens", "Number of generation tokens processed.",
            static_cast<double>(m.generation_tokens));
  w.counter_family_header("vllm:request_success", "Count of successfully processed requests.");
  for (const char* reason : {"stop", "length", "abort", "error"}) {
    auto it = m.request_success.find(reason);
    w.counter_sample("vllm:request_success", fmt::format("finished_reason=\"{}\"", reason),
                     it == m.request_success.end() ? 0.0 : static_cast<double>(it->second));
  }
  w.histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
              m.time_to_first_token_seconds);
  w.histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
              m.inter_token_latency_seconds);
  w.histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
              m.e2e_request_latency_seconds);
  w.histogram("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.",
              m.request_queue_time_seconds);
  w.histogram("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", m.iteration_tokens);
  w.histogram("crosspoint:iteration_num_seqs", "Histogram of the number of sequences (batch size) per engine step.",
              m.iteration_num_seqs);
  return w.take();
}

}  // namespace crosspoint
