// The limits a public HTTP endpoint needs, enforced in front of libevent's evhttp (2.1, as
// Debian ships it, has no hook between a request's headers and its body, no connection cap
// and no per-phase timeouts). The guard creates each connection's bufferevent (evhttp's
// bevcb hook) and watches its input buffer: a callback on the buffer sees the bytes as they are
// read, before evhttp's parser, and reads each request head itself; the bytes of a head stay
// out of evhttp's buffer until the whole head has passed (evhttp parses lines as they come and
// would answer a bad one with its own HTML page). A refused request is
// dropped from the buffer (evhttp never parses it), the error is written to the socket, and
// evhttp is handed an end-of-file to free the connection. The guard holds a reference on each
// bufferevent to learn (in check_timeouts) when evhttp freed it.
//   - the head must end within header_timeout_s of its first byte and hold at most
//     max_header_bytes (408 / 431), the body must arrive within body_timeout_s (408), and a
//     connection with no request in progress is closed after idle_timeout_s;
//   - request smuggling: duplicated Content-Length, Content-Length with Transfer-Encoding, a
//     malformed Content-Length or header line, and any Transfer-Encoding are refused (400;
//     411 for a chunked body) before evhttp parses anything;
//   - a Content-Length over max_body_bytes is refused (413) before the body is read;
//   - with an API key, every route but /health needs "Authorization: Bearer KEY", compared in
//     constant time, before the body is read (401);
//   - at most max_connections connections are served; up to kReserveConnections more may send
//     one request, which gets /health answered and anything else a 503; beyond those a new
//     connection gets a 503 at once.
// Each refusal is an OpenAI error JSON with "Connection: close", and the connection is closed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"

struct bufferevent;
struct event_base;
struct evconnlistener;
struct evhttp;
struct evhttp_request;

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
// empty line; lines end in CRLF or LF). Returns the error to answer with, or none and *out.
std::optional<ApiError> check_request_head(std::string_view head, const HttpLimits& limits, RequestHead* out);

// Whether an Authorization header value is "Bearer <key>"; the time taken does not depend on
// where the value and the key differ.
bool bearer_matches(std::string_view authorization, std::string_view key);

// A complete HTTP/1.1 response carrying the error's JSON, with "Connection: close".
std::string http_error_response(const ApiError& error);

class HttpGuard {
 public:
  static constexpr int kReserveConnections = 64;

  // healthy: what GET /health answers on a connection over the cap (200 or 503).
  // on_response: told of every response the guard writes itself (the request's path, or ""
  // when its request line did not parse, and the status).
  HttpGuard(event_base* base, const HttpLimits& limits, std::function<bool()> healthy,
            std::function<void(std::string_view path, int status)> on_response = {});
  ~HttpGuard();
  HttpGuard(const HttpGuard&) = delete;
  HttpGuard& operator=(const HttpGuard&) = delete;

  // Puts the guard in front of http (every connection's bufferevent comes from
  // new_bufferevent) and sets evhttp's own limits, flags and methods as the server serves
  // them: evhttp's limits stay as a second line behind the guard's.
  void attach(evhttp* http);

  // evhttp_set_bevcb's callback: the socket bufferevent of a new connection (evhttp sets its
  // fd right after).
  static bufferevent* new_bufferevent(event_base* base, void* guard);

  // Pauses accepting for 100 ms on accept() errors (EMFILE...) instead of retrying in a busy
  // loop, and logs them at most once per 10 s with the number not logged.
  void watch_listener(evconnlistener* listener);
  // The listener is about to be closed.
  void forget_listener();

  // evhttp hands a request to the server: the connection is busy until its reply is sent.
  void request_started(evhttp_request* req);
  // callback(arg) runs when evhttp frees the connection of req (the client left, a write
  // failed, or the server freed it); replaces the one set before, and nullptr clears it.
  // evhttp's own close callback is the guard's: set this one instead. Call after request_started.
  void on_connection_close(evhttp_request* req, void (*callback)(void*), void* arg);
  // Closes timed-out connections; call about every 250 ms.
  void check_timeouts();
  // Shutdown: closes the connections that have no request in progress.
  void close_idle();

  size_t open_connections() const;
  // The state of the oldest `max` open connections, a line each (for logs).
  std::vector<std::string> describe_open_connections(size_t max) const;
  const HttpLimits& limits() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace crosspoint
