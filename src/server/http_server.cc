#include "server/http_server.h"

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "common/log.h"
#include "server/http_connection.h"

namespace crosspoint {

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

struct HttpServer::Impl final : HttpConnectionOwner {
  event_base* base = nullptr;
  HttpLimits limits_;
  Handler handler;
  std::function<bool()> healthy_;
  std::function<void(std::string_view, int)> on_response;
  evconnlistener* listener = nullptr;
  event* resume_event = nullptr;  // accepting again after an accept() failure
  uint64_t next_serial = 1;
  std::map<uint64_t, std::unique_ptr<HttpConnection>> connections;  // by serial: oldest first

  ~Impl() override {
    close_listener();
    if (resume_event != nullptr) event_free(resume_event);
    // Moved out first: a disconnect callback may ask how many connections are open.
    while (!connections.empty()) {
      auto node = connections.extract(connections.begin());
      node.mapped().reset();
    }
  }

  // ---- HttpConnectionOwner ----
  const HttpLimits& limits() const override { return limits_; }
  void handle(const std::shared_ptr<HttpExchange>& exchange) override { handler(exchange); }
  bool healthy() const override { return healthy_ ? healthy_() : true; }
  void count_response(std::string_view path, int status) override {
    if (on_response) on_response(path, status);
  }
  void release(HttpConnection* connection) override {
    // Out of the map before it is destroyed: its disconnect callback may look at the others.
    auto node = connections.extract(connection->serial());
    node.mapped().reset();
  }

  // One line per timeout, at most one every 10 s (a slow-client flood would fill the log).
  double last_timeout_log_s = -1e9;
  uint64_t timeouts_unlogged = 0;
  void log_timeout(std::string_view route, const std::string& what, const HttpConnection& c) override {
    const double now = now_s();
    if (now - last_timeout_log_s < 10.0) {
      ++timeouts_unlogged;
      return;
    }
    // Bytes the client sent that the server never read, and whether it was reading: a lost
    // read event would show here, not as a slow client.
    log_info("http: 408 for {}: {}; {} bytes unread in the socket, reading {}{}",
             route.empty() ? std::string_view("a request") : route, what, c.unread_in_socket(),
             c.reading() ? "on" : "off",
             timeouts_unlogged > 0 ? fmt::format(" ({} more timeouts since the last line)", timeouts_unlogged) : "");
    last_timeout_log_s = now;
    timeouts_unlogged = 0;
  }

