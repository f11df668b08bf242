// One client socket, owned whole by this class on the event loop thread: it reads and checks
// each request head (check_request_head), reads the body by Content-Length, hands the complete
// request to the server's handler as an HttpExchange, writes the response, and keeps the
// connection for the next request (pipelined requests are served one at a time, in order) or
// closes it. Nothing else reads or writes the socket.
//   - a refused request (a bad or oversized head, a timeout, the connection cap) is answered
//     with the OpenAI error JSON and "Connection: close"; what the client still sends is read
//     and dropped for up to kLingerSeconds after the write side is shut, so it reads the error
//     instead of a connection reset;
//   - while a request is being answered the socket is still read (up to a head and a body more),
//     so a client that leaves is seen at once: the exchange's on_disconnect runs and the
//     connection is freed;
//   - the timeouts are checked by check_timeouts (the server calls it about every 250 ms).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "server/api_error.h"
#include "server/http_exchange.h"
#include "server/http_request_head.h"

struct bufferevent;

namespace crosspoint {

// What a connection needs of the server that owns it.
class HttpConnectionOwner {
 public:
  virtual ~HttpConnectionOwner() = default;
  virtual const HttpLimits& limits() const = 0;
  // A complete request to answer.
  virtual void handle(const std::shared_ptr<HttpExchange>& exchange) = 0;
  // What GET /health answers on a connection over the cap (true: 200, false: 503).
  virtual bool healthy() const = 0;
  // Every response written: the request's path ("" when its request line did not parse) and status.
  virtual void count_response(std::string_view path, int status) = 0;
  // The connection is done: the owner destroys it (its socket closes). Called last by the connection.
  virtual void release(HttpConnection* connection) = 0;
  // A 408, for the server's rate-limited log.
  virtual void log_timeout(std::string_view route, const std::string& what, const HttpConnection& connection) = 0;
};

class HttpConnection {
 public:
  static constexpr double kLingerSeconds = 2.0;

  // Takes bev (a socket bufferevent, freed with its socket in the destructor). over_cap: the
  // connection may send one request, which gets /health answered and anything else a 503.
  HttpConnection(HttpConnectionOwner& owner, uint64_t serial, bufferevent* bev, bool over_cap);
  // Runs the on_disconnect of an exchange still unanswered.
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // Starts reading requests.
  void start();
  // Answers with the error (counted under `path`) and closes.
  void refuse(const ApiError& error, std::string_view path);
  // Applies the head, body and idle timeouts and ends a finished linger; may release this.
  void check_timeouts(double now);
  // Shutdown: releases the connection if it has no request in progress (may release this).
  void close_if_idle();

  uint64_t serial() const { return serial_; }
  // The connection's state in a line, for logs.
  std::string describe(double now) const;
  // Bytes the client sent that sit in the socket unread (-1 when the socket cannot tell).
  int unread_in_socket() const;
  bool reading() const;

  // HttpExchange's calls (the exchange is this connection's current one).
  void respond(HttpExchange& exchange, int status, std::string_view body, std::string_view content_type);
  void start_stream(HttpExchange& exchange, int status, const HttpHeaders& headers);
  void send_chunk(HttpExchange& exchange, std::string_view data);
  void end_stream(HttpExchange& exchange);

 private:
  enum class Phase {
    kHead,      // reading a request head (or idle between requests)
    kBody,      // reading a body
    kHandling,  // the handler has the request
    kClosing,   // writing the last bytes, then (lingering) dropping what the client sends
  };

  static void on_read(bufferevent* bev, void* arg);
  static void on_write(bufferevent* bev, void* arg);
  static void on_event(bufferevent* bev, short what, void* arg);

  // Parses and dispatches what the input buffer holds, as far as it goes.
  void process_input();
  bool read_head();  // whether it moved on (a head read, or refused)
  bool read_body();
  void dispatch();
  void answer_over_cap(const RequestHead& head);
  // Writes the last bytes and closes once they are out (lingering after a refusal).
  void close_after(std::string_view bytes, bool linger);
  // The response to the current exchange is complete: next request, or close.
  void finish_exchange();
  // Releases the connection (deletes this): the last call of any member function.
  void close_now();
  void write(std::string_view bytes);
  size_t output_length() const;
  // The bytes of the head being read (for labels and logs).
  std::string head_so_far() const;

  HttpConnectionOwner& owner_;
  const uint64_t serial_;
  bufferevent* bev_;
  const bool over_cap_;
  Phase phase_ = Phase::kHead;
  bool head_started_ = false;  // phase kHead: a byte of the next head has arrived
  size_t head_scanned_ = 0;    // phase kHead: the head's end is not before this offset
  HttpRequest request_;        // phase kBody: the request whose body is read
  uint64_t body_length_ = 0;
  std::string route_;                       // the request line's path of the request in progress (for counts)
  bool keep_alive_ = true;                  // of the request in progress
  bool chunked_ = false;                    // the stream in progress is chunked
  std::shared_ptr<HttpExchange> exchange_;  // phase kHandling
  bool processing_ = false;                 // inside process_input
  bool linger_ = false;                     // phase kClosing: shut the write side and drop input once written
  double linger_until_s_ = 0;               // > 0: lingering until then
  double opened_s_ = 0;
  double phase_start_s_ = 0;  // first byte of the head, or end of the head (body)
  double idle_since_s_ = 0;   // the last time the connection had nothing in progress
};

}  // namespace crosspoint
