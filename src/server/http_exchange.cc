#include "server/http_exchange.h"

#include "server/http_connection.h"

namespace crosspoint {

namespace {

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const char x = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
    const char y = b[i] >= 'A' && b[i] <= 'Z' ? static_cast<char>(b[i] - 'A' + 'a') : b[i];
    if (x != y) return false;
  }
  return true;
}

}  // namespace

std::optional<std::string_view> HttpRequest::header(std::string_view name) const {
  for (const auto& [n, value] : headers) {
    if (equals_ignoring_case(n, name)) return std::string_view(value);
  }
  return std::nullopt;
}

HttpExchange::HttpExchange(HttpConnection* connection, HttpRequest request)
    : connection_(connection), request_(std::move(request)) {}

void HttpExchange::respond(int status, std::string_view body, std::string_view content_type) {
  if (connection_ != nullptr) connection_->respond(*this, status, body, content_type);
}

void HttpExchange::start_stream(int status, const HttpHeaders& headers) {
  if (connection_ != nullptr) connection_->start_stream(*this, status, headers);
}

void HttpExchange::send_chunk(std::string_view data) {
  if (connection_ != nullptr) connection_->send_chunk(*this, data);
}

void HttpExchange::end_stream() {
  if (connection_ != nullptr) connection_->end_stream(*this);
}

}  // namespace crosspoint
