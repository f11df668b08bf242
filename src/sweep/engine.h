// The server a sweep studies: crosspoint's own (`crosspoint serve`), llama-cpp-python's
// OpenAI server (`python -m llama_cpp.server`), or any OpenAI-compatible server started from a
// --serve-cmd template. Other engines get their port picked beforehand and are ready once
// GET /v1/models answers 200 (llama_cpp.server has no /health); they expose no /metrics.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace crosspoint::sweep {

enum class Engine { kCrosspoint, kLlamaCpp, kCommand };

// "crosspoint" | "llama.cpp"; an error naming --engine otherwise.
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
std::vector<std::string> engine_report_lines(Engine engine, const std::vector<std::string>& precisions);

}  // namespace crosspoint::sweep
