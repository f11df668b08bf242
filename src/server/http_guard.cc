#include "server/http_guard.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "common/log.h"

namespace crosspoint {

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// RFC 9110 tchar: the characters of a method or a header name.
bool is_token_char(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != '\0';
}

bool is_token(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_token_char); }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The methods evhttp is set to accept (openai_server.cc); it answers any other with its own page.
bool is_allowed_method(std::string_view m) {
  return m == "GET" || m == "POST" || m == "HEAD" || m == "PUT" || m == "DELETE" || m == "OPTIONS" || m == "PATCH";
}

std::string_view path_of_target(std::string_view target) {
  if (target == "*") return "*";
  for (std::string_view scheme : {"http://", "https://"}) {
    if (target.size() >= scheme.size() && lower(target.substr(0, scheme.size())) == scheme) {
      const size_t slash = target.find('/', scheme.size());
      target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
      break;
    }
  }
  const size_t end = target.find_first_of("?#");
  return end == std::string_view::npos ? target : target.substr(0, end);
}

}  // namespace

bool bearer_matches(std::string_view authorization, std::string_view key) {
  const std::string expected = "Bearer " + std::string(key);
  // Every byte of the expected value is compared whatever the input's length; only the
  // key's length (not secret in any useful way) decides the time.
  unsigned char diff = authorization.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    const unsigned char a = i < authorization.size() ? static_cast<unsigned char>(authorization[i]) : 0;
    diff |= static_cast<unsigned char>(a ^ static_cast<unsigned char>(expected[i]));
  }
  return diff == 0;
}

std::optional<ApiError> check_request_head(std::string_view head, const HttpLimits& limits, RequestHead* out) {
  std::vector<std::string_view> lines;
  for (size_t pos = 0; pos < head.size();) {
    size_t newline = head.find('\n', pos);
    if (newline == std::string_view::npos) newline = head.size();
    std::string_view line = head.substr(pos, newline - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    pos = newline + 1;
  }
  if (lines.size() < 2 || !lines.back().empty()) return bad_request("the request head is incomplete");
  lines.pop_back();
  for (std::string_view line : lines) {
    for (char c : line) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && c != '\t') || u == 0x7f) return bad_request("the request head holds a control character");
    }
  }

  // Request line: METHOD SP target SP HTTP/1.x
  const std::string_view request_line = lines[0];
  const size_t sp1 = request_line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : request_line.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos ||
      request_line.find(' ', sp2 + 1) != std::string_view::npos) {
    return bad_request("malformed request line (expected 'METHOD target HTTP/1.1')");
  }
  const std::string_view method = request_line.substr(0, sp1);
  const std::string_view target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = request_line.substr(sp2 + 1);
  if (!is_token(method) || target.empty() || target.find('\t') != std::string_view::npos) {
    return bad_request("malformed request line (expected 'METHOD target HTTP/1.1')");
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return bad_request("unsupported HTTP version '" + std::string(version.substr(0, 16)) + "' (HTTP/1.1 or 1.0)");
  }
  if (!is_allowed_method(method)) {
    return ApiError{405, "method " + std::string(method.substr(0, 16)) + " is not allowed", ""};
  }
  if (evhttp_uri* uri = evhttp_uri_parse_with_flags(std::string(target).c_str(), EVHTTP_URI_NONCONFORMANT)) {
    evhttp_uri_free(uri);
  } else {
    return bad_request("malformed request target");
  }

  int num_content_length = 0, num_authorization = 0;
  uint64_t content_length = 0;
  bool has_transfer_encoding = false;
  std::string transfer_encoding, expect;
  std::string_view authorization;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    if (line.front() == ' ' || line.front() == '\t') return bad_request("folded header lines are not accepted");
    const size_t colon = line.find(':');
    // No whitespace between the name and the colon: "Content-Length : 5" is a classic of
    // request smuggling (one parser reads the header, another ignores it).
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) {
      return bad_request("malformed header line");
    }
    const std::string name = lower(line.substr(0, colon));
    const std::string_view value = trim_ows(line.substr(colon + 1));
    if (name == "content-length") {
      if (++num_content_length > 1) return bad_request("duplicated Content-Length headers");
      if (value.empty() || value.size() > 18 ||
          !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return bad_request("Content-Length must be a decimal number of bytes");
      }
      content_length = std::stoull(std::string(value));
    } else if (name == "transfer-encoding") {
      has_transfer_encoding = true;
      transfer_encoding = lower(value);
    } else if (name == "authorization") {
      ++num_authorization;
      authorization = value;
    } else if (name == "expect") {
      expect = lower(value);
    }
  }
  if (has_transfer_encoding && num_content_length > 0) {
    return bad_request("a request must not carry both Content-Length and Transfer-Encoding");
  }
  if (has_transfer_encoding) {
    if (transfer_encoding == "chunked") {
      return ApiError{411, "chunked request bodies are not accepted: send the body with a Content-Length", ""};
    }
    return bad_request("unsupported Transfer-Encoding");
  }
  if (!expect.empty() && expect != "100-continue") return ApiError{417, "unsupported Expect header", ""};
  const std::string_view path = path_of_target(target);
  if (!limits.api_key.empty() && path != "/health") {
    // Checked before the body is read: an unauthenticated client cannot make the server
    // buffer anything.
    if (num_authorization != 1 || !bearer_matches(authorization, limits.api_key)) {
      return ApiError{401, "invalid or missing API key", ""};
    }
  }
  if (content_length > limits.max_body_bytes) {
    return ApiError{413,
                    "the request body has " + std::to_string(content_length) + " bytes; the limit is " +
                        std::to_string(limits.max_body_bytes),
                    ""};
  }
  out->method = std::string(method);
  out->path = std::string(path);
  out->content_length = content_length;
  return std::nullopt;
}

