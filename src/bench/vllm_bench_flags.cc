#include "bench/vllm_bench_flags.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>

namespace crosspoint::bench {

namespace {

std::string strip(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  const size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

}  // namespace

Result<BackendChoice> resolve_backend(const std::optional<std::string>& backend,
                                      const std::optional<std::string>& endpoint) {
  BackendChoice choice;
  if (backend) {
    if (*backend != "openai" && *backend != "vllm" && *backend != "openai-chat") {
      return unsupported("--backend " + *backend +
                         ": crosspoint bench serve drives the OpenAI text APIs only (openai, vllm: /v1/completions; "
                         "openai-chat: /v1/chat/completions)");
    }
    choice.backend = *backend;
  }
  if (endpoint) {
    if (*endpoint != kCompletionsEndpoint && *endpoint != kChatEndpoint) {
      return invalid_argument("--endpoint: '" + *endpoint + "' must be /v1/completions or /v1/chat/completions");
    }
    choice.endpoint = *endpoint;
  }
  if (!backend) choice.backend = choice.endpoint == kChatEndpoint ? "openai-chat" : "openai";
  const std::string implied = choice.backend == "openai-chat" ? kChatEndpoint : kCompletionsEndpoint;
  if (!endpoint) choice.endpoint = implied;
  if (choice.endpoint != implied) {
    return invalid_argument("--backend " + choice.backend + " with --endpoint " + choice.endpoint + ": the " +
                            choice.backend + " backend sends its requests to " + implied +
                            " (use --backend openai-chat for /v1/chat/completions, openai or vllm for "
                            "/v1/completions)");
  }
  return choice;
}

std::string server_base_url(const std::string& base_url, const std::string& host, int port) {
  if (!base_url.empty()) {
    std::string url = base_url;
    while (!url.empty() && url.back() == '/') url.pop_back();
    return url;
  }
  const bool ipv6 = host.find(':') != std::string::npos && host.front() != '[';
  return "http://" + (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<std::vector<std::pair<std::string, std::string>>> parse_key_values(const std::vector<std::string>& items,
                                                                          const std::string& flag) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) return invalid_argument(flag + ": '" + item + "' is not KEY=VALUE");
    pairs.emplace_back(strip(item.substr(0, eq)), strip(item.substr(eq + 1)));
  }
  return pairs;
}

Result<nlohmann::ordered_json> parse_extra_body(const std::string& text) {
  nlohmann::ordered_json body = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return invalid_argument("--extra-body: '" + text + "' is not JSON");
  if (!body.is_object()) return invalid_argument("--extra-body: '" + text + "' is not a JSON object");
  return body;
}

std::string python_float_text(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // Shortest round-trip digits, then Python's layout: fixed for exponents in [-4, 16), else
  // d.ddde[+-]XX.
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  std::string sci(buffer, end);
  const size_t e = sci.find('e');
  std::string mantissa = sci.substr(0, e);
  const int exponent = std::atoi(sci.c_str() + e + 1);
  const bool negative = mantissa.front() == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits += c;
  std::string out;
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out = "0." + std::string(-exponent - 1, '0') + digits;
    } else {
      if (static_cast<int>(digits.size()) <= exponent + 1) digits += std::string(exponent + 1 - digits.size(), '0');
      out = digits.substr(0, exponent + 1);
      const std::string fraction = digits.substr(exponent + 1);
      out += "." + (fraction.empty() ? std::string("0") : fraction);
    }
  } else {
    out = digits.substr(0, 1) + (digits.size() > 1 ? "." + digits.substr(1) : "");
    const int magnitude = std::abs(exponent);
    out += std::string("e") + (exponent < 0 ? "-" : "+") + (magnitude < 10 ? "0" : "") + std::to_string(magnitude);
  }
  return negative ? "-" + out : out;
}

std::string default_result_filename(const ResultNameInputs& in) {
  const std::string label = in.label.empty() ? in.backend : in.label;
  const std::string concurrency = in.max_concurrency ? "-concurrency" + std::to_string(*in.max_concurrency) : "";
  const size_t slash = in.model_id.find_last_of('/');
  const std::string model = slash == std::string::npos ? in.model_id : in.model_id.substr(slash + 1);
  if (!in.ramp_up_strategy.empty()) {
    return label + "-ramp-up-" + in.ramp_up_strategy + "-" + std::to_string(in.ramp_up_start_rps) + "qps-" +
           std::to_string(in.ramp_up_end_rps) + "qps" + concurrency + "-" + model + "-" + in.date + ".json";
  }
  return label + "-" + python_float_text(in.request_rate) + "qps" + concurrency + "-" + model + "-" + in.date + ".json";
}

std::string result_path(const std::string& result_dir, const std::string& result_filename,
                        const ResultNameInputs& inputs) {
  const std::string name = result_filename.empty() ? default_result_filename(inputs) : result_filename;
  if (result_dir.empty()) return name;
  return (std::filesystem::path(result_dir) / name).string();
}

}  // namespace crosspoint::bench
