#include "sweep/engine.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>

namespace crosspoint::sweep {

Result<Engine> parse_engine(const std::string& text) {
  if (text == "crosspoint") return Engine::kCrosspoint;
  if (text == "vllm") return Engine::kVllm;
  if (text == "sglang") return Engine::kSglang;
  if (text == "llama.cpp") return Engine::kLlamaCpp;
  return invalid_argument("--engine: unknown engine '" + text + "' (crosspoint, vllm, sglang or llama.cpp)");
}

std::string engine_display_name(Engine engine) {
  switch (engine) {
    case Engine::kCrosspoint: return "crosspoint";
    case Engine::kVllm: return "vLLM";
    case Engine::kSglang: return "SGLang";
    case Engine::kLlamaCpp: return "llama.cpp (llama-cpp-python)";
    case Engine::kCommand: return "custom server (--serve-cmd)";
  }
  return "crosspoint";
}

std::string llama_cpp_format_of(const std::string& precision) {
  if (precision == "fp16") return "F16";
  if (precision == "w8a8-fp8" || precision == "w8a8-int8") return "Q8_0";
  if (precision == "w4a16") return "Q4_0";
  return "";
}

int llama_cpp_ftype_of(const std::string& format) {
  // llama.h: LLAMA_FTYPE_MOSTLY_F16 = 1, _Q4_0 = 2, _Q8_0 = 7.
  if (format == "F16") return 1;
  if (format == "Q4_0") return 2;
  if (format == "Q8_0") return 7;
  return -1;
}

std::vector<std::string> llama_cpp_server_command(const std::string& python, const std::string& gguf,
                                                  const std::string& host, int port, int n_ctx, int threads) {
  std::vector<std::string> argv = {python,
                                   "-m",
                                   "llama_cpp.server",
                                   "--model",
                                   gguf,
                                   "--model_alias",
                                   "sweep",
                                   "--host",
                                   host,
                                   "--port",
                                   std::to_string(port),
                                   "--n_ctx",
                                   std::to_string(n_ctx),
                                   "--chat_format",
                                   "chatml"};
  if (threads > 0) argv.insert(argv.end(), {"--n_threads", std::to_string(threads)});
  return argv;
}

std::vector<std::string> vllm_server_command(const std::string& vllm, const std::string& model, const std::string& host,
                                             int port, const EngineServeLimits& limits) {
  std::vector<std::string> argv = {vllm,
                                   "serve",
                                   model,
                                   "--host",
                                   host,
                                   "--port",
                                   std::to_string(port),
                                   "--served-model-name",
                                   "sweep",
                                   "--max-model-len",
                                   std::to_string(limits.max_model_len),
                                   "--gpu-memory-utilization",
                                   std::to_string(limits.gpu_memory_utilization),
                                   "--seed",
                                   "0"};
  if (limits.max_num_seqs > 0) argv.insert(argv.end(), {"--max-num-seqs", std::to_string(limits.max_num_seqs)});
  if (limits.enforce_eager) argv.push_back("--enforce-eager");
  return argv;
}

std::vector<std::string> sglang_server_command(const std::string& python, const std::string& model,
                                               const std::string& host, int port, const EngineServeLimits& limits) {
  std::vector<std::string> argv = {python,
                                   "-m",
                                   "sglang.launch_server",
                                   "--model-path",
                                   model,
                                   "--host",
                                   host,
                                   "--port",
                                   std::to_string(port),
                                   "--served-model-name",
                                   "sweep",
                                   "--context-length",
                                   std::to_string(limits.max_model_len),
                                   "--mem-fraction-static",
                                   std::to_string(limits.gpu_memory_utilization),
                                   "--random-seed",
                                   "0",
                                   "--enable-metrics"};
  if (limits.max_num_seqs > 0) argv.insert(argv.end(), {"--max-running-requests", std::to_string(limits.max_num_seqs)});
  if (limits.enforce_eager) argv.push_back("--disable-cuda-graph");
  return argv;
}

Result<std::string> substitute_serve_template(const std::string& templ, const std::string& model, int port,
                                              const std::string& host, const std::string& precision) {
  std::string out;
  size_t i = 0;
  while (i < templ.size()) {
    if (templ[i] != '{') {
      out.push_back(templ[i++]);
      continue;
    }
    const size_t close = templ.find('}', i);
    if (close == std::string::npos) {
      out.append(templ, i, std::string::npos);
      break;
    }
    const std::string name = templ.substr(i + 1, close - i - 1);
    bool is_word = !name.empty();
    for (char c : name) is_word = is_word && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!is_word) {  // "{}" or "${x:-y}"-like text: kept as written
      out.push_back('{');
      ++i;
      continue;
    }
    if (name == "model") out += model;
    else if (name == "port") out += std::to_string(port);
    else if (name == "host") out += host;
    else if (name == "precision") out += precision;
    else
      return invalid_argument("--serve-cmd: unknown placeholder {" + name +
                              "} (known: {model} {port} {host} {precision})");
    i = close + 1;
  }
  return out;
}

