#include "server/http_request_head.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <vector>

namespace crosspoint {

namespace {

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

// The methods the server routes (anything else is a 405 before the body is read).
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

// RFC 3986: the characters of a host name (unreserved, pct-encoded, sub-delims).
bool is_reg_name_char(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return c != '\0' && std::strchr("-._~%!$&'()*+,;=", c) != nullptr;
}

// The authority of an absolute-form target: [userinfo@]host[:port], host a name or [IPv6].
bool is_valid_authority(std::string_view authority) {
  if (const size_t at = authority.rfind('@'); at != std::string_view::npos) authority.remove_prefix(at + 1);
  std::string_view host = authority, port;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos || close == 1) return false;
    const std::string_view inside = authority.substr(1, close - 1);
    if (!std::all_of(inside.begin(), inside.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.'; }))
      return false;
    host = {};
    const std::string_view rest = authority.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return false;
    port = rest.empty() ? rest : rest.substr(1);
  } else if (const size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (!std::all_of(host.begin(), host.end(), is_reg_name_char)) return false;
  if (port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  return port.empty() || std::stoul(std::string(port)) <= 65535;
}

// Origin-form ("/path?query"), asterisk-form, a relative reference (routed as a path: 404) or
// absolute-form ("http://host:port/path") with a well-formed authority.
bool is_valid_target(std::string_view target) {
  size_t scheme_end = 0;
  while (scheme_end < target.size() && (std::isalnum(static_cast<unsigned char>(target[scheme_end])) ||
                                        std::strchr("+-.", target[scheme_end]) != nullptr)) {
    ++scheme_end;
  }
  const bool absolute =
      scheme_end > 0 && std::isalpha(static_cast<unsigned char>(target[0])) && target.substr(scheme_end, 3) == "://";
  if (!absolute) return true;
  const std::string_view rest = target.substr(scheme_end + 3);
  return is_valid_authority(rest.substr(0, rest.find_first_of("/?#")));
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
  if (!is_valid_target(target)) return bad_request("malformed request target");

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

}  // namespace crosspoint
