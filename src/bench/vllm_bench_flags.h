// What `vllm bench serve`'s own flags mean here, as plain functions the command line and the
// tests share (vllm/benchmarks/serve.py, current): the backend and the endpoint it implies, the
// server URL from --base-url or --host/--port, KEY=VALUE lists (--header, --metadata),
// --extra-body, the result file name vLLM's --save-result picks, and Python's text for a float
// (the request rate in that name).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace crosspoint::bench {

inline constexpr const char* kCompletionsEndpoint = "/v1/completions";
inline constexpr const char* kChatEndpoint = "/v1/chat/completions";

// Settles --backend and --endpoint the way they go together: openai and vllm post a raw prompt to
// /v1/completions, openai-chat a user message to /v1/chat/completions. An endpoint left out
// follows the backend; a backend left out follows the endpoint (crosspoint's older command
// lines gave only --endpoint). A backend vLLM has and crosspoint lacks (openai-audio,
// openai-embeddings, ...), and a backend whose body the endpoint would refuse, are errors
// naming the flags.
struct BackendChoice {
  std::string backend;   // "openai", "vllm" or "openai-chat"
  std::string endpoint;  // "/v1/completions" or "/v1/chat/completions"
};
Result<BackendChoice> resolve_backend(const std::optional<std::string>& backend,
                                      const std::optional<std::string>& endpoint);

// The server root: --base-url when given (trailing '/' dropped), else http://HOST:PORT (an
// IPv6 host in brackets), as vLLM's join_host_port.
std::string server_base_url(const std::string& base_url, const std::string& host, int port);

// vLLM's KEY=VALUE items (--header, --metadata): split at the first '=', both sides stripped
// of spaces; an item without '=' is an error naming flag.
Result<std::vector<std::pair<std::string, std::string>>> parse_key_values(const std::vector<std::string>& items,
                                                                          const std::string& flag);

// --extra-body: a JSON object (anything else is an error).
Result<nlohmann::ordered_json> parse_extra_body(const std::string& text);

// Python's str() of a float: "10.0", "0.5", "inf", "1e-05".
std::string python_float_text(double value);

// vLLM's default result file name (compute_result_filename):
// {label}-{rate}qps[-concurrency{N}]-{model basename}-{date}.json, or with a ramp-up
// {label}-ramp-up-{strategy}-{start}qps-{end}qps[-concurrency{N}]-{model basename}-{date}.json.
// label is --label, else the backend; the rate is Python's text of --request-rate.
struct ResultNameInputs {
  std::string label;  // empty: backend
  std::string backend;
  double request_rate = 0;
  std::optional<int> max_concurrency;
  std::string model_id;
  std::string date;              // YYYYmmdd-HHMMSS
  std::string ramp_up_strategy;  // empty: none
  int ramp_up_start_rps = 0;
  int ramp_up_end_rps = 0;
};
std::string default_result_filename(const ResultNameInputs& inputs);

// Where --save-result / --append-result write: --result-filename or the default name, inside
// --result-dir when given.
std::string result_path(const std::string& result_dir, const std::string& result_filename,
                        const ResultNameInputs& inputs);

}  // namespace crosspoint::bench
