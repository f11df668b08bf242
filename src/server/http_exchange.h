// One request on a connection and the handle to answer it. HttpConnection makes an
// HttpExchange for each complete request (head checked, body read) and hands it to the
// server's handler, which answers at once or later, from the event loop thread only: with one
// complete response (respond) or a stream (start_stream, send_chunk..., end_stream). The
// handler may keep the shared_ptr past the connection: once the client has left (or the
// response is complete) the exchange is detached, connected() is false and every call is a
// no-op, so a response produced on another thread and handed to the loop never touches a freed
// connection. on_disconnect runs if the connection closes before the response is complete.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "server/http_response.h"

namespace crosspoint {

class HttpConnection;

struct HttpRequest {
  std::string method;
  std::string target;  // as sent
  std::string path;    // the target's path, without query
  int minor_version = 1;
  HttpHeaders headers;  // in order, names as sent
  std::string body;

  // The first header of that name (case-insensitive), if any.
  std::optional<std::string_view> header(std::string_view name) const;
};

class HttpExchange {
 public:
  HttpExchange(HttpConnection* connection, HttpRequest request);
  HttpExchange(const HttpExchange&) = delete;
  HttpExchange& operator=(const HttpExchange&) = delete;

  const HttpRequest& request() const { return request_; }
  // Moves the body out (a request kept for a long stream need not keep its body).
  std::string take_body() { return std::move(request_.body); }
  // The client is still there and the response is not complete.
  bool connected() const { return connection_ != nullptr; }

  // A complete response (Content-Length; no body to a HEAD request). content_type "" sends none.
  void respond(int status, std::string_view body, std::string_view content_type = {});
  // A streamed response: its head now, then each send_chunk at once, then end_stream.
  void start_stream(int status, const HttpHeaders& headers);
  void send_chunk(std::string_view data);
  void end_stream();

  // Runs (once, on the loop thread) if the connection closes before the response is complete;
  // replaces the one set before, and an empty function clears it.
  void on_disconnect(std::function<void()> callback) { on_disconnect_ = std::move(callback); }

 private:
  friend class HttpConnection;
  HttpConnection* connection_;  // null once detached
  HttpRequest request_;
  std::function<void()> on_disconnect_;
};

}  // namespace crosspoint
