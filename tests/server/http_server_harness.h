// The HTTP layer without the engine: HttpServer (http_server.h) set up as OpenAiServer sets it,
// listening on loopback ports, with a handler that routes as OpenAiServer::Impl::handle does
// and answers the POST routes by running the request parsers on the body (a 200 stands for a
// request that would go to the engine). OpenAiServer itself needs an Engine, so this is the
// largest in-process unit of the layer. exchange() sends raw bytes on one connection, shuts
// the write side and reads the answer until the server closes; answer_problem() says what is
// wrong with an answer. Used by tests/fuzz/fuzz_http_request.cc and the server's tests.
#pragma once

#include <event2/event.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/http_server.h"
#include "server/openai_request.h"
#include "server/tokenize_request.h"

namespace crosspoint::testing {

class HttpServerHarness {
 public:
  static constexpr const char* kApiKey = "sk-harness";
  static constexpr double kDeadlineSeconds = 5;

  // Two listeners: index 0 without an API key, 1 with kApiKey. Small limits (2048-byte bodies,
  // 1024-byte heads) so that short inputs reach the 413 and 431 paths.
  HttpServerHarness() {
    base_ = event_base_new();
    for (int i = 0; i < 2; ++i) {
      Listener& l = listeners_[i];
      l.limits.max_body_bytes = 2048;
      l.limits.max_header_bytes = 1024;
      if (i == 1) l.limits.api_key = kApiKey;
      l.http = std::make_unique<HttpServer>(
          base_, l.limits, [&l](const std::shared_ptr<HttpExchange>& exchange) { on_request(l, *exchange); },
          [] { return true; });
      if (!l.http->listen("127.0.0.1", 0).is_ok()) continue;  // port stays 0; exchange() reports it
      l.port = l.http->port();
    }
    // The server's timeout timer (every 250 ms there).
    timer_ = event_new(base_, -1, EV_PERSIST, &HttpServerHarness::on_timer, this);
    const timeval period{0, 50 * 1000};
    event_add(timer_, &period);
  }

  ~HttpServerHarness() {
    event_free(timer_);
    for (Listener& l : listeners_) l.http.reset();
    event_base_free(base_);
  }

  HttpServerHarness(const HttpServerHarness&) = delete;
  HttpServerHarness& operator=(const HttpServerHarness&) = delete;

  struct Exchange {
    std::string answer;  // every byte the server sent
    // Empty when all went well; else what did not: the connection still open
    // kDeadlineSeconds after the client's last byte (a hang), or still counted open by the
    // server kDeadlineSeconds after the client closed (a leak), or a socket failure here.
    std::string failure;
  };