// exec: the server replaces the shell, so SIGTERM reaches it.
std::vector<std::string> shell_command(const std::string& command) { return {"/bin/sh", "-c", "exec " + command}; }

int pick_free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

Engine engine_of(const std::string& engine_option, const std::string& serve_cmd) {
  if (!serve_cmd.empty()) return Engine::kCommand;
  auto engine = parse_engine(engine_option);
  return engine.is_ok() ? *engine : Engine::kCrosspoint;
}

std::vector<std::string> engine_report_lines(Engine engine, const std::vector<std::string>& precisions,
                                             const std::string& gguf) {
  std::vector<std::string> lines;
  if (engine == Engine::kCrosspoint) return lines;
  if (engine == Engine::kVllm || engine == Engine::kSglang) {
    const bool vllm = engine == Engine::kVllm;
    lines.push_back(std::string("Served by ") + (vllm ? "vLLM (vllm serve" : "SGLang (python -m sglang.launch_server") +
                    "), one server per precision on the same checkpoints crosspoint serves (compressed-tensors "
                    "W8A8, GPTQ W4A16), benched by crosspoint bench serve exactly as crosspoint's own server is.");
    lines.push_back(std::string("Measured from the engine itself: its /metrics (") +
                    (vllm ? "vllm:num_requests_running, vllm:kv_cache_usage_perc, ..."
                          : "sglang:num_running_reqs, sglang:token_usage, ...") +
                    ") and the KV capacity its start-up log prints. Quality (crosspoint eval) runs crosspoint's own "
                    "engine, so it was skipped for this engine.");
    return lines;
  }
  if (engine == Engine::kLlamaCpp) {
    lines.push_back(
        "Served by llama.cpp through llama-cpp-python's OpenAI server (python -m llama_cpp.server), one server "
        "per precision, benched by crosspoint bench serve exactly as crosspoint's own server is.");
    std::string formats;
    for (const std::string& p : precisions) {
      const std::string format = llama_cpp_format_of(p);
      if (format.empty()) continue;
      formats += (formats.empty() ? "" : ", ") + p + " is llama.cpp " + format;
    }
    const std::string source =
        gguf.empty() ? "The GGUFs were made with llama_cpp.llama_model_quantize from the model's only released GGUF "
                       "(Q4_1) with allow_requantize, so every format carries the Q4_1 release's rounding: the F16 "
                       "row is not the original FP16 weights."
                     : "The GGUFs were made with llama_cpp.llama_model_quantize from " +
                           std::filesystem::path(gguf).filename().string() +
                           " (--gguf, with allow_requantize): each format carries that file's rounding.";
    lines.push_back("Formats: " + formats +
                    " (Q8_0 is 8-bit integer blocks with an FP16 scale, not FP8; Q4_0 is 4-bit integer blocks, "
                    "not GPTQ). " +
                    source);
  } else {
    lines.push_back(
        "Served by a --serve-cmd server (any OpenAI-compatible server), one per precision, benched by "
        "crosspoint bench serve exactly as crosspoint's own server is.");
  }
  lines.push_back(
      "Not measured here: the server exposes no crosspoint /metrics, so the KV cache usage, the start-up facts "
      "(weights, KV cache, capacity) and the server-side timings are absent; quality (crosspoint eval) runs "
      "crosspoint's own engine, so it was skipped for this engine.");
  return lines;
}

}  // namespace crosspoint::sweep