std::string http_error_response(const ApiError& error) {
  const std::string body = error.to_json();
  const char* reason = "Error";
  switch (error.http_status) {
    case 400: reason = "Bad Request"; break;
    case 401: reason = "Unauthorized"; break;
    case 405: reason = "Method Not Allowed"; break;
    case 408: reason = "Request Timeout"; break;
    case 411: reason = "Length Required"; break;
    case 413: reason = "Content Too Large"; break;
    case 417: reason = "Expectation Failed"; break;
    case 431: reason = "Request Header Fields Too Large"; break;
    case 503: reason = "Service Unavailable"; break;
    default: break;
  }
  return "HTTP/1.1 " + std::to_string(error.http_status) + " " + std::string(reason) +
         "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

// ---- per connection ----------------------------------------------------------------------------

namespace {

// The path of a request line ("POST /v1/completions?x HTTP/1.1" -> "/v1/completions"), or ""
// while the line is incomplete or malformed: the label of a refused request's response.
std::string_view request_line_path(std::string_view head) {
  const size_t line_end = head.find('\n');
  if (line_end == std::string_view::npos) return {};
  const std::string_view line = head.substr(0, line_end);
  const size_t first = line.find(' ');
  if (first == std::string_view::npos) return {};
  const size_t second = line.find(' ', first + 1);
  if (second == std::string_view::npos) return {};
  std::string_view target = line.substr(first + 1, second - first - 1);
  return target.substr(0, target.find('?'));
}

struct Connection {
  HttpGuard::Impl* guard = nullptr;
  uint64_t serial = 0;
  bufferevent* bev = nullptr;  // evhttp's; we hold a reference to learn when evhttp freed it
  event* close_event = nullptr;
  enum class Phase { kHead, kBody } phase = Phase::kHead;
  std::string head;    // the current request head so far
  std::string target;  // the route of the request whose body is being read (for its refusal's count)
  uint64_t body_left = 0;
  uint64_t body_total = 0;
  double phase_start_s = 0;   // first byte of the head, or end of the head (body)
  double idle_since_s = 0;    // the last time the connection had nothing in progress
  double opened_s = 0;        // accepted
  int busy = 0;               // requests handed to the server and not answered yet
  bool over_cap = false;      // over max_connections: one request, /health or 503
  bool closing = false;       // refused or timed out: the close is scheduled
  bool freed = false;         // evhttp freed its connection
  std::string response;       // to send when the close event runs
  double linger_until_s = 0;  // > 0: the response is out, the rest of the request is being dropped
  // Offsets in the connection's byte stream: everything read, and the end of the last request
  // the guard let through (evhttp may not have parsed all of it yet).
  uint64_t stream_end = 0;
  uint64_t accepted_end = 0;
  // The bytes of an incomplete head, taken out of the input buffer (they are the stream's
  // last bytes): evhttp parses request lines and header lines as they arrive and would
  // answer a malformed one with its own HTML page before the guard had the whole head. The
  // input buffer holds stream bytes [stream_end - held.size() - length, stream_end - held.size()).
  std::string held;
  bool in_input = false;   // inside on_input (the input buffer's end may be written)
  bool rewriting = false;  // on_input sees our own re-add of the kept bytes
  // The server's callback for when evhttp frees the connection (evhttp's close callback is the guard's).
  void (*server_close_cb)(void*) = nullptr;
  void* server_close_arg = nullptr;
};

}  // namespace

struct HttpGuard::Impl {
  event_base* base;
  HttpLimits limits;
  std::function<bool()> healthy;
  std::function<void(std::string_view, int)> on_response;
  uint64_t next_serial = 1;
  std::unordered_map<uint64_t, Connection*> connections;
  std::unordered_map<bufferevent*, Connection*> by_bev;

  ~Impl() {
    for (auto& [serial, c] : connections) destroy(c);
    if (resume_event != nullptr) event_free(resume_event);
    if (reap_event != nullptr) event_free(reap_event);
  }

  // ---- releasing what evhttp freed -------------------------------------------------------------
  // The socket closes when the guard drops its reference, so a connection evhttp freed is
  // released in the same loop pass where the guard can tell: reap_event runs right after
  // evhttp's close callback (the guard's from the connection's first request on) or the
  // guard's own end-of-file to evhttp. A connection whose request never reached the server
  // and that evhttp freed on its own (the client left first, also during a refusal's linger)
  // waits for the sweep in check_timeouts.
  event* reap_event = nullptr;
  std::vector<uint64_t> maybe_freed;

  void reap_soon(const Connection& c) {
    maybe_freed.push_back(c.serial);
    if (reap_event == nullptr) reap_event = event_new(base, -1, 0, &Impl::on_reap, this);
    event_active(reap_event, 0, 0);
  }

  static void on_reap(evutil_socket_t, short, void* arg) {
    Impl* self = static_cast<Impl*>(arg);
    std::vector<uint64_t> serials;
    serials.swap(self->maybe_freed);
    for (uint64_t serial : serials) {
      auto it = self->connections.find(serial);
      if (it != self->connections.end() && self->release_if_freed(it->second)) self->connections.erase(it);
    }
  }

  // Whether evhttp freed c's connection; if so c is destroyed (and its socket closed), and the
  // caller removes it from `connections`.
  bool release_if_freed(Connection* c) {
    bufferevent_event_cb event_cb = nullptr;
    bufferevent_getcb(c->bev, nullptr, nullptr, &event_cb, nullptr);
    if (event_cb != nullptr) return false;  // bufferevent_free clears the callbacks
    c->freed = true;
    by_bev.erase(c->bev);
    destroy(c);
    return true;
  }

  // evhttp's close callback: the connection is being freed.
  static void on_evhttp_close(evhttp_connection*, void* arg) {
    auto* c = static_cast<Connection*>(arg);
    if (c->server_close_cb != nullptr) c->server_close_cb(c->server_close_arg);
    c->guard->reap_soon(*c);
  }

  void destroy(Connection* c) {
    if (c->close_event != nullptr) event_free(c->close_event);
    bufferevent_decref(c->bev);
    delete c;
  }

  size_t open() const {
    size_t n = 0;
    for (const auto& [serial, c] : connections) n += c->freed ? 0 : 1;
    return n;
  }

  bufferevent* make(event_base* b) {
    // The socket closes with the bufferevent's last reference (ours, dropped in check_timeouts
    // once evhttp has freed its connection), not when evhttp frees it: libevent 2.1 leaves the
    // read event of a bufferevent we still hold registered, and had evhttp closed the socket, a
    // new connection given the same descriptor would have its bytes read (and lost) by that
    // stale event: a body "late" by the body timeout under connection churn.
    bufferevent* bev = bufferevent_socket_new(b, -1, BEV_OPT_CLOSE_ON_FREE);
    if (bev == nullptr) return nullptr;
    auto* c = new Connection;
    c->guard = this;
    c->serial = next_serial++;
    c->bev = bev;
    c->idle_since_s = c->opened_s = now_s();
    bufferevent_incref(bev);
    c->close_event = event_new(b, -1, 0, &Impl::on_close_event, c);
    evbuffer_add_cb(bufferevent_get_input(bev), &Impl::on_input, c);
    const size_t n = open();
    connections[c->serial] = c;
    by_bev[bev] = c;
    if (n >= static_cast<size_t>(limits.max_connections) + kReserveConnections) {
      // Far over the cap: refused at once (evhttp sets the socket right after this returns).
      refuse(*c, {503, "too many open connections (limit " + std::to_string(limits.max_connections) + ")", ""});
    } else if (n >= static_cast<size_t>(limits.max_connections)) {
      c->over_cap = true;
    }
    return bev;
  }

  // ---- input: each request head is read here before evhttp parses it ----------------------
  static void on_input(evbuffer* buffer, const evbuffer_cb_info* info, void* arg) {
    auto* c = static_cast<Connection*>(arg);
    if (info->n_added == 0 || c->freed || c->rewriting) return;
    const size_t length = evbuffer_get_length(buffer);
    const size_t added = std::min(info->n_added, length);
    c->stream_end += added;
    c->in_input = true;
    if (c->closing) {
      // Refused: evhttp never parses a byte past the requests let through.
      c->guard->drop_unaccepted(*c);
    } else {
      std::string bytes(added, '\0');
      evbuffer_ptr start;
      evbuffer_ptr_set(buffer, &start, length - added, EVBUFFER_PTR_SET);
      evbuffer_copyout_from(buffer, &start, bytes.data(), added);
      c->guard->return_held(*c, added);
      c->guard->feed(*c, bytes);
      if (!c->closing && c->phase == Connection::Phase::kHead && !c->head.empty()) c->guard->hold_head(*c);
    }
    c->in_input = false;
  }

  // Inside on_input: puts the held bytes back between what the buffer held and the `added`
  // bytes just read, so the buffer is the stream's tail again.
  void return_held(Connection& c, size_t added) {
    if (c.held.empty()) return;
    evbuffer* input = bufferevent_get_input(c.bev);
    evbuffer* before = evbuffer_new();
    evbuffer* fresh = evbuffer_new();
    evbuffer_remove_buffer(input, before, evbuffer_get_length(input) - added);
    evbuffer_remove_buffer(input, fresh, added);
    c.rewriting = true;
    evbuffer_add_buffer(input, before);
    evbuffer_add(input, c.held.data(), c.held.size());
    evbuffer_add_buffer(input, fresh);
    c.rewriting = false;
    evbuffer_free(before);
    evbuffer_free(fresh);
    c.held.clear();
  }

  // Inside on_input, after feed: takes the incomplete head (the buffer's last c.head.size()
  // bytes, none of which evhttp has seen) out of the buffer into c.held.
  void hold_head(Connection& c) {
    evbuffer* input = bufferevent_get_input(c.bev);
    const size_t length = evbuffer_get_length(input);
    const size_t n = std::min(c.head.size(), length);
    evbuffer* before = evbuffer_new();
    evbuffer_remove_buffer(input, before, length - n);
    c.held.resize(n);
    evbuffer_remove(input, c.held.data(), n);
    c.rewriting = true;
    evbuffer_add_buffer(input, before);
    c.rewriting = false;
    evbuffer_free(before);
  }

  // Drops what is in the input buffer beyond the last request let through. Returns how many
  // bytes of let-through requests are still there for evhttp to parse. Inside on_input (where
  // the buffer's end is writable, and changing the buffer from its callback is allowed) the
  // bytes to keep are moved out and back; elsewhere, with bytes to keep, nothing is dropped
  // (the next on_input or the close does it).
  uint64_t drop_unaccepted(Connection& c) {
    // Held bytes are past every request let through: gone, as if never read.
    c.stream_end -= c.held.size();
    c.held.clear();
    evbuffer* input = bufferevent_get_input(c.bev);
    const size_t length = evbuffer_get_length(input);
    const uint64_t buffer_start = c.stream_end - length;
    const uint64_t keep = c.accepted_end > buffer_start ? std::min<uint64_t>(c.accepted_end - buffer_start, length) : 0;
    if (keep == 0) {
      evbuffer_drain(input, length);
    } else if (keep < length && c.in_input) {
      evbuffer* kept = evbuffer_new();
      evbuffer_remove_buffer(input, kept, keep);
      evbuffer_drain(input, evbuffer_get_length(input));
      c.rewriting = true;
      evbuffer_add_buffer(input, kept);
      c.rewriting = false;
      evbuffer_free(kept);
    }
    return keep;
  }

  void feed(Connection& c, std::string_view bytes) {
    const double now = now_s();
    while (!bytes.empty() && !c.closing) {
      if (c.phase == Connection::Phase::kBody) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(c.body_left, bytes.size()));
        c.body_left -= n;
        bytes.remove_prefix(n);
        if (c.body_left == 0) {
          c.phase = Connection::Phase::kHead;
          c.target.clear();
          c.idle_since_s = now;
          c.accepted_end = c.stream_end - bytes.size();
        }
        continue;
      }
      if (c.head.empty()) c.phase_start_s = now;
      const size_t old_size = c.head.size();
      c.head.append(bytes);
      // The head ends at the first empty line (CRLF CRLF, or bare LFs as evhttp accepts).
      size_t end = std::string::npos;
      for (size_t i = old_size > 3 ? old_size - 3 : 0; i < c.head.size(); ++i) {
        if (c.head[i] != '\n') continue;
        if (i == 0) {
          end = 0;
          break;
        }
        if (i + 1 < c.head.size() && c.head[i + 1] == '\n') {
          end = i + 2;
          break;
        }
        if (i + 2 < c.head.size() && c.head[i + 1] == '\r' && c.head[i + 2] == '\n') {
          end = i + 3;
          break;
        }
      }
      if (end == 0 || (c.head.size() >= 2 && c.head[0] == '\r' && c.head[1] == '\n')) {
        return refuse(c, bad_request("a request must begin with its request line"));
      }
      if (end == std::string::npos) {
        if (c.head.size() > limits.max_header_bytes) return refuse(c, header_too_large());
        return;
      }
      if (end > limits.max_header_bytes) return refuse(c, header_too_large());
      bytes = bytes.substr(end - old_size);
      c.head.resize(end);
      RequestHead head;
      if (auto error = check_request_head(c.head, limits, &head)) return refuse(c, *error);
      if (c.over_cap) return answer_over_cap(c, head);
      c.target = request_line_path(c.head);
      c.head.clear();
      c.body_left = c.body_total = head.content_length;
      c.phase = c.body_left > 0 ? Connection::Phase::kBody : Connection::Phase::kHead;
      if (c.body_left == 0) c.accepted_end = c.stream_end - bytes.size();
      c.phase_start_s = now;
      c.idle_since_s = now;
    }
  }

  ApiError header_too_large() const {
    return {431, "the request head is over " + std::to_string(limits.max_header_bytes) + " bytes", ""};
  }

  // A connection over the cap may ask for /health and nothing else.
  void answer_over_cap(Connection& c, const RequestHead& head) {
    if ((head.method == "GET" || head.method == "HEAD") && head.path == "/health") {
      const bool ok = healthy();
      if (on_response) on_response(head.path, ok ? 200 : 503);
      const std::string response = std::string(ok ? "HTTP/1.1 200 OK" : "HTTP/1.1 503 Service Unavailable") +
                                   "\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
      return close_with(c, response);
    }
    refuse(c, {503, "too many open connections (limit " + std::to_string(limits.max_connections) + ")", ""});
  }

  void refuse(Connection& c, const ApiError& error) {
    log_debug("http: refused a request ({}): {}", error.http_status, error.message);
    if (on_response)
      on_response(c.head.empty() ? std::string_view(c.target) : request_line_path(c.head), error.http_status);
    close_with(c, http_error_response(error));
  }

  // Sends `response` (possibly empty) and closes the connection: evhttp never sees the bytes
  // read so far beyond what it already parsed (its read callback is taken away). With a
  // response the close lingers: the write side is shut after it and what the client still
  // sends (the body of a refused request) is read and dropped for up to kLingerSeconds, so the
  // client reads the response instead of a connection reset. Then evhttp gets an end-of-file
  // and frees the connection.
  static constexpr double kLingerSeconds = 2.0;

  void close_with(Connection& c, std::string response) {
    if (c.closing) return;
    c.closing = true;
    bufferevent_data_cb read_cb = nullptr, write_cb = nullptr;
    bufferevent_event_cb event_cb = nullptr;
    void* cb_arg = nullptr;
    bufferevent_getcb(c.bev, &read_cb, &write_cb, &event_cb, &cb_arg);
    c.response = std::move(response);
    // Requests let through before the refused one (pipelined, or junk such as a stray CRLF
    // after a body) are answered first: evhttp keeps its read callback until it has parsed
    // them, and on_request_complete runs the close event once their replies are out.
    const uint64_t unparsed = drop_unaccepted(c);
    if (unparsed == 0) bufferevent_setcb(c.bev, nullptr, write_cb, event_cb, cb_arg);
    if (c.busy == 0 && unparsed == 0) event_active(c.close_event, 0, 0);  // the socket may not be set yet (make())
  }

  static void on_close_event(evutil_socket_t, short, void* arg) {
    auto* c = static_cast<Connection*>(arg);
    if (c->freed) return;
    bufferevent_data_cb write_cb = nullptr;
    bufferevent_event_cb event_cb = nullptr;
    void* cb_arg = nullptr;
    bufferevent_getcb(c->bev, nullptr, &write_cb, &event_cb, &cb_arg);
    if (event_cb == nullptr) return;  // evhttp already let it go
    // Again: a connection refused in make() got evhttp's callbacks after close_with().
    bufferevent_setcb(c->bev, nullptr, write_cb, event_cb, cb_arg);
    const evutil_socket_t fd = bufferevent_getfd(c->bev);
    if (!c->response.empty() && fd >= 0) {
      // A small response on an otherwise quiet socket: the kernel takes it whole.
      (void)!::send(fd, c->response.data(), c->response.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::shutdown(fd, SHUT_WR);
      c->response.clear();
      c->linger_until_s = now_s() + kLingerSeconds;
      return;
    }
    c->linger_until_s = 0;
    // evhttp frees an incoming connection on end-of-file (its pending request, if any, is
    // detached first, as when the client leaves).
    bufferevent_trigger_event(c->bev, BEV_EVENT_EOF | BEV_EVENT_READING, 0);
    c->guard->reap_soon(*c);
  }

  void check_timeouts() {
    const double now = now_s();
    for (auto it = connections.begin(); it != connections.end();) {
      if (release_if_freed(it->second)) {
        it = connections.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& [serial, c] : connections) {
      if (c->closing) {
        if (c->linger_until_s > 0) {
          drop_unaccepted(*c);
          if (now >= c->linger_until_s) {
            c->linger_until_s = 0;
            event_active(c->close_event, 0, 0);
          }
        }
        continue;
      }
      if (c->busy > 0) continue;
      if (c->phase == Connection::Phase::kBody) {
        if (now - c->phase_start_s > limits.body_timeout_s) {
          log_timeout(*c, fmt::format("the body did not arrive within {} ({} of {} bytes)",
                                      seconds(limits.body_timeout_s), c->body_total - c->body_left, c->body_total));
          refuse(*c, {408, "the request body did not arrive within " + seconds(limits.body_timeout_s), ""});
        }
      } else if (!c->head.empty()) {
        if (now - c->phase_start_s > limits.header_timeout_s) {
          log_timeout(*c, fmt::format("the head did not arrive within {} ({} bytes)", seconds(limits.header_timeout_s),
                                      c->head.size()));
          refuse(*c, {408, "the request head did not arrive within " + seconds(limits.header_timeout_s), ""});
        }
      } else if (now - c->idle_since_s > limits.idle_timeout_s) {
        log_debug("http: closing a connection idle for {:.0f} s", now - c->idle_since_s);
        close_with(*c, "");
      }
    }
  }

  // Bytes the client sent that sit in the socket unread (-1 when the socket cannot tell).
  static int unread_in_socket(const Connection& c) {
    const evutil_socket_t fd = bufferevent_getfd(c.bev);
    int unread = 0;
    if (fd >= 0 && ::ioctl(fd, FIONREAD, &unread) != 0) unread = -1;
    return unread;
  }

  // One connection's state in a line, for logs.
  static std::string describe(const Connection& c, double now) {
    const evutil_socket_t fd = bufferevent_getfd(c.bev);
    bufferevent_data_cb read_cb = nullptr;
    bufferevent_getcb(c.bev, &read_cb, nullptr, nullptr, nullptr);
    const short enabled = bufferevent_get_enabled(c.bev);
    std::string phase = c.phase == Connection::Phase::kBody
                            ? fmt::format("body {} of {} bytes", c.body_total - c.body_left, c.body_total)
                            : (c.head.empty() ? "between requests" : fmt::format("head {} bytes", c.head.size()));
    return fmt::format(
        "connection {} (fd {}) open {:.0f} s: {}; {} request(s) in progress; {}{}; reading {}, writing {}; "
        "{} bytes unread in the socket, {} in the input buffer, {} in the output buffer; evhttp's read callback {}",
        c.serial, static_cast<int>(fd), now - c.opened_s, phase, c.busy, c.closing ? "closing" : "open",
        c.linger_until_s > 0 ? " (lingering)" : "", (enabled & EV_READ) != 0 ? "on" : "off",
        (enabled & EV_WRITE) != 0 ? "on" : "off", unread_in_socket(c),
        evbuffer_get_length(bufferevent_get_input(c.bev)), evbuffer_get_length(bufferevent_get_output(c.bev)),
        read_cb != nullptr ? "set" : "taken");
  }

  // One line per timeout, at most one every 10 s (a slow-client flood would fill the log).
  double last_timeout_log_s = -1e9;
  uint64_t timeouts_unlogged = 0;
  void log_timeout(const Connection& c, const std::string& what) {
    const double now = now_s();
    if (now - last_timeout_log_s < 10.0) {
      ++timeouts_unlogged;
      return;
    }
    const std::string route = c.head.empty() ? c.target : std::string(request_line_path(c.head));
    // Bytes the client sent that the server never read, and whether it was reading: a lost
    // read event would show here, not as a slow client.
    const int unread = unread_in_socket(c);
    const bool reading = (bufferevent_get_enabled(c.bev) & EV_READ) != 0;
    log_info("http: 408 for {}: {}; {} bytes unread in the socket, reading {}{}", route.empty() ? "a request" : route,
             what, unread, reading ? "on" : "off",
             timeouts_unlogged > 0 ? fmt::format(" ({} more timeouts since the last line)", timeouts_unlogged) : "");
    last_timeout_log_s = now;
    timeouts_unlogged = 0;
  }

  static std::string seconds(double s) { return fmt_seconds(s) + " s"; }
  static std::string fmt_seconds(double s) {
    std::string text = std::to_string(s);
    text.erase(text.find_last_not_of('0') + 1);
    if (!text.empty() && text.back() == '.') text.pop_back();
    return text;
  }

  // ---- accept() failures (EMFILE, ENFILE, ENOBUFS): pause accepting, log rarely -----------
  evconnlistener* listener = nullptr;
  event* resume_event = nullptr;
  double last_accept_log_s = -1e9;
  uint64_t accept_errors_unlogged = 0;

  // The listener's callback argument is evhttp's, so the guard of a listener is found here.
  static std::mutex& listeners_mutex() {
    static std::mutex m;
    return m;
  }
  static std::unordered_map<evconnlistener*, Impl*>& listeners() {
    static std::unordered_map<evconnlistener*, Impl*> map;
    return map;
  }

  static void on_accept_error(evconnlistener* listener, void*) {
    const int error = EVUTIL_SOCKET_ERROR();
    Impl* self = nullptr;
    {
      std::lock_guard<std::mutex> lock(listeners_mutex());
      auto it = listeners().find(listener);
      if (it != listeners().end()) self = it->second;
    }
    if (self == nullptr) return;
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
          std::strerror(error), self->open(), self->accept_errors_unlogged);
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

  Connection* of_request(evhttp_request* req) {
    evhttp_connection* evcon = evhttp_request_get_connection(req);
    bufferevent* bev = evcon != nullptr ? evhttp_connection_get_bufferevent(evcon) : nullptr;
    auto it = by_bev.find(bev);
    return it != by_bev.end() && !it->second->freed ? it->second : nullptr;
  }

  // evhttp sent a reply (the last chunk of a stream, or a whole response).
  static void on_request_complete(evhttp_request* req, void* arg) {
    Impl* self = static_cast<Impl*>(arg);
    if (Connection* c = self->of_request(req)) {
      c->busy = std::max(0, c->busy - 1);
      c->idle_since_s = now_s();
      if (c->closing && c->busy == 0 && c->linger_until_s == 0) event_active(c->close_event, 0, 0);
    }
  }
};

}  // namespace crosspoint

