// The HTTP responses the server sent, by route and status, as the Prometheus counter
// crosspoint:http_responses_total{handler,status} (declared as prometheus_client does, without _total): refusals by the
// connection guard (408, 413, 431, 503, ...) and by the handlers alike, so a client's tally can be checked against the
// server's (scripts/soak.py). Used on the event loop's thread only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>

namespace crosspoint {

class HttpResponseCounts {
 public:
  // A route the server serves keeps its path as the handler label; anything else is "other",
  // so hostile paths cannot grow the label set.
  void add(std::string_view path, int status);
  // The counter family in the text exposition format (empty when nothing was sent yet).
  std::string prometheus_text() const;

 private:
  std::map<std::pair<std::string, int>, uint64_t> counts_;
};

// The handler label of a request path: the path itself for a served route, else "other".
std::string_view response_handler_label(std::string_view path);

}  // namespace crosspoint
