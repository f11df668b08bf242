#include "sweep/startup_log.h"

#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

namespace crosspoint::sweep {
namespace {

std::optional<double> match_number(const std::string& line, const std::regex& pattern) {
  std::smatch m;
  if (!std::regex_search(line, m, pattern)) return std::nullopt;
  try {
    return std::stod(m[1].str());
  } catch (...) { return std::nullopt; }
}

// A number written with thousands separators ("4,455,808").
std::optional<double> match_grouped_number(const std::string& line, const std::regex& pattern) {
  std::smatch m;
  if (!std::regex_search(line, m, pattern)) return std::nullopt;
  std::string digits;
  for (char c : m[1].str())
    if (c != ',') digits.push_back(c);
  try {
    return std::stod(digits);
  } catch (...) { return std::nullopt; }
}

// vLLM's and SGLang's start-up lines (their formats in the comments).
void parse_other_engine_line(const std::string& line, ServerStartup& s) {
  // vLLM: "GPU KV cache size: 4,455,808 tokens", "Available KV cache memory: 12.34 GiB",
  // "Model loading took 14.9908 GiB memory and 5.123 seconds".
  static const std::regex kVllmKvTokens(R"(GPU KV cache size: ([0-9,]+) tokens)");
  static const std::regex kVllmKvGib(R"(Available KV cache memory: ([0-9.]+) GiB)");
  static const std::regex kVllmWeights(R"(Model loading took ([0-9.]+) GiB)");
  static const std::regex kVllmLoadS(R"(Model loading took .* and ([0-9.]+) s)");
  // SGLang: "KV Cache is allocated. #tokens: 383872, K size: 9.68 GB, V size: 9.68 GB" (or
  // "KV size: 19.36 GB"; its GB are 2^30 bytes), "Load weight end. ... mem usage=28.79 GB.",
  // "max_total_num_tokens=350257, ..., context_len=262144".
  static const std::regex kSglangKvTokens(R"(KV Cache is allocated\. #tokens: ([0-9,]+))");
  static const std::regex kSglangK(R"(K size: ([0-9.]+) GB)");
  static const std::regex kSglangV(R"(V size: ([0-9.]+) GB)");
  static const std::regex kSglangKv(R"(KV size: ([0-9.]+) GB)");
  static const std::regex kSglangWeights(R"(Load weight end\..*mem usage=([0-9.]+) GB)");
  static const std::regex kSglangContext(R"(context_len=([0-9]+))");
  if (line.find("GPU KV cache size:") != std::string::npos) {
    s.kv_cache_tokens = match_grouped_number(line, kVllmKvTokens);
    s.capacity_lines += line + "\n";
  } else if (line.find("Available KV cache memory:") != std::string::npos) {
    s.kv_cache_gib = match_number(line, kVllmKvGib);
    s.capacity_lines += line + "\n";
  } else if (line.find("Model loading took") != std::string::npos) {
    s.weights_gib = match_number(line, kVllmWeights);
    s.load_s = match_number(line, kVllmLoadS);
  } else if (line.find("KV Cache is allocated.") != std::string::npos) {
    s.kv_cache_tokens = match_grouped_number(line, kSglangKvTokens);
    const auto k = match_number(line, kSglangK), v = match_number(line, kSglangV);
    s.kv_cache_gib = k && v ? std::optional<double>(*k + *v) : match_number(line, kSglangKv);
    s.capacity_lines += line + "\n";
  } else if (line.find("Load weight end.") != std::string::npos) {
    s.weights_gib = match_number(line, kSglangWeights);
  } else if (line.find("max_total_num_tokens=") != std::string::npos) {
    s.max_model_len = match_number(line, kSglangContext);
    s.capacity_lines += line + "\n";
  }
}

}  // namespace

ServerStartup parse_server_startup(const std::string& log_text) {
  static const std::regex kWeights(R"(weights ([0-9.]+) GiB)");
  static const std::regex kLoaded(R"(loaded in ([0-9.]+) s)");
  static const std::regex kKvGib(R"(KV cache: ([0-9.]+) GiB)");
  static const std::regex kKvTokens(R"(KV cache: .*= ([0-9]+) tokens)");
  static const std::regex kWorstCase(R"(Maximum concurrency for .*: ([0-9.]+)x)");
  static const std::regex kWorkload(R"(Workload-based capacity .*~([0-9.]+) concurrent)");
  static const std::regex kMaxModelLen(R"(max-model-len ([0-9]+))");
  static const std::regex kStartup(R"(start-up took ([0-9.]+) s)");
  static const std::regex kUrl(R"(on (http://[^ ]+?)/v1)");
  static const std::regex kGpuWeights(R"(weights on the GPU ([0-9.]+) GiB)");
  static const std::regex kUploaded(R"(uploaded in ([0-9.]+) s)");
  ServerStartup s;
  std::istringstream in(log_text);
  std::string line;
  std::optional<double> gpu_weights_gib, upload_s;
  while (std::getline(in, line)) {
    parse_other_engine_line(line, s);
    // crosspoint serve --device cuda: "GPU: <name> (139.8 GiB); weights on the GPU 14.190 GiB (fp16),
    // converted and uploaded in 5.20 s", then the activation profile and the CUDA graph lines.
    if (line.find("GPU: ") != std::string::npos && line.find("weights on the GPU") != std::string::npos) {
      gpu_weights_gib = match_number(line, kGpuWeights);
      upload_s = match_number(line, kUploaded);
      s.capacity_lines += line + "\n";
      continue;
    }
    if (line.find("CUDA graphs:") != std::string::npos ||
        line.find("activations and workspaces") != std::string::npos) {
      s.capacity_lines += line + "\n";
      continue;
    }
    if (line.find("weights ") != std::string::npos && line.find(" GiB") != std::string::npos) {
      if (auto v = match_number(line, kWeights)) s.weights_gib = v;
      if (auto v = match_number(line, kLoaded)) s.load_s = v;
    }
    if (line.find("KV cache:") != std::string::npos) {
      s.kv_cache_gib = match_number(line, kKvGib);
      s.kv_cache_tokens = match_number(line, kKvTokens);
      s.capacity_lines += line + "\n";
    }
    if (line.find("Maximum concurrency for") != std::string::npos) {
      s.worst_case_concurrency = match_number(line, kWorstCase);
      s.capacity_lines += line + "\n";
    }
    if (line.find("Workload-based capacity") != std::string::npos) {
      s.workload_concurrency = match_number(line, kWorkload);
      s.capacity_lines += line + "\n";
    }
    if (line.find("engine: ") != std::string::npos) {
      if (auto v = match_number(line, kMaxModelLen)) s.max_model_len = v;
    }
    if (line.find("start-up took") != std::string::npos) {
      s.startup_s = match_number(line, kStartup);
      std::smatch m;
      if (std::regex_search(line, m, kUrl)) s.base_url = m[1].str();
    }
  }
  // On the GPU the weights that count are those on the device, and the cold start's load is
  // reading the checkpoint plus converting and uploading it.
  if (gpu_weights_gib) s.weights_gib = gpu_weights_gib;
  if (upload_s) s.load_s = s.load_s.value_or(0) + *upload_s;
  return s;
}

nlohmann::json server_startup_to_json(const ServerStartup& s) {
  nlohmann::json j = nlohmann::json::object();
  auto put = [&j](const char* key, const std::optional<double>& v) {
    if (v) j[key] = *v;
  };
  put("weights_gib", s.weights_gib);
  put("load_s", s.load_s);
  put("kv_cache_gib", s.kv_cache_gib);
  put("kv_cache_tokens", s.kv_cache_tokens);
  put("worst_case_concurrency", s.worst_case_concurrency);
  put("workload_concurrency", s.workload_concurrency);
  put("max_model_len", s.max_model_len);
  put("startup_s", s.startup_s);
  j["capacity_lines"] = s.capacity_lines;
  return j;
}

ServerStartup server_startup_from_json(const nlohmann::json& j) {
  ServerStartup s;
  auto get = [&j](const char* key) -> std::optional<double> {
    if (j.is_object() && j.contains(key) && j[key].is_number()) return j[key].get<double>();
    return std::nullopt;
  };
  s.weights_gib = get("weights_gib");
  s.load_s = get("load_s");
  s.kv_cache_gib = get("kv_cache_gib");
  s.kv_cache_tokens = get("kv_cache_tokens");
  s.worst_case_concurrency = get("worst_case_concurrency");
  s.workload_concurrency = get("workload_concurrency");
  s.max_model_len = get("max_model_len");
  s.startup_s = get("startup_s");
  if (j.is_object() && j.contains("capacity_lines") && j["capacity_lines"].is_string()) {
    s.capacity_lines = j["capacity_lines"].get<std::string>();
  }
  return s;
}

}  // namespace crosspoint::sweep
