// The server's HTTP/1.1 layer on libevent (event loop, evconnlistener, bufferevents): it
// accepts connections and gives each socket one owner, an HttpConnection (http_connection.h),
// which reads, checks and answers its requests; complete requests go to the handler as
// HttpExchanges (http_exchange.h). Everything runs on the event loop's thread.
//   - the head must end within header_timeout_s of its first byte and hold at most
//     max_header_bytes (408 / 431), the body must arrive within body_timeout_s (408), and a
//     connection with no request in progress is closed after idle_timeout_s;
//   - request smuggling, malformed heads, a body over max_body_bytes (413, before the body is
//     read) and a missing or wrong API key (401, before the body) are refused by
//     check_request_head (http_request_head.h);
//   - at most max_connections connections are served; up to kReserveConnections more may send
//     one request, which gets /health answered and anything else a 503; beyond those a new
//     connection gets a 503 at once;
//   - accept() failures (EMFILE...) pause accepting for 100 ms instead of retrying in a busy
//     loop, and are logged at most once per 10 s with the number not logged.
// Each refusal is an OpenAI error JSON with "Connection: close", and the connection is closed.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "server/http_exchange.h"
#include "server/http_request_head.h"

struct event_base;

namespace crosspoint {

class HttpServer {
 public:
  static constexpr int kReserveConnections = 64;

  using Handler = std::function<void(const std::shared_ptr<HttpExchange>& exchange)>;

  // healthy: what GET /health answers on a connection over the cap (200 or 503).
  // on_response: told of every response written (the request's path, or "" when its request
  // line did not parse, and the status), the handler's and the layer's own refusals alike.
  HttpServer(event_base* base, const HttpLimits& limits, Handler handler, std::function<bool()> healthy,
             std::function<void(std::string_view path, int status)> on_response = {});
  // Closes the listener and every connection (the on_disconnect of unanswered exchanges runs).
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens (io_error naming host:port when it cannot); port 0 picks a free port.
  Status listen(const std::string& host, int port);
  // The bound port, or -1.
  int port() const;
  // Stops accepting: the listening socket closes; open connections stay.
  void stop_listening();

  // Applies the timeouts; call about every 250 ms.
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