  // One connection to listener `with_api_key ? 1 : 0`: sends `request`, shuts the write side,
  // reads until the server closes, then resets the connection.
  Exchange exchange(std::string_view request, bool with_api_key) {
    Listener& listener = listeners_[with_api_key ? 1 : 0];
    Exchange result;
    if (listener.port == 0) return {"", "the harness could not listen on 127.0.0.1"};
    Client client;
    client.to_send = request;
    client.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (client.fd < 0) return {"", "socket() failed"};
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(listener.port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(client.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 && errno != EINPROGRESS) {
      ::close(client.fd);
      return {"", "connect() to the harness failed"};
    }
    event* write_event = event_new(base_, client.fd, EV_WRITE | EV_PERSIST, &on_client_write, &client);
    event* read_event = event_new(base_, client.fd, EV_READ | EV_PERSIST, &on_client_read, &client);
    event_add(write_event, nullptr);
    event_add(read_event, nullptr);
    const double deadline = now_s() + kDeadlineSeconds;
    while (!client.read_done && result.failure.empty()) {
      if (client.write_done) event_del(write_event);
      if (now_s() > deadline) {
        result.failure =
            "the connection stayed open " + std::to_string(kDeadlineSeconds) + " s after the request ended (hang)";
      } else {
        event_base_loop(base_, EVLOOP_ONCE);
      }
    }
    event_free(write_event);
    event_free(read_event);
    // Reset, not FIN: no TIME_WAIT left behind by many connections.
    const linger abort_close{1, 0};
    setsockopt(client.fd, SOL_SOCKET, SO_LINGER, &abort_close, sizeof(abort_close));
    ::close(client.fd);
    // The server frees the connection when it sees the close (a lingering one at the latest
    // when its linger ends, in check_timeouts).
    const double close_deadline = now_s() + kDeadlineSeconds;
    const auto sweep = [&] {
      if (sweep_) listener.http->check_timeouts();
    };
    for (sweep(); listener.http->open_connections() > 0; sweep()) {
      if (now_s() > close_deadline) {
        if (result.failure.empty()) result.failure = "the server still counts a connection after it closed";
        break;
      }
      event_base_loop(base_, EVLOOP_ONCE);
    }
    result.answer = std::move(client.answer);
    return result;
  }

  // Whether the server's timeouts (check_timeouts, every 50 ms here) run: without them, only
  // what the server releases as it sees a close is released.
  void set_sweep(bool on) { sweep_ = on; }

  // The descriptors this process has open.
  static int open_descriptors() {
    int n = 0;
    if (DIR* dir = ::opendir("/proc/self/fd")) {
      while (::readdir(dir) != nullptr) ++n;
      ::closedir(dir);
    }
    return n;
  }

  // Empty when `answer` is a sequence of HTTP/1.x responses, each error (>= 400) the OpenAI
  // error JSON with its status as "code"; else what is wrong.
  static std::string answer_problem(std::string_view answer) {
    std::string_view rest = answer;
    while (!rest.empty()) {
      const size_t head_end = rest.find("\r\n\r\n");
      if (rest.substr(0, 7) != "HTTP/1." || head_end == std::string_view::npos || head_end < 12) {
        return "the answer is not an HTTP response";
      }
      const std::string_view head = rest.substr(0, head_end + 2);
      rest.remove_prefix(head_end + 4);
      const int status = std::atoi(std::string(head.substr(9, 3)).c_str());
      if (status < 100 || status > 599) return "a response with an invalid status";
      size_t content_length = 0;
      bool has_length = false;
      for (size_t pos = head.find("\r\n") + 2; pos < head.size();) {
        const size_t end = head.find("\r\n", pos);
        const std::string_view line = head.substr(pos, end - pos);
        pos = end + 2;
        const size_t colon = line.find(':');
        if (colon == std::string_view::npos) return "a malformed response header";
        std::string name(line.substr(0, colon));
        for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        if (name == "content-length") {
          content_length = std::strtoull(std::string(line.substr(colon + 1)).c_str(), nullptr, 10);
          has_length = true;
        } else if (name == "transfer-encoding") {
          return "a chunked response (no route streams here)";
        }
      }
      // Without a Content-Length (a 100 Continue, a stream to HTTP/1.0) the body runs to the close.
      if (!has_length) content_length = rest.size();
      if (rest.size() < content_length) {
        // A response to HEAD carries the length and no body; only the last one can be told
        // apart here (a later response would be read as this body, and fail its checks).
        if (!rest.empty()) return "a response shorter than its Content-Length";
        return "";
      }
      const std::string_view body = rest.substr(0, content_length);
      rest.remove_prefix(content_length);
      if (status >= 400) {
        const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
        const bool openai_shape = j.is_object() && j.contains("error") && j["error"].is_object() &&
                                  j["error"].contains("message") && j["error"]["message"].is_string() &&
                                  j["error"].contains("code") && j["error"]["code"] == status;
        if (!openai_shape) return "an error response that is not the OpenAI error JSON";
      }
    }
    return "";
  }

 private:
  struct Listener {
    HttpLimits limits;
    std::unique_ptr<HttpServer> http;
    int port = 0;
  };

  struct Client {
    int fd = -1;
    std::string_view to_send;
    bool write_done = false;
    bool read_done = false;
    std::string answer;
  };

  static double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  static void reply(HttpExchange& exchange, int status, const std::string& body) {
    exchange.respond(status, body, "application/json");
  }
  static void reply_error(HttpExchange& exchange, const ApiError& error) {
    reply(exchange, error.http_status, error.to_json());
  }

  // The routes of OpenAiServer::Impl::handle, the request parsers standing in for the engine.
  static void on_request(Listener& listener, HttpExchange& req) {
    const std::string& path = req.request().path;
    const std::string& method = req.request().method;
    if (path == "/health") return reply(req, 200, "");
    if (!listener.limits.api_key.empty()) {
      const std::optional<std::string_view> auth = req.request().header("Authorization");
      if (!auth || !bearer_matches(*auth, listener.limits.api_key)) {
        return reply_error(req, {401, "invalid or missing API key", ""});
      }
    }
    if (path == "/metrics" || path == "/v1/models") return reply(req, 200, "{}");
    const bool known_post =
        path == "/v1/completions" || path == "/v1/chat/completions" || path == "/tokenize" || path == "/detokenize";
    if (!known_post) return reply_error(req, {404, "route " + path + " not found", ""});
    if (method != "POST") return reply_error(req, {405, "use POST for " + path, ""});
    const std::string& body = req.request().body;
    if (body.size() > listener.limits.max_body_bytes) return reply_error(req, {413, "body over the limit", ""});
    std::optional<ApiError> error;
    if (path == "/tokenize") {
      TokenizeRequest request;
      error = parse_tokenize_request(body, &request);
    } else if (path == "/detokenize") {
      DetokenizeRequest request;
      error = parse_detokenize_request(body, /*vocab_size=*/49152, &request);
    } else {
      OpenAiRequest request;
      error = parse_openai_request(
          body, path == "/v1/completions" ? ApiEndpoint::kCompletions : ApiEndpoint::kChatCompletions, &request);
    }
    if (error) return reply_error(req, *error);
    reply(req, 200, "{\"object\":\"accepted\"}");
  }

  static void on_timer(evutil_socket_t, short, void* arg) {
    auto* self = static_cast<HttpServerHarness*>(arg);
    if (!self->sweep_) return;
    for (Listener& l : self->listeners_) l.http->check_timeouts();
  }

  static void on_client_write(evutil_socket_t fd, short, void* arg) {
    Client* c = static_cast<Client*>(arg);
    while (!c->to_send.empty()) {
      const ssize_t n = ::send(fd, c->to_send.data(), c->to_send.size(), MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) {  // the server closed (after refusing the request): nothing more to send
        c->to_send = {};
        break;
      }
      c->to_send.remove_prefix(static_cast<size_t>(n));
    }
    ::shutdown(fd, SHUT_WR);
    c->write_done = true;
  }

  static void on_client_read(evutil_socket_t fd, short, void* arg) {
    Client* c = static_cast<Client*>(arg);
    char buf[16384];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      c->answer.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      c->read_done = true;  // closed (or reset after a refusal)
    }
  }

  event_base* base_ = nullptr;
  event* timer_ = nullptr;
  bool sweep_ = true;
  Listener listeners_[2];
};

}  // namespace crosspoint::testing
