// The bytes of HTTP/1.x responses: status lines, headers, body framing (Content-Length, chunked
// transfer coding for streams, or to the close for an HTTP/1.0 stream) and the error responses
// the connection layer writes itself. Pure functions; HttpConnection writes what they return.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/api_error.h"

namespace crosspoint {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// "OK", "Not Found", ... ("Error" for a status without a phrase here).
const char* http_reason_phrase(int status);

// How a response's body is delimited.
enum class HttpBodyFraming {
  kContentLength,  // the body follows, content_length bytes
  kChunked,        // a stream (HTTP/1.1): chunks, then the last chunk
  kToClose,        // a stream to an HTTP/1.0 client: the body ends when the connection closes
};

// The status line and headers of a response to an HTTP/1.<minor_version> request, through the
// empty line. Adds Date (HTTP/1.1), Content-Length or Transfer-Encoding per `framing`, and
// "Connection: close" when !keep_alive ("Connection: keep-alive" to an HTTP/1.0 client that
// keeps the connection).
std::string http_response_head(int minor_version, int status, const HttpHeaders& headers, HttpBodyFraming framing,
                               size_t content_length, bool keep_alive);

// One chunk of a chunked body; "" for empty data (an empty chunk would end the body).
std::string http_chunk(std::string_view data);
// The last chunk, ending a chunked body (no trailers).
inline constexpr std::string_view kHttpLastChunk = "0\r\n\r\n";

// A complete HTTP/1.1 response carrying the error's JSON, with "Connection: close".
std::string http_error_response(const ApiError& error);

}  // namespace crosspoint
