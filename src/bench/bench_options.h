// Every option of `crosspoint bench serve`, as one plain struct, and the checks that run
// before any load is sent.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/metrics.h"
#include "common/status.h"

namespace crosspoint::bench {

// vLLM's sampling flags: each is put in the request body only when given.
struct SamplingFlags {
  std::optional<double> top_p;
  std::optional<int> top_k;
  std::optional<double> min_p;
  std::optional<double> temperature;
  std::optional<double> frequency_penalty;
  std::optional<double> presence_penalty;
  std::optional<double> repetition_penalty;
};

struct BenchOptions {
  std::string backend = "openai";                  // openai | vllm (= openai) | openai-chat
  std::string base_url = "http://127.0.0.1:8000";  // scheme://host:port, no trailing path
  std::string endpoint = "/v1/completions";        // or /v1/chat/completions
  std::string model;                               // --model: the result's model_id
  std::string served_model_name;                   // "model" field of every request; empty = model
  std::string tokenizer_dir;                       // HF dir with tokenizer.json, or that file
  // sharegpt | sharegpt_multi_turn | random | prefix_repetition | custom | sonnet | burstgpt
  std::string dataset_name = "random";
  std::string dataset_path;            // the dataset's file; sharegpt: empty = the cached file
  int num_prompts = 1000;              // requests; conversations for sharegpt_multi_turn
  std::optional<int> max_concurrency;  // unset = unlimited
  double request_rate = std::numeric_limits<double>::infinity();  // req/s; inf = all at t=0
  double burstiness = 1.0;                                        // gamma shape; 1 = Poisson
  // --ramp-up-strategy linear|exponential (empty: none): the rate goes from start to end RPS
  // over the requests, instead of --request-rate.
  std::string ramp_up_strategy;
  std::optional<int> ramp_up_start_rps;
  std::optional<int> ramp_up_end_rps;
  uint64_t seed = 0;
  std::optional<double> temperature;                         // sent only when given (kept for the library's callers)
  SamplingFlags sampling;                                    // the other sampling flags, each sent only when given
  std::string extra_body_json;                               // --extra-body: a JSON object merged into every body
  std::optional<int> logprobs;                               // --logprobs: completions only, as vLLM
  std::vector<std::pair<std::string, std::string>> headers;  // --header KEY=VALUE
  std::string request_id_prefix;  // x-request-id = prefix + index; empty = a UUID per request
  bool ignore_eos = false;
  std::vector<std::string> percentile_metrics = {"ttft", "tpot", "itl"};
  std::vector<double> metric_percentiles = {99};
  GoodputSlos goodput;
  int num_warmups = 0;
  std::string api_key;      // else $OPENAI_API_KEY; sent as Bearer
  std::string result_file;  // --result-file: the full result JSON (every per-request list) written here
  // vLLM's result saving: --save-result writes {result_dir}/{result_filename or vLLM's default
  // name} as one line of JSON, --append-result appends such a line; the per-request lists only
  // with --save-detailed; --metadata KEY=VALUE pairs go in after num_prompts.
  bool save_result = false;
  bool append_result = false;
  bool save_detailed = false;
  std::string result_dir;
  std::string result_filename;
  std::vector<std::pair<std::string, std::string>> metadata;
  // Dataset shape.
  std::optional<int> sharegpt_output_len;  // fixed output length for ShareGPT
  int custom_output_len = 256;             // custom: max_tokens of every request
  bool skip_chat_template = false;         // custom: send the prompt as written, no chat template
  bool disable_shuffle = false;            // custom: keep the file's order
  bool no_oversample = false;              // custom: fewer rows than num_prompts are not repeated
  int sonnet_input_len = 550;              // sonnet: prompt tokens, at most
  int sonnet_output_len = 150;
  int sonnet_prefix_len = 200;  // sonnet: tokens of the lines every prompt starts with
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
  std::string gpu_energy = "auto";        // auto: NVML's energy counters when the server is local; off
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
