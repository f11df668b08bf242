#include "server/http_response_counts.h"

#include <fmt/format.h>

namespace crosspoint {

std::string_view response_handler_label(std::string_view path) {
  for (std::string_view route :
       {"/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize", "/v1/models", "/health", "/metrics"}) {
    if (path == route) return route;
  }
  return "other";
}

void HttpResponseCounts::add(std::string_view path, int status) {
  ++counts_[{std::string(response_handler_label(path)), status}];
}

std::string HttpResponseCounts::prometheus_text() const {
  if (counts_.empty()) return "";
  std::string out =
      "# HELP crosspoint:http_responses HTTP responses sent, by route (\"other\" for unknown paths) and "
      "status.\n# TYPE crosspoint:http_responses counter\n";
  for (const auto& [key, value] : counts_) {
    out += fmt::format("crosspoint:http_responses_total{{handler=\"{}\",status=\"{}\"}} {}\n", key.first, key.second,
                       value);
  }
  return out;
}

}  // namespace crosspoint
