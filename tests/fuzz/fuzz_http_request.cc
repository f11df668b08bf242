// The HTTP layer: raw bytes a client sends, through HttpServer as the server sets it up, to the
// routes and request parsers (tests/server/http_server_harness.h: OpenAiServer itself needs an
// Engine, which this build leaves out; each process listens on loopback ports once and each
// input is one TCP connection). The first byte picks the listener (even: no API key,
// odd: with one); the rest is sent, the write side shut and the answer read to the close.
//
// Findings besides crashes, leaks and UB: an answer that is not a sequence of HTTP/1.x
// responses; an error response (>= 400) that is not the OpenAI error JSON with its status as
// "code" (an HTML error page included); the connection still open 5 s after the client's last
// byte; a connection the server still counts 5 s after the client closed.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/http_server_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using crosspoint::testing::HttpServerHarness;
  if (size == 0) return 0;
  // Kept for the process: the listeners' ports stay open between inputs.
  static HttpServerHarness* harness = new HttpServerHarness;
  const std::string_view request(reinterpret_cast<const char*>(data) + 1, size - 1);
  const HttpServerHarness::Exchange exchange = harness->exchange(request, data[0] % 2 == 1);
  std::string problem = exchange.failure;
  if (problem.empty()) problem = HttpServerHarness::answer_problem(exchange.answer);
  if (!problem.empty()) {
    std::fprintf(stderr, "fuzz_http_request: %s\nanswer (%zu bytes): %.*s\n", problem.c_str(), exchange.answer.size(),
                 static_cast<int>(std::min<size_t>(exchange.answer.size(), 2000)), exchange.answer.data());
    std::abort();
  }
  return 0;
}
