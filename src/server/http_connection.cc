#include "server/http_connection.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "common/log.h"

namespace crosspoint {

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::string seconds(double s) {
  std::string text = std::to_string(s);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text + " s";
}

bool has_token(std::string_view list, std::string_view token) {
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string_view::npos) comma = list.size();
    std::string_view item = list.substr(pos, comma - pos);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (item.size() == token.size() && std::equal(item.begin(), item.end(), token.begin(), [](char a, char b) {
          return (a >= 'A' && a <= 'Z' ? a - 'A' + 'a' : a) == b;
        })) {
      return true;
    }
    pos = comma + 1;
  }
  return false;
}

// The request's headers, from a head check_request_head accepted.
HttpRequest parse_request(std::string_view head, const RequestHead& checked) {
  HttpRequest request;
  request.method = checked.method;
  request.path = checked.path;
  size_t pos = 0;
  bool first = true;
  while (pos < head.size()) {
    size_t newline = head.find('\n', pos);
    if (newline == std::string_view::npos) newline = head.size();
    std::string_view line = head.substr(pos, newline - pos);
    pos = newline + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;
    if (first) {
      first = false;
      const size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
      request.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
      request.minor_version = line.substr(sp2 + 1) == "HTTP/1.0" ? 0 : 1;
      continue;
    }
    const size_t colon = line.find(':');
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    request.headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  }
  return request;
}

// HTTP/1.1 keeps the connection unless the client says "close"; HTTP/1.0 closes it unless the
// client says "keep-alive".
bool wants_keep_alive(const HttpRequest& request) {
  const std::string_view connection = request.header("Connection").value_or("");
  if (request.minor_version == 0) return has_token(connection, "keep-alive");
  return !has_token(connection, "close");
}

}  // namespace

HttpConnection::HttpConnection(HttpConnectionOwner& owner, uint64_t serial, bufferevent* bev, bool over_cap)
    : owner_(owner), serial_(serial), bev_(bev), over_cap_(over_cap) {
  opened_s_ = idle_since_s_ = now_s();
  bufferevent_setcb(bev_, &HttpConnection::on_read, &HttpConnection::on_write, &HttpConnection::on_event, this);
  // Enough for one more head and body behind the request in progress; reading stops beyond.
  const HttpLimits& limits = owner_.limits();
  bufferevent_setwatermark(bev_, EV_READ, 0, limits.max_header_bytes + limits.max_body_bytes + 4096);
}

HttpConnection::~HttpConnection() {
  if (exchange_ != nullptr) {
    exchange_->connection_ = nullptr;
    std::function<void()> callback = std::move(exchange_->on_disconnect_);
    exchange_.reset();
    if (callback) callback();
  }
  bufferevent_free(bev_);
}

void HttpConnection::start() { bufferevent_enable(bev_, EV_READ | EV_WRITE); }

// ---- reading ---------------------------------------------------------------------------------

void HttpConnection::on_read(bufferevent*, void* arg) {
  auto* c = static_cast<HttpConnection*>(arg);
  if (c->phase_ == Phase::kClosing) {
    evbuffer* input = bufferevent_get_input(c->bev_);
    evbuffer_drain(input, evbuffer_get_length(input));  // a refused request's rest: dropped
    return;
  }
  c->process_input();
}

void HttpConnection::process_input() {
  if (processing_) return;  // a handler answered inside dispatch: the loop below goes on
  processing_ = true;
  for (bool moved = true; moved;) {
    if (phase_ == Phase::kHead) {
      moved = read_head();
    } else if (phase_ == Phase::kBody) {
      moved = read_body();
    } else {
      moved = false;
    }
  }
  processing_ = false;
}

std::string HttpConnection::head_so_far() const {
  evbuffer* input = bufferevent_get_input(bev_);
  const size_t n = std::min(evbuffer_get_length(input), owner_.limits().max_header_bytes + 1);
  std::string head(n, '\0');
  evbuffer_copyout(input, head.data(), n);
  return head;
}