  // ---- accepting ----
  static void on_accept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* arg) {
    Impl* self = static_cast<Impl*>(arg);
    // Streams are many small writes: without TCP_NODELAY the first SSE chunk waits behind the
    // unacknowledged response head for the client's delayed ACK (40 ms on Linux).
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // fails harmlessly on non-TCP
    bufferevent* bev = bufferevent_socket_new(self->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (bev == nullptr) {
      evutil_closesocket(fd);
      return;
    }
    const size_t n = self->connections.size();
    const auto cap = static_cast<size_t>(self->limits_.max_connections);
    const uint64_t serial = self->next_serial++;
    auto connection = std::make_unique<HttpConnection>(*self, serial, bev, /*over_cap=*/n >= cap);
    HttpConnection* c = connection.get();
    self->connections.emplace(serial, std::move(connection));
    c->start();
    if (n >= cap + kReserveConnections) {
      c->refuse({503, "too many open connections (limit " + std::to_string(cap) + ")", ""}, "");
    }
  }

  double last_accept_log_s = -1e9;
  uint64_t accept_errors_unlogged = 0;

  static void on_accept_error(evconnlistener* listener, void* arg) {
    const int error = EVUTIL_SOCKET_ERROR();
    Impl* self = static_cast<Impl*>(arg);
    // The listening socket stays readable while the error lasts: accepting again at once
    // would spin the loop. Pause 100 ms, leaving the queue to the kernel.
    evconnlistener_disable(listener);
    const timeval pause{0, 100 * 1000};
    event_add(self->resume_event, &pause);
    const double now = now_s();
    if (now - self->last_accept_log_s >= 10.0) {
      log_warning(
          "http: accept() failed: {} ({} open connections; {} more failures since the last message); "
          "pausing accepts for 100 ms",
          std::strerror(error), self->connections.size(), self->accept_errors_unlogged);
      self->last_accept_log_s = now;
      self->accept_errors_unlogged = 0;
    } else {
      ++self->accept_errors_unlogged;
    }
  }

  static void on_resume(evutil_socket_t, short, void* arg) {
    Impl* self = static_cast<Impl*>(arg);
    if (self->listener != nullptr) evconnlistener_enable(self->listener);
  }

  void close_listener() {
    if (listener != nullptr) evconnlistener_free(listener);
    listener = nullptr;
    if (resume_event != nullptr) event_del(resume_event);
  }

  // Runs fn on each connection, oldest first; fn may release the connection it is given.
  template <typename Fn>
  void for_each_connection(Fn fn) {
    std::vector<uint64_t> serials;
    serials.reserve(connections.size());
    for (const auto& [serial, c] : connections) serials.push_back(serial);
    for (uint64_t serial : serials) {
      auto it = connections.find(serial);
      if (it != connections.end()) fn(*it->second);
    }
  }
};

HttpServer::HttpServer(event_base* base, const HttpLimits& limits, Handler handler, std::function<bool()> healthy,
                       std::function<void(std::string_view, int)> on_response)
    : impl_(std::make_unique<Impl>()) {
  impl_->base = base;
  impl_->limits_ = limits;
  impl_->handler = std::move(handler);
  impl_->healthy_ = std::move(healthy);
  impl_->on_response = std::move(on_response);
  impl_->resume_event = event_new(base, -1, 0, &Impl::on_resume, impl_.get());
}

HttpServer::~HttpServer() = default;

Status HttpServer::listen(const std::string& host, int port) {
  const std::string where = host + ":" + std::to_string(port);
  evutil_addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  hints.ai_flags = EVUTIL_AI_PASSIVE | EVUTIL_AI_ADDRCONFIG;
  evutil_addrinfo* found = nullptr;
  if (evutil_getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || found == nullptr) {
    return io_error("cannot listen on " + where + " (not an address of this machine)");
  }
  impl_->close_listener();
  impl_->listener = evconnlistener_new_bind(impl_->base, &Impl::on_accept, impl_.get(),
                                            LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
                                            /*backlog=*/128, found->ai_addr, static_cast<int>(found->ai_addrlen));
  evutil_freeaddrinfo(found);
  if (impl_->listener == nullptr) {
    return io_error("cannot listen on " + where + " (address in use, or not an address of this machine)");
  }
  evconnlistener_set_error_cb(impl_->listener, &Impl::on_accept_error);
  return Status::ok();
}

int HttpServer::port() const {
  if (impl_->listener == nullptr) return -1;
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(evconnlistener_get_fd(impl_->listener), reinterpret_cast<sockaddr*>(&addr), &len) != 0) return -1;
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return -1;
}

void HttpServer::stop_listening() { impl_->close_listener(); }

void HttpServer::check_timeouts() {
  const double now = now_s();
  impl_->for_each_connection([now](HttpConnection& c) { c.check_timeouts(now); });
}

void HttpServer::close_idle() {
  impl_->for_each_connection([](HttpConnection& c) { c.close_if_idle(); });
}

size_t HttpServer::open_connections() const { return impl_->connections.size(); }

std::vector<std::string> HttpServer::describe_open_connections(size_t max) const {
  std::vector<std::string> lines;
  const double now = now_s();
  for (const auto& [serial, c] : impl_->connections) {
    if (lines.size() >= max) break;
    lines.push_back(c->describe(now));
  }
  return lines;
}

const HttpLimits& HttpServer::limits() const { return impl_->limits_; }

}  // namespace crosspoint
