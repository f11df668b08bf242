#include "server/http_response.h"

#include <ctime>

#include <fmt/format.h>

namespace crosspoint {

const char* http_reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 417: return "Expectation Failed";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

namespace {

std::string http_date() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[64];
  const size_t n = std::strftime(text, sizeof(text), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return std::string(text, n);
}

}  // namespace

std::string http_response_head(int minor_version, int status, const HttpHeaders& headers, HttpBodyFraming framing,
                               size_t content_length, bool keep_alive) {
  std::string out = fmt::format("HTTP/1.{} {} {}\r\n", minor_version >= 1 ? 1 : 0, status, http_reason_phrase(status));
  for (const auto& [name, value] : headers) out += name + ": " + value + "\r\n";
  if (minor_version >= 1) out += "Date: " + http_date() + "\r\n";
  switch (framing) {
    case HttpBodyFraming::kContentLength: out += fmt::format("Content-Length: {}\r\n", content_length); break;
    case HttpBodyFraming::kChunked: out += "Transfer-Encoding: chunked\r\n"; break;
    case HttpBodyFraming::kToClose: break;
  }
  if (!keep_alive) {
    out += "Connection: close\r\n";
  } else if (minor_version == 0) {
    out += "Connection: keep-alive\r\n";
  }
  out += "\r\n";
  return out;
}

std::string http_chunk(std::string_view data) {
  if (data.empty()) return "";
  std::string out = fmt::format("{:x}\r\n", data.size());
  out.append(data);
  out += "\r\n";
  return out;
}

std::string http_error_response(const ApiError& error) {
  const std::string body = error.to_json();
  return "HTTP/1.1 " + std::to_string(error.http_status) + " " + http_reason_phrase(error.http_status) +
         "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

}  // namespace crosspoint
