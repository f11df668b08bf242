// The HTTP layer's connection handling beyond the limits (test_http_server.cc has those):
// keep-alive and pipelined requests, responses given later from the loop, chunked streams,
// HTTP/1.0, HEAD, Expect: 100-continue, a client that leaves mid-stream, and the response
// bytes themselves (http_response.h). One HttpServer on a loopback port, driven from the test's
// thread: the client's sockets are non-blocking and the loop runs between their calls.
#include <gtest/gtest.h>

#include <event2/event.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/http_response.h"
#include "server/http_server.h"

namespace crosspoint {
namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

class HttpConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = event_base_new();
    HttpLimits limits;
    limits.max_body_bytes = 4096;
    server_ = std::make_unique<HttpServer>(
        base_, limits, [this](const std::shared_ptr<HttpExchange>& exchange) { handler_(exchange); },
        [] { return true; }, [this](std::string_view path, int status) { counted_.emplace_back(path, status); });
    ASSERT_TRUE(server_->listen("127.0.0.1", 0).is_ok());
    handler_ = [](const std::shared_ptr<HttpExchange>& exchange) {
      const HttpRequest& r = exchange->request();
      exchange->respond(200, r.method + " " + r.target + " " + r.body, "text/plain");
    };
  }

  void TearDown() override {
    for (int fd : fds_) ::close(fd);
    server_.reset();
    event_base_free(base_);
  }

  int connect_client() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(server_->port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    fds_.push_back(fd);
    pump();
    return fd;
  }

  void pump() {
    for (int i = 0; i < 3; ++i) event_base_loop(base_, EVLOOP_NONBLOCK);
  }

  // Runs the loop until done() or the timeout.
  bool pump_until(const std::function<bool()>& done, double timeout_s = 5) {
    const double deadline = now_s() + timeout_s;
    while (!done()) {
      if (now_s() > deadline) return false;
      pump();
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    return true;
  }

  void send_bytes(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) bytes.remove_prefix(static_cast<size_t>(n));
      pump();
    }
  }

  struct Received {
    std::string bytes;
    bool closed = false;
  };

  // Reads until `until` holds for what was read, the server closes, or the timeout.
  Received read_until(int fd, const std::function<bool(const std::string&)>& until, double timeout_s = 5) {
    Received r;
    pump_until(
        [&] {
          char buf[4096];
          const ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
          if (n > 0) r.bytes.append(buf, static_cast<size_t>(n));
          if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) r.closed = true;
          return r.closed || until(r.bytes);
        },
        timeout_s);
    return r;
  }
  Received read_to_close(int fd) {
    return read_until(fd, [](const std::string&) { return false; });
  }
  static std::function<bool(const std::string&)> contains(std::string needle, size_t times = 1) {
    return [needle, times](const std::string& s) {
      size_t found = 0;
      for (size_t pos = s.find(needle); pos != std::string::npos; pos = s.find(needle, pos + 1)) ++found;
      return found >= times;
    };
  }

  event_base* base_ = nullptr;
  std::unique_ptr<HttpServer> server_;
  std::function<void(const std::shared_ptr<HttpExchange>&)> handler_;
  std::vector<std::pair<std::string, int>> counted_;
  std::vector<int> fds_;
};

size_t count_of(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = s.find(needle); pos != std::string::npos; pos = s.find(needle, pos + 1)) ++n;
  return n;
}

TEST_F(HttpConnectionTest, PipelinedRequestsAreAnsweredInOrderOnOneConnection) {
  const int fd = connect_client();
  send_bytes(fd,
             "GET /a HTTP/1.1\r\n\r\n"
             "POST /b HTTP/1.1\r\nContent-Length: 3\r\n\r\nxyz"
             "GET /c?q=1 HTTP/1.1\r\nConnection: close\r\n\r\n");
  const Received r = read_to_close(fd);
  EXPECT_TRUE(r.closed);
  const size_t a = r.bytes.find("GET /a "), b = r.bytes.find("POST /b xyz"), c = r.bytes.find("GET /c?q=1 ");
  ASSERT_NE(a, std::string::npos) << r.bytes;
  ASSERT_NE(b, std::string::npos) << r.bytes;
  ASSERT_NE(c, std::string::npos) << r.bytes;
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_EQ(count_of(r.bytes, "HTTP/1.1 200 OK\r\n"), 3u) << r.bytes;
  EXPECT_EQ(count_of(r.bytes, "Connection: close\r\n"), 1u) << r.bytes;  // only the last
  EXPECT_EQ(counted_.size(), 3u);
  EXPECT_EQ(counted_[2].first, "/c");
  EXPECT_TRUE(pump_until([&] { return server_->open_connections() == 0; }));
}

