// The checks every request head passes before its body is read (HttpConnection runs them on
// each complete head): framing that could smuggle a request past another parser, malformed
// lines, the API key (constant time) and the body size. A refused head never reaches a handler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "server/api_error.h"

namespace crosspoint {

struct HttpLimits {
  size_t max_body_bytes = 8u << 20;
  size_t max_header_bytes = 64u << 10;
  double header_timeout_s = 10;
  double body_timeout_s = 60;
  double idle_timeout_s = 60;
  int max_connections = 4096;
  std::string api_key;  // empty = no authentication
};

// What check_request_head found in a complete request head.
struct RequestHead {
  std::string method;
  std::string path;  // the target's path, without query; "/" for "*"
  uint64_t content_length = 0;
};

// Checks a complete request head (request line and header lines up to and including the
// empty line; lines end in CRLF or LF). Returns the error to answer with, or none and *out:
//   - request smuggling: duplicated Content-Length, Content-Length with Transfer-Encoding, a
//     malformed Content-Length or header line, and any Transfer-Encoding are refused (400;
//     411 for a chunked body);
//   - an unknown method is 405, an HTTP version other than 1.0/1.1 400, an Expect other than
//     100-continue 417;
//   - with an API key, every route but /health needs "Authorization: Bearer KEY" (401);
//   - a Content-Length over max_body_bytes is 413.
std::optional<ApiError> check_request_head(std::string_view head, const HttpLimits& limits, RequestHead* out);

// Whether an Authorization header value is "Bearer <key>"; the time taken does not depend on
// where the value and the key differ.
bool bearer_matches(std::string_view authorization, std::string_view key);

// The target of a (possibly incomplete) head's request line without its query
// ("POST /v1/completions?x HTTP/1.1" -> "/v1/completions"), or "" while the line is
// incomplete or malformed: the label of a refused request's response.
std::string_view request_line_path(std::string_view head);

}  // namespace crosspoint
