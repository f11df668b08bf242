// Every option of `crosspoint bench serve`, as one plain struct, and the checks that run
// before any load is sent.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "bench/metrics.h"
#include "common/status.h"

namespace crosspoint::bench {

struct BenchOptions {
  std::string base_url = "http://127.0.0.1:8000";  // scheme://host:port, no trailing path
  std::string endpoint = "/v1/completions";        // or /v1/chat/completions
  std::string model;                               // "model" field of every request
  std::string tokenizer_dir;                       // HF dir with tokenizer.json, or that file
  std::string dataset_name = "sharegpt";           // sharegpt | sharegpt_multi_turn | random | prefix_repetition
  std::string dataset_path;                        // ShareGPT JSON; empty = the cached file
  int num_prompts = 1000;                          // requests; conversations for sharegpt_multi_turn
  std::optional<int> max_concurrency;              // unset = unlimited
  double request_rate = std::numeric_limits<double>::infinity();  // req/s; inf = all at t=0
  bool request_rate_given = false;                                // the user passed --request-rate
  double burstiness = 1.0;                                        // gamma shape; 1 = Poisson
  uint64_t seed = 0;
  std::optional<double> temperature;  // sent only when given
  bool ignore_eos = false;
  std::vector<std::string> percentile_metrics = {"ttft", "tpot", "itl"};
  std::vector<double> metric_percentiles = {99};
  GoodputSlos goodput;
  int num_warmups = 0;
  std::string api_key;      // else $OPENAI_API_KEY; sent as Bearer
  std::string result_file;  // JSON written here
  // Dataset shape.
  std::optional<int> sharegpt_output_len;  // fixed output length for ShareGPT
  int random_input_len = 1024;
  int random_output_len = 128;
  double random_range_ratio = 0.0;         // in [0, 1)
  int prefix_repetition_prefix_len = 256;  // vLLM's names and defaults
  int prefix_repetition_suffix_len = 256;
  int prefix_repetition_num_prefixes = 10;
  int prefix_repetition_output_len = 128;
  int multi_turn_max_turns = 8;       // user turns per conversation, at most
  int multi_turn_max_context = 2048;  // tokens of history + turn + reply, at most
  // Client.
  double request_timeout_s = 6 * 3600.0;  // per request, as vLLM's session timeout
  double metrics_interval_s = 0.5;        // server /metrics sampling period; 0 = off
  bool disable_progress = false;
  std::string label;  // "label" key of the result
};

// Parses "ttft:500 tpot:50" (also comma-separated) into SLOs; names ttft/tpot/e2el,
// values >= 0 ms.
Result<GoodputSlos> parse_goodput(const std::vector<std::string>& items);
// Parses "50,90,99" into numbers in (0, 100].
Result<std::vector<double>> parse_percentiles(const std::string& text);
// Parses "ttft,tpot,itl,e2el" (any subset).
Result<std::vector<std::string>> parse_percentile_metrics(const std::string& text);

// Checks every option that can be checked without the network: URL shape, endpoint,
// counts, rate/concurrency combination, dataset file presence, ranges.
Status validate_options(const BenchOptions& options);

// The ShareGPT file used when --dataset-path is omitted.
std::string default_sharegpt_path();

}  // namespace crosspoint::bench