bool HttpConnection::read_head() {
  evbuffer* input = bufferevent_get_input(bev_);
  const size_t length = evbuffer_get_length(input);
  if (length == 0) return false;
  const double now = now_s();
  if (!head_started_) {
    head_started_ = true;
    head_scanned_ = 0;
    phase_start_s_ = now;
  }
  const size_t max_header_bytes = owner_.limits().max_header_bytes;
  // A head may end at offset max_header_bytes at most: no need to look further.
  const size_t n = std::min(length, max_header_bytes);
  const auto* data = reinterpret_cast<const char*>(evbuffer_pullup(input, static_cast<ev_ssize_t>(n)));
  const std::string_view bytes(data, n);
  if (bytes[0] == '\n' || (bytes.size() >= 2 && bytes[0] == '\r' && bytes[1] == '\n')) {
    refuse(bad_request("a request must begin with its request line"), "");
    return true;
  }
  // The head ends at the first empty line (CRLF CRLF, or bare LFs).
  size_t end = std::string_view::npos;
  for (size_t i = head_scanned_; i < bytes.size(); ++i) {
    if (bytes[i] != '\n') continue;
    if (i + 1 < bytes.size() && bytes[i + 1] == '\n') {
      end = i + 2;
      break;
    }
    if (i + 2 < bytes.size() && bytes[i + 1] == '\r' && bytes[i + 2] == '\n') {
      end = i + 3;
      break;
    }
  }
  if (end == std::string_view::npos) {
    if (length > max_header_bytes) {
      refuse({431, "the request head is over " + std::to_string(max_header_bytes) + " bytes", ""},
             request_line_path(bytes));
      return true;
    }
    head_scanned_ = bytes.size() > 3 ? bytes.size() - 3 : 0;
    return false;
  }
  const std::string head(bytes.substr(0, end));
  evbuffer_drain(input, end);
  head_started_ = false;
  RequestHead checked;
  if (auto error = check_request_head(head, owner_.limits(), &checked)) {
    refuse(*error, request_line_path(head));
    return true;
  }
  if (over_cap_) {
    answer_over_cap(checked);
    return true;
  }
  request_ = parse_request(head, checked);
  route_ = std::string(request_line_path(head));
  // After a response to HEAD (a length, no body) the connection closes: a client that read the
  // length as a body to wait for cannot take the next response for it.
  keep_alive_ = wants_keep_alive(request_) && request_.method != "HEAD";
  body_length_ = checked.content_length;
  phase_start_s_ = idle_since_s_ = now;
  if (body_length_ == 0) {
    dispatch();
    return true;
  }
  phase_ = Phase::kBody;
  // A client that asked waits for this before it sends the body (curl does for large bodies).
  const std::optional<std::string_view> expect = request_.header("Expect");
  if (expect && request_.minor_version == 1 && evbuffer_get_length(input) == 0) write("HTTP/1.1 100 Continue\r\n\r\n");
  return true;
}

bool HttpConnection::read_body() {
  evbuffer* input = bufferevent_get_input(bev_);
  if (evbuffer_get_length(input) < body_length_) return false;
  request_.body.resize(body_length_);
  evbuffer_remove(input, request_.body.data(), body_length_);
  dispatch();
  return true;
}

void HttpConnection::dispatch() {
  phase_ = Phase::kHandling;
  exchange_ = std::make_shared<HttpExchange>(this, std::move(request_));
  request_ = HttpRequest{};
  const std::shared_ptr<HttpExchange> exchange = exchange_;
  owner_.handle(exchange);
}

// A connection over the cap may ask for /health and nothing else.
void HttpConnection::answer_over_cap(const RequestHead& head) {
  if ((head.method == "GET" || head.method == "HEAD") && head.path == "/health") {
    const bool ok = owner_.healthy();
    owner_.count_response(head.path, ok ? 200 : 503);
    close_after(std::string(ok ? "HTTP/1.1 200 OK" : "HTTP/1.1 503 Service Unavailable") +
                    "\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
                /*linger=*/true);
    return;
  }
  refuse({503, "too many open connections (limit " + std::to_string(owner_.limits().max_connections) + ")", ""},
         head.path);
}

