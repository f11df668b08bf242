// What `crosspoint serve` says at start-up, read back from its log: the weights loaded, the
// KV cache in GiB and tokens, the worst-case and workload-based capacity, the start-up time
// and the address it listens on. The sweep records these per precision (cold start and
// capacity) and uses the address to reach the server.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace crosspoint::sweep {

struct ServerStartup {
  std::optional<double> weights_gib;             // "weights 0.251 GiB"; cuda: "weights on the GPU 14.190 GiB"
  std::optional<double> load_s;                  // "loaded in 0.02 s"; cuda: plus "uploaded in 5.20 s"
  std::optional<double> kv_cache_gib;            // "KV cache: 1.000 GiB"
  std::optional<double> kv_cache_tokens;         // "= 23296 tokens"
  std::optional<double> worst_case_concurrency;  // "Maximum concurrency for N tokens per request ...: 2.84x"
  std::optional<double> workload_concurrency;    // "Workload-based capacity ... ~53 concurrent requests"
  std::optional<double> max_model_len;           // "max-model-len 8192"
  std::optional<double> startup_s;               // "start-up took 5.73 s"
  std::string base_url;                          // "http://127.0.0.1:8000" (no /v1); empty until serving
  std::string capacity_lines;                    // the KV and capacity lines (cuda: GPU, activations, graphs) verbatim
};

// Parses whatever of the start-up lines the log holds so far (unknown lines are ignored).
ServerStartup parse_server_startup(const std::string& log_text);

nlohmann::json server_startup_to_json(const ServerStartup& startup);
ServerStartup server_startup_from_json(const nlohmann::json& object);

}  // namespace crosspoint::sweep