namespace crosspoint {

HttpGuard::HttpGuard(event_base* base, const HttpLimits& limits, std::function<bool()> healthy,
                     std::function<void(std::string_view, int)> on_response)
    : impl_(std::make_unique<Impl>()) {
  impl_->base = base;
  impl_->limits = limits;
  impl_->healthy = std::move(healthy);
  impl_->on_response = std::move(on_response);
}

HttpGuard::~HttpGuard() { forget_listener(); }

void HttpGuard::attach(evhttp* http) {
  const HttpLimits& limits = impl_->limits;
  evhttp_set_bevcb(http, &HttpGuard::new_bufferevent, this);
  evhttp_set_max_body_size(http, static_cast<ev_ssize_t>(limits.max_body_bytes + (1 << 20)));
  evhttp_set_max_headers_size(http, static_cast<ev_ssize_t>(limits.max_header_bytes + 1024));
  evhttp_set_flags(http, EVHTTP_SERVER_LINGERING_CLOSE);
  // is_allowed_method's list: evhttp answers any other with its own page.
  evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
                                       EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
}

bufferevent* HttpGuard::new_bufferevent(event_base* base, void* guard) {
  return static_cast<HttpGuard*>(guard)->impl_->make(base);
}

void HttpGuard::request_started(evhttp_request* req) {
  if (Connection* c = impl_->of_request(req)) {
    ++c->busy;
    evhttp_request_set_on_complete_cb(req, &Impl::on_request_complete, impl_.get());
    evhttp_connection_set_closecb(evhttp_request_get_connection(req), &Impl::on_evhttp_close, c);
  }
}

void HttpGuard::on_connection_close(evhttp_request* req, void (*callback)(void*), void* arg) {
  if (Connection* c = impl_->of_request(req)) {
    c->server_close_cb = callback;
    c->server_close_arg = arg;
  }
}

void HttpGuard::check_timeouts() { impl_->check_timeouts(); }

void HttpGuard::close_idle() {
  for (auto& [serial, c] : impl_->connections) {
    if (!c->freed && !c->closing && c->busy == 0 && c->head.empty() && c->phase == Connection::Phase::kHead) {
      impl_->close_with(*c, "");
    }
  }
}

void HttpGuard::watch_listener(evconnlistener* listener) {
  forget_listener();
  impl_->listener = listener;
  {
    std::lock_guard<std::mutex> lock(Impl::listeners_mutex());
    Impl::listeners()[listener] = impl_.get();
  }
  if (impl_->resume_event == nullptr)
    impl_->resume_event = event_new(impl_->base, -1, 0, &Impl::on_resume, impl_.get());
  evconnlistener_set_error_cb(listener, &Impl::on_accept_error);
}

void HttpGuard::forget_listener() {
  if (impl_->listener != nullptr) {
    std::lock_guard<std::mutex> lock(Impl::listeners_mutex());
    Impl::listeners().erase(impl_->listener);
  }
  impl_->listener = nullptr;
  if (impl_->resume_event != nullptr) event_del(impl_->resume_event);
}

size_t HttpGuard::open_connections() const { return impl_->open(); }

std::vector<std::string> HttpGuard::describe_open_connections(size_t max) const {
  std::vector<const Connection*> open;
  for (const auto& [serial, c] : impl_->connections)
    if (!c->freed) open.push_back(c);
  std::sort(open.begin(), open.end(), [](const Connection* a, const Connection* b) { return a->serial < b->serial; });
  std::vector<std::string> lines;
  const double now = now_s();
  for (size_t i = 0; i < open.size() && i < max; ++i) lines.push_back(Impl::describe(*open[i], now));
  return lines;
}

const HttpLimits& HttpGuard::limits() const { return impl_->limits; }

}  // namespace crosspoint