void HttpConnection::refuse(const ApiError& error, std::string_view path) {
  log_debug("http: refused a request ({}): {}", error.http_status, error.message);
  owner_.count_response(path, error.http_status);
  close_after(http_error_response(error), /*linger=*/true);
}

// ---- writing ---------------------------------------------------------------------------------

void HttpConnection::write(std::string_view bytes) { bufferevent_write(bev_, bytes.data(), bytes.size()); }

size_t HttpConnection::output_length() const { return evbuffer_get_length(bufferevent_get_output(bev_)); }

void HttpConnection::respond(HttpExchange& exchange, int status, std::string_view body, std::string_view content_type) {
  if (&exchange != exchange_.get()) return;
  const HttpRequest& request = exchange.request();
  HttpHeaders headers;
  if (!content_type.empty()) headers.emplace_back("Content-Type", std::string(content_type));
  write(http_response_head(request.minor_version, status, headers, HttpBodyFraming::kContentLength, body.size(),
                           keep_alive_));
  if (request.method != "HEAD") write(body);
  owner_.count_response(request.path, status);
  finish_exchange();
}

void HttpConnection::start_stream(HttpExchange& exchange, int status, const HttpHeaders& headers) {
  if (&exchange != exchange_.get()) return;
  const HttpRequest& request = exchange.request();
  // HTTP/1.0 has no chunked coding: the stream ends with the connection.
  chunked_ = request.minor_version >= 1;
  if (!chunked_) keep_alive_ = false;
  write(http_response_head(request.minor_version, status, headers,
                           chunked_ ? HttpBodyFraming::kChunked : HttpBodyFraming::kToClose, 0, keep_alive_));
  owner_.count_response(request.path, status);
}

void HttpConnection::send_chunk(HttpExchange& exchange, std::string_view data) {
  if (&exchange != exchange_.get()) return;
  if (chunked_) {
    write(http_chunk(data));
  } else {
    write(data);
  }
}

void HttpConnection::end_stream(HttpExchange& exchange) {
  if (&exchange != exchange_.get()) return;
  if (chunked_) write(kHttpLastChunk);
  finish_exchange();
}

void HttpConnection::finish_exchange() {
  exchange_->connection_ = nullptr;
  exchange_->on_disconnect_ = nullptr;
  exchange_.reset();
  chunked_ = false;
  route_.clear();
  idle_since_s_ = now_s();
  if (!keep_alive_) {
    close_after("", /*linger=*/false);
    return;
  }
  phase_ = Phase::kHead;
  process_input();  // the next pipelined request, if it is there
}

void HttpConnection::close_after(std::string_view bytes, bool linger) {
  phase_ = Phase::kClosing;
  linger_ = linger;
  evbuffer* input = bufferevent_get_input(bev_);
  evbuffer_drain(input, evbuffer_get_length(input));
  write(bytes);
  // Never empty here: a refusal has its response, and finish_exchange has just written one.
  // on_write runs once it is out.
}

void HttpConnection::on_write(bufferevent*, void* arg) {
  auto* c = static_cast<HttpConnection*>(arg);
  if (c->phase_ != Phase::kClosing || c->linger_until_s_ > 0) return;
  if (!c->linger_) return c->close_now();
  // The response is out: shut the write side, drop what the client still sends for a while.
  const evutil_socket_t fd = bufferevent_getfd(c->bev_);
  if (fd >= 0) ::shutdown(fd, SHUT_WR);
  bufferevent_disable(c->bev_, EV_WRITE);
  c->linger_until_s_ = now_s() + kLingerSeconds;
}