// A request answered later (as the server answers from engine output): the next pipelined
// request waits for it, and the connection stays open for more.
TEST_F(HttpConnectionTest, LaterResponsesKeepThePipelineInOrder) {
  std::vector<std::shared_ptr<HttpExchange>> held;
  handler_ = [&](const std::shared_ptr<HttpExchange>& exchange) {
    if (exchange->request().path == "/slow") {
      held.push_back(exchange);
    } else {
      exchange->respond(200, "fast");
    }
  };
  const int fd = connect_client();
  send_bytes(fd, "GET /slow HTTP/1.1\r\n\r\nGET /fast HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(pump_until([&] { return held.size() == 1; }));
  Received r = read_until(fd, contains("HTTP/1.1"), 0.2);
  EXPECT_EQ(r.bytes, "");  // nothing before the first answer
  held[0]->respond(200, "slow");
  EXPECT_FALSE(held[0]->connected());
  r = read_until(fd, contains("HTTP/1.1 200", 2));
  EXPECT_FALSE(r.closed);
  ASSERT_LT(r.bytes.find("slow"), r.bytes.find("fast")) << r.bytes;
  send_bytes(fd, "GET /fast HTTP/1.1\r\n\r\n");
  r = read_until(fd, contains("fast"));
  EXPECT_NE(r.bytes.find("HTTP/1.1 200 OK"), std::string::npos);
  EXPECT_EQ(server_->open_connections(), 1u);
}

TEST_F(HttpConnectionTest, StreamsAreChunked) {
  handler_ = [](const std::shared_ptr<HttpExchange>& exchange) {
    exchange->start_stream(200, {{"Content-Type", "text/event-stream"}});
    exchange->send_chunk("data: one\n\n");
    exchange->send_chunk("");  // nothing: an empty chunk would end the body
    exchange->send_chunk("data: [DONE]\n\n");
    exchange->end_stream();
  };
  const int fd = connect_client();
  send_bytes(fd, "POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}");
  const Received r = read_until(fd, contains("0\r\n\r\n"));
  const size_t body = r.bytes.find("\r\n\r\n");
  ASSERT_NE(body, std::string::npos) << r.bytes;
  const std::string head = r.bytes.substr(0, body + 2);
  EXPECT_EQ(head.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << head;
  EXPECT_NE(head.find("\r\nTransfer-Encoding: chunked\r\n"), std::string::npos) << head;
  EXPECT_NE(head.find("\r\nContent-Type: text/event-stream\r\n"), std::string::npos) << head;
  EXPECT_EQ(head.find("Content-Length"), std::string::npos) << head;
  EXPECT_EQ(r.bytes.substr(body + 4), "b\r\ndata: one\n\n\r\ne\r\ndata: [DONE]\n\n\r\n0\r\n\r\n");
  EXPECT_FALSE(r.closed);  // keep-alive after the last chunk
  EXPECT_EQ(counted_.size(), 1u);
}

// HTTP/1.0 has no chunked coding: the stream's body runs to the close.
TEST_F(HttpConnectionTest, Http10StreamsEndWithTheConnection) {
  handler_ = [](const std::shared_ptr<HttpExchange>& exchange) {
    exchange->start_stream(200, {});
    exchange->send_chunk("data: one\n\n");
    exchange->end_stream();
  };
  const int fd = connect_client();
  send_bytes(fd, "POST /s HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n");
  const Received r = read_to_close(fd);
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(r.bytes.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << r.bytes;
  EXPECT_NE(r.bytes.find("Connection: close\r\n"), std::string::npos) << r.bytes;
  EXPECT_EQ(r.bytes.find("chunked"), std::string::npos) << r.bytes;
  EXPECT_EQ(r.bytes.substr(r.bytes.find("\r\n\r\n") + 4), "data: one\n\n");
}

TEST_F(HttpConnectionTest, Http10ClosesUnlessAskedToKeepAlive) {
  int fd = connect_client();
  send_bytes(fd, "GET /x HTTP/1.0\r\n\r\n");
  Received r = read_to_close(fd);
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(r.bytes.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << r.bytes;
  EXPECT_NE(r.bytes.find("Connection: close\r\n"), std::string::npos) << r.bytes;
  fd = connect_client();
  send_bytes(fd, "GET /x HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
  r = read_until(fd, contains("GET /x "));
  EXPECT_FALSE(r.closed);
  EXPECT_NE(r.bytes.find("Connection: keep-alive\r\n"), std::string::npos) << r.bytes;
  EXPECT_NE(r.bytes.find("Content-Length: 7\r\n"), std::string::npos) << r.bytes;
}

// HEAD: the length, no body, and the connection closes (what was pipelined behind it is
// dropped), so no client can read the next response as the body the length announced.
TEST_F(HttpConnectionTest, HeadGetsTheLengthAndNoBodyAndCloses) {
  const int fd = connect_client();
  send_bytes(fd, "HEAD /h HTTP/1.1\r\n\r\nGET /g HTTP/1.1\r\n\r\n");
  const Received r = read_to_close(fd);
  EXPECT_TRUE(r.closed);
  // "HEAD /h " is 8 bytes: announced, not sent.
  const size_t end = r.bytes.find("\r\n\r\n");
  ASSERT_NE(end, std::string::npos) << r.bytes;
  EXPECT_NE(r.bytes.find("Content-Length: 8\r\n"), std::string::npos) << r.bytes;
  EXPECT_NE(r.bytes.find("Connection: close\r\n"), std::string::npos) << r.bytes;
  EXPECT_EQ(r.bytes.size(), end + 4) << r.bytes;
}

TEST_F(HttpConnectionTest, ExpectContinueIsAnsweredBeforeTheBody) {
  const int fd = connect_client();
  send_bytes(fd, "POST /e HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
  Received r = read_until(fd, contains("\r\n\r\n"));
  EXPECT_EQ(r.bytes, "HTTP/1.1 100 Continue\r\n\r\n");
  send_bytes(fd, "hello");
  r = read_until(fd, contains("POST /e hello"));
  EXPECT_EQ(r.bytes.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r.bytes;
  // With the body already there, no 100 is sent.
  send_bytes(fd, "POST /e HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi");
  r = read_until(fd, contains("POST /e hi"));
  EXPECT_EQ(r.bytes.find("100 Continue"), std::string::npos) << r.bytes;
}

// A client that leaves mid-stream: on_disconnect runs, the connection is freed, and the
// exchange the handler still holds is detached (later calls are no-ops, run under ASan).
TEST_F(HttpConnectionTest, ClientLeavingMidStreamRunsOnDisconnect) {
  std::shared_ptr<HttpExchange> held;
  int disconnects = 0;
  handler_ = [&](const std::shared_ptr<HttpExchange>& exchange) {
    held = exchange;
    exchange->on_disconnect([&] { ++disconnects; });
    exchange->start_stream(200, {});
    exchange->send_chunk("data: one\n\n");
  };
  const int fd = connect_client();
  send_bytes(fd, "POST /s HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  read_until(fd, contains("data: one"));
  ASSERT_TRUE(held != nullptr);
  EXPECT_TRUE(held->connected());
  ::close(fd);
  fds_.clear();
  EXPECT_TRUE(pump_until([&] { return disconnects == 1; }));
  EXPECT_FALSE(held->connected());
  EXPECT_EQ(server_->open_connections(), 0u);
  held->send_chunk("data: two\n\n");
  held->end_stream();
  EXPECT_EQ(disconnects, 1);
}

// A non-streaming request whose client leaves before the answer: seen while it runs.
TEST_F(HttpConnectionTest, ClientLeavingBeforeTheAnswerRunsOnDisconnect) {
  std::shared_ptr<HttpExchange> held;
  bool disconnected = false;
  handler_ = [&](const std::shared_ptr<HttpExchange>& exchange) {
    held = exchange;
    exchange->on_disconnect([&] { disconnected = true; });
  };
  const int fd = connect_client();
  send_bytes(fd, "POST /s HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  ASSERT_TRUE(pump_until([&] { return held != nullptr; }));
  ::close(fd);
  fds_.clear();
  EXPECT_TRUE(pump_until([&] { return disconnected; }));
  held->respond(200, "late");  // a no-op
}

// Shutdown: destroying the server frees every connection and tells unanswered exchanges.
TEST_F(HttpConnectionTest, DestroyingTheServerTellsUnansweredExchanges) {
  std::shared_ptr<HttpExchange> held;
  bool disconnected = false;
  handler_ = [&](const std::shared_ptr<HttpExchange>& exchange) {
    held = exchange;
    exchange->on_disconnect([&] { disconnected = true; });
  };
  const int fd = connect_client();
  connect_client();  // idle
  send_bytes(fd, "GET /s HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(pump_until([&] { return held != nullptr; }));
  EXPECT_EQ(server_->open_connections(), 2u);
  server_->close_idle();  // the idle one goes, the busy one stays
  EXPECT_EQ(server_->open_connections(), 1u);
  server_.reset();
  EXPECT_TRUE(disconnected);
  EXPECT_FALSE(held->connected());
  held->respond(200, "late");
}

TEST(HttpResponse, HeadFramingAndConnection) {
  std::string head = http_response_head(1, 200, {{"Content-Type", "application/json"}}, HttpBodyFraming::kContentLength,
                                        12, /*keep_alive=*/true);
  EXPECT_EQ(head.rfind("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: ", 0), 0u) << head;
  EXPECT_NE(head.find("\r\nContent-Length: 12\r\n\r\n"), std::string::npos) << head;
  EXPECT_EQ(head.find("Connection"), std::string::npos) << head;
  head = http_response_head(1, 503, {}, HttpBodyFraming::kChunked, 0, /*keep_alive=*/false);
  EXPECT_EQ(head.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << head;
  EXPECT_NE(head.find("\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"), std::string::npos) << head;
  head = http_response_head(0, 404, {}, HttpBodyFraming::kContentLength, 0, /*keep_alive=*/true);
  EXPECT_EQ(head, "HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n");
  EXPECT_EQ(http_chunk("abcdefghijklmnopq"), "11\r\nabcdefghijklmnopq\r\n");
  EXPECT_EQ(http_chunk(""), "");
  EXPECT_EQ(std::string(kHttpLastChunk), "0\r\n\r\n");
}

}  // namespace
}  // namespace crosspoint
