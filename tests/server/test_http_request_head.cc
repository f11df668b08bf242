// The request-head checks of the HTTP layer: smuggling, malformed heads, the API key before the
// body, body size before the body, and the error responses.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/http_request_head.h"
#include "server/http_response.h"

namespace crosspoint {
namespace {

std::optional<ApiError> check(const std::string& head, const HttpLimits& limits = {}, RequestHead* out = nullptr) {
  RequestHead scratch;
  return check_request_head(head, limits, out != nullptr ? out : &scratch);
}

TEST(HttpRequestHead, AcceptsOrdinaryHeads) {
  RequestHead head;
  ASSERT_FALSE(check("POST /v1/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 14\r\n\r\n", {}, &head));
  EXPECT_EQ(head.method, "POST");
  EXPECT_EQ(head.path, "/v1/completions");
  EXPECT_EQ(head.content_length, 14u);
  ASSERT_FALSE(check("GET /health HTTP/1.0\n\n", {}, &head));  // bare LFs, HTTP/1.0
  EXPECT_EQ(head.content_length, 0u);
  ASSERT_FALSE(
      check("GET http://host:8000/v1/models HTTP/1.1\r\ncontent-length:0\r\nExpect: 100-continue\r\n\r\n", {}, &head));
  EXPECT_EQ(head.path, "/v1/models");
}

TEST(HttpRequestHead, RefusesSmuggling) {
  const std::string line = "POST /v1/completions HTTP/1.1\r\n";
  for (const std::string& headers : {
           std::string("Content-Length: 5\r\nContent-Length: 5\r\n"),
           std::string("Content-Length: 5\r\ncontent-length: 6\r\n"),
           std::string("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n"),
           std::string("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n"),
           std::string("Transfer-Encoding: gzip\r\n"),
           std::string("Content-Length : 5\r\n"),
           std::string(" Content-Length: 5\r\n"),
           std::string("X: a\r\n\tContent-Length: 5\r\n"),
           std::string("Content-Length: +5\r\n"),
           std::string("Content-Length: -1\r\n"),
           std::string("Content-Length: 5, 5\r\n"),
           std::string("Content-Length: 0x10\r\n"),
           std::string("Content-Length: 99999999999999999999\r\n"),
           std::string("Content-Length: 5\rX: y\r\n"),
       }) {
    auto e = check(line + headers + "\r\n");
    ASSERT_TRUE(e) << headers;
    EXPECT_EQ(e->http_status, 400) << headers;
  }
  auto e = check(line + "Transfer-Encoding: chunked\r\n\r\n");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 411);
}

TEST(HttpRequestHead, RefusesMalformedHeads) {
  for (const std::string& head : {
           std::string("GARBAGE\r\n\r\n"), std::string("GET  /health HTTP/1.1\r\n\r\n"),
           std::string("GET /he alth HTTP/1.1\r\n\r\n"), std::string("GET /health HTTP/2.0\r\n\r\n"),
           std::string("GET /health\r\n\r\n"), std::string("G(T /health HTTP/1.1\r\n\r\n"),
           std::string("GET /health HTTP/1.1\r\nNoColon\r\n\r\n"),
           std::string("GET /health HTTP/1.1\r\n: empty-name\r\n\r\n"),
           std::string("GET /health HTTP/1.1\r\nX: a\x01b\r\n\r\n"),
           std::string("GET /health HTTP/1.1\r\n"),  // incomplete
       }) {
    auto e = check(head);
    ASSERT_TRUE(e) << head;
    EXPECT_EQ(e->http_status, 400) << head;
  }
  auto e = check("BREW /pot HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 405);
  e = check("TRACE / HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 405);
  e = check("GET / HTTP/1.1\r\nExpect: something\r\n\r\n");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 417);
}

TEST(HttpRequestHead, ApiKeyOnEveryRouteButHealthBeforeTheBodySize) {
  HttpLimits limits;
  limits.api_key = "sk-secret";
  limits.max_body_bytes = 100;
  for (const std::string path : {"/v1/models", "/v1/completions", "/metrics", "/tokenize", "/detokenize", "/x"}) {
    auto e = check("GET " + path + " HTTP/1.1\r\n\r\n", limits);
    ASSERT_TRUE(e) << path;
    EXPECT_EQ(e->http_status, 401) << path;
    e = check("GET " + path + " HTTP/1.1\r\nAuthorization: Bearer sk-secreT\r\n\r\n", limits);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->http_status, 401);
    EXPECT_FALSE(check("GET " + path + " HTTP/1.1\r\nAuthorization: Bearer sk-secret\r\n\r\n", limits)) << path;
  }
  EXPECT_FALSE(check("GET /health HTTP/1.1\r\n\r\n", limits));
  EXPECT_FALSE(check("GET /health?x HTTP/1.1\r\n\r\n", limits));
  // Two Authorization headers: refused even when one is right.
  auto e =
      check("GET /v1/models HTTP/1.1\r\nAuthorization: Bearer x\r\nAuthorization: Bearer sk-secret\r\n\r\n", limits);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 401);
  // Unauthenticated: 401 whatever the body size; authenticated: 413 before the body.
  e = check("POST /v1/completions HTTP/1.1\r\nContent-Length: 1000\r\n\r\n", limits);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 401);
  e = check("POST /v1/completions HTTP/1.1\r\nAuthorization: Bearer sk-secret\r\nContent-Length: 1000\r\n\r\n", limits);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 413);
  EXPECT_NE(e->message.find("1000"), std::string::npos);
}

TEST(HttpRequestHead, BearerComparison) {
  EXPECT_TRUE(bearer_matches("Bearer k", "k"));
  EXPECT_FALSE(bearer_matches("Bearer k ", "k"));
  EXPECT_FALSE(bearer_matches("Bearer ", "k"));
  EXPECT_FALSE(bearer_matches("", "k"));
  EXPECT_FALSE(bearer_matches("Bearer kk", "k"));
  EXPECT_FALSE(bearer_matches("Basic k", "k"));
  EXPECT_FALSE(bearer_matches(std::string("Bearer k\0", 9), "k"));
}

TEST(HttpRequestHead, ErrorResponsesAreOpenAiJson) {
  const std::string response = http_error_response({431, "the request head is over 65536 bytes", ""});
  ASSERT_EQ(response.rfind("HTTP/1.1 431 ", 0), 0u) << response;
  EXPECT_NE(response.find("\r\nConnection: close\r\n"), std::string::npos);
  EXPECT_NE(response.find("\r\nContent-Type: application/json\r\n"), std::string::npos);
  const size_t body_start = response.find("\r\n\r\n") + 4;
  const std::string body = response.substr(body_start);
  EXPECT_NE(response.find("Content-Length: " + std::to_string(body.size()) + "\r\n"), std::string::npos);
  const auto json = nlohmann::json::parse(body);
  EXPECT_EQ(json["error"]["code"], 431);
  EXPECT_EQ(json["error"]["message"], "the request head is over 65536 bytes");
  EXPECT_TRUE(json["error"]["param"].is_null());
  EXPECT_TRUE(json["error"]["type"].is_string());
}

}  // namespace
}  // namespace crosspoint
