// The HTTP layer (HttpServer) on a real loopback connection (http_server_harness.h): raw
// requests in, the bytes the server sends back checked. Inputs fuzz_http_request found are
// kept here.
#include <gtest/gtest.h>

#include <string>

#include "server/http_server_harness.h"

namespace crosspoint {
namespace {

using testing::HttpServerHarness;

HttpServerHarness& harness() {
  static HttpServerHarness* h = new HttpServerHarness;
  return *h;
}

std::string status_line(const std::string& answer) { return answer.substr(0, answer.find("\r\n")); }

TEST(HttpServer, OrdinaryRequestsAreAnsweredAndErrorsAreOpenAiJson) {
  const std::string body = R"({"prompt": "Hello"})";
  auto e = harness().exchange(
      "POST /tokenize HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body, false);
  EXPECT_EQ(e.failure, "");
  EXPECT_EQ(HttpServerHarness::answer_problem(e.answer), "") << e.answer;
  EXPECT_EQ(status_line(e.answer), "HTTP/1.1 200 OK");
  e = harness().exchange("GET /health HTTP/1.1\r\n\r\n", true);  // open without the key
  EXPECT_EQ(status_line(e.answer), "HTTP/1.1 200 OK");
  e = harness().exchange("POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", true);
  EXPECT_EQ(status_line(e.answer), "HTTP/1.1 401 Unauthorized");
  EXPECT_EQ(HttpServerHarness::answer_problem(e.answer), "") << e.answer;
  e = harness().exchange("POST /tokenize HTTP/1.1\r\nContent-Length: 4096\r\n\r\n{", false);
  EXPECT_EQ(status_line(e.answer), "HTTP/1.1 413 Content Too Large");
  EXPECT_EQ(HttpServerHarness::answer_problem(e.answer), "") << e.answer;
}

// The checker itself: an HTML error page is a finding.
TEST(HttpServer, AnswerCheckRefusesHtmlErrorPages) {
  EXPECT_NE(HttpServerHarness::answer_problem("HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\n"
                                              "Content-Length: 13\r\n\r\n<HTML></HTML>"),
            "");
  EXPECT_NE(HttpServerHarness::answer_problem("garbage"), "");
  EXPECT_EQ(HttpServerHarness::answer_problem(""), "");
}

// fuzz_http_request: a head with a malformed request line that never ended (the client closed
// after it). A head is checked only once it is complete, so the close ends the connection with
// no answer (or, once the head ends, the JSON 400).
TEST(HttpServer, UnfinishedMalformedHeadGetsNoAnswer) {
  const std::string found =
      "POST /tokeize nHTTP/1.0\r\nHost: x\r\nContent-Type: application/json\r\nContent-Lecation/json\r\n"
      "Content\": \"Hello\"}";
  auto e = harness().exchange(found, false);
  EXPECT_EQ(e.failure, "");
  EXPECT_EQ(HttpServerHarness::answer_problem(e.answer), "") << e.answer;
  EXPECT_EQ(e.answer, "");
  e = harness().exchange(found + "\r\n\r\n", false);
  EXPECT_EQ(status_line(e.answer), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(HttpServerHarness::answer_problem(e.answer), "") << e.answer;
  // A valid request, then an unfinished one: the first is answered, the second dropped.
  e = harness().exchange("GET /health HTTP/1.1\r\n\r\nGET /v1/models HTTP/1.1\r\nHost", false);
  EXPECT_EQ(status_line(e.answer), "HTTP/1.1 200 OK");
  EXPECT_EQ(e.answer.find("HTTP/1.1", 4), std::string::npos) << e.answer;
}

// fuzz_http_request: a HEAD request with a body, then bytes that are no request. The answer to
// HEAD announces a length it does not send; had the connection stayed open, the next response
// would have been read as that body. It closes after HEAD instead.
TEST(HttpServer, NothingIsAnsweredAfterHead) {
  const std::string body = R"({"messages": [{"role": "user", "content": "x"}]})";
  auto e = harness().exchange("HEAD //vch1at/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                                  std::to_string(body.size()) + "\r\n\r\n" + body + "\r\n\x01junk",
                              false);
  EXPECT_EQ(e.failure, "");
  EXPECT_EQ(HttpServerHarness::answer_problem(e.answer), "") << e.answer;
  EXPECT_EQ(status_line(e.answer), "HTTP/1.1 404 Not Found");
  EXPECT_EQ(e.answer.find("HTTP/1.1", 4), std::string::npos) << e.answer;
}

// A connection the client closes is released in the same loop pass, its socket closed: not
// left to the next check_timeouts (up to 250 ms in the server; the soak counted the server's
// descriptors right after closing its own /metrics connection and found one too many).
TEST(HttpServer, FreedConnectionsAreReleasedWithoutTheSweep) {
  HttpServerHarness& h = harness();
  h.set_sweep(false);
  struct SweepBack {
    HttpServerHarness& h;
    ~SweepBack() { h.set_sweep(true); }
  } sweep_back{h};
  const int before = HttpServerHarness::open_descriptors();
  // The client leaves an idle keep-alive connection; the server closes after "Connection: close".
  // (A refused connection lingers until the client closes or its linger ends in
  // check_timeouts: the other tests here run with it.)
  for (const char* request : {"GET /health HTTP/1.1\r\n\r\n", "GET /v1/models HTTP/1.1\r\nConnection: close\r\n\r\n"}) {
    auto e = h.exchange(request, false);
    EXPECT_EQ(e.failure, "") << request;
    EXPECT_EQ(status_line(e.answer).substr(0, 9), "HTTP/1.1 ") << request;
    // At most: something else in the process may close a descriptor meanwhile (seen under ASan).
    EXPECT_LE(HttpServerHarness::open_descriptors(), before) << request;
  }
}

}  // namespace
}  // namespace crosspoint
