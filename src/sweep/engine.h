// The server a sweep studies: crosspoint's own (`crosspoint serve`), vLLM (`vllm serve`),
// SGLang (`python -m sglang.launch_server`), llama-cpp-python's OpenAI server
// (`python -m llama_cpp.server`), or any OpenAI-compatible server started from a --serve-cmd
// template. Other engines get their port picked beforehand and are ready once GET /v1/models
// answers 200 (llama_cpp.server has no /health); vLLM and SGLang expose /metrics under their own
// names (bench's server_metrics.h reads both) and print their KV capacity at start-up.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace crosspoint::sweep {

enum class Engine { kCrosspoint, kVllm, kSglang, kLlamaCpp, kCommand };

// "crosspoint" | "vllm" | "sglang" | "llama.cpp"; an error naming --engine otherwise.
Result<Engine> parse_engine(const std::string& text);
// The name the report's title carries: "crosspoint", "llama.cpp (llama-cpp-python)", "custom server".
std::string engine_display_name(Engine engine);

// The llama.cpp format standing in for a crosspoint precision: fp16 -> "F16", w8a8-fp8 ->
// "Q8_0" (8-bit integer blocks, not FP8), w4a16 -> "Q4_0"; "" for an unknown precision.
std::string llama_cpp_format_of(const std::string& precision);
// llama.cpp's file type number (LLAMA_FTYPE_MOSTLY_*) of a format above; -1 when unknown.
int llama_cpp_ftype_of(const std::string& format);

// `python -m llama_cpp.server` serving `gguf` on host:port as model "sweep".
std::vector<std::string> llama_cpp_server_command(const std::string& python, const std::string& gguf,
                                                  const std::string& host, int port, int n_ctx, int threads);

// What vLLM and SGLang are started with beyond the model and address.
struct EngineServeLimits {
  int max_model_len = 2048;
  double gpu_memory_utilization = 0.9;
  int max_num_seqs = 0;  // 0: the engine's default
  bool enforce_eager = false;
};

// `vllm serve MODEL` with vLLM's flags, serving the model as "sweep" (`vllm` is the
// executable: the one on PATH, or --engine-exe).
std::vector<std::string> vllm_server_command(const std::string& vllm, const std::string& model, const std::string& host,
                                             int port, const EngineServeLimits& limits);
// `python -m sglang.launch_server` with SGLang's flags (--enable-metrics for /metrics), serving
// the model as "sweep".
std::vector<std::string> sglang_server_command(const std::string& python, const std::string& model,
                                               const std::string& host, int port, const EngineServeLimits& limits);

// The --serve-cmd template with {model} {port} {host} {precision} replaced (every occurrence;
// other braces kept). An error names an unknown {placeholder}.
Result<std::string> substitute_serve_template(const std::string& templ, const std::string& model, int port,
                                              const std::string& host, const std::string& precision);

// /bin/sh -c "exec COMMAND": the shell's quoting and variables, and the server (one command)
// replaces the shell so that stopping it reaches the server.
std::vector<std::string> shell_command(const std::string& command);

// A loopback TCP port free now (bound to port 0 and released); -1 when none could be bound.
int pick_free_port();

}  // namespace crosspoint::sweep

namespace crosspoint::sweep {

// The engine a sweep's options name (--serve-cmd wins over --engine).
Engine engine_of(const std::string& engine_option, const std::string& serve_cmd);

// The report's lines on the engine: which server, which format stood for each precision, and
// what was not measured there (no /metrics, no crosspoint eval). Empty for crosspoint.
// gguf: llama.cpp's source GGUF (--gguf), empty for the default model's Q4_1 release.
std::vector<std::string> engine_report_lines(Engine engine, const std::vector<std::string>& precisions,
                                             const std::string& gguf = "");

}  // namespace crosspoint::sweep