void HttpConnection::on_event(bufferevent*, short what, void* arg) {
  auto* c = static_cast<HttpConnection*>(arg);
  if ((what & BEV_EVENT_ERROR) != 0) return c->close_now();
  if ((what & BEV_EVENT_EOF) == 0) return;
  // The client closed (or shut its write side). A request still being answered is abandoned;
  // otherwise what is being written goes out first.
  if (c->phase_ == Phase::kHandling || c->output_length() == 0 || c->linger_until_s_ > 0) return c->close_now();
  bufferevent_disable(c->bev_, EV_READ);
  if (c->phase_ != Phase::kClosing) {
    c->phase_ = Phase::kClosing;
    evbuffer* input = bufferevent_get_input(c->bev_);
    evbuffer_drain(input, evbuffer_get_length(input));
  }
  c->linger_ = false;
}

void HttpConnection::close_now() { owner_.release(this); }

// ---- timeouts and shutdown -------------------------------------------------------------------

void HttpConnection::check_timeouts(double now) {
  const HttpLimits& limits = owner_.limits();
  switch (phase_) {
    case Phase::kClosing:
      if (linger_until_s_ > 0 && now >= linger_until_s_) close_now();
      return;
    case Phase::kHandling: return;
    case Phase::kBody:
      if (now - phase_start_s_ > limits.body_timeout_s) {
        const size_t received = std::min<size_t>(evbuffer_get_length(bufferevent_get_input(bev_)), body_length_);
        owner_.log_timeout(route_,
                           fmt::format("the body did not arrive within {} ({} of {} bytes)",
                                       seconds(limits.body_timeout_s), received, body_length_),
                           *this);
        refuse({408, "the request body did not arrive within " + seconds(limits.body_timeout_s), ""}, route_);
      }
      return;
    case Phase::kHead:
      if (head_started_) {
        if (now - phase_start_s_ > limits.header_timeout_s) {
          const std::string head = head_so_far();
          owner_.log_timeout(request_line_path(head),
                             fmt::format("the head did not arrive within {} ({} bytes)",
                                         seconds(limits.header_timeout_s), head.size()),
                             *this);
          refuse({408, "the request head did not arrive within " + seconds(limits.header_timeout_s), ""},
                 request_line_path(head));
        }
      } else if (output_length() > 0) {
        idle_since_s_ = now;  // a response still going out: not idle
      } else if (now - idle_since_s_ > limits.idle_timeout_s) {
        log_debug("http: closing a connection idle for {:.0f} s", now - idle_since_s_);
        close_now();
      }
      return;
  }
}

void HttpConnection::close_if_idle() {
  if (phase_ != Phase::kHead || head_started_) return;
  if (output_length() == 0) return close_now();
  close_after("", /*linger=*/false);
}

// ---- description -----------------------------------------------------------------------------

int HttpConnection::unread_in_socket() const {
  const evutil_socket_t fd = bufferevent_getfd(bev_);
  int unread = 0;
  if (fd >= 0 && ::ioctl(fd, FIONREAD, &unread) != 0) unread = -1;
  return unread;
}

bool HttpConnection::reading() const { return (bufferevent_get_enabled(bev_) & EV_READ) != 0; }

std::string HttpConnection::describe(double now) const {
  const size_t input = evbuffer_get_length(bufferevent_get_input(bev_));
  std::string phase;
  switch (phase_) {
    case Phase::kHead: phase = head_started_ ? fmt::format("head {} bytes", input) : "between requests"; break;
    case Phase::kBody:
      phase = fmt::format("body {} of {} bytes", std::min<size_t>(input, body_length_), body_length_);
      break;
    case Phase::kHandling: phase = "request in progress"; break;
    case Phase::kClosing: phase = linger_until_s_ > 0 ? "closing (lingering)" : "closing"; break;
  }
  const short enabled = bufferevent_get_enabled(bev_);
  return fmt::format(
      "connection {} (fd {}) open {:.0f} s: {}; reading {}, writing {}; {} bytes unread in the socket, {} in the "
      "input buffer, {} in the output buffer",
      serial_, static_cast<int>(bufferevent_getfd(bev_)), now - opened_s_, phase,
      (enabled & EV_READ) != 0 ? "on" : "off", (enabled & EV_WRITE) != 0 ? "on" : "off", unread_in_socket(), input,
      output_length());
}

}  // namespace crosspoint
