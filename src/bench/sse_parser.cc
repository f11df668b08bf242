#include "bench/sse_parser.h"

namespace crosspoint::bench {

namespace {

// One message's lines -> its data payload ("" when it has no data line).
std::string message_data(std::string_view message) {
  std::string data;
  bool first = true;
  size_t pos = 0;
  while (pos <= message.size()) {
    size_t end = message.find('\n', pos);
    if (end == std::string_view::npos) end = message.size();
    std::string_view line = message.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.rfind("data:", 0) == 0) {
      line.remove_prefix(5);
      if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
      if (!first) data += '\n';
      data.append(line);
      first = false;
    }
    pos = end + 1;
  }
  return data;
}

}  // namespace

std::vector<std::string> SseParser::feed(std::string_view bytes) {
  buffer_.append(bytes);
  std::vector<std::string> payloads;
  size_t start = 0;
  while (true) {
    const size_t lf = buffer_.find("\n\n", start);
    const size_t crlf = buffer_.find("\r\n\r\n", start);
    size_t end, sep;
    if (lf == std::string::npos && crlf == std::string::npos) break;
    if (crlf != std::string::npos && (lf == std::string::npos || crlf < lf)) {
      end = crlf;
      sep = 4;
    } else {
      end = lf;
      sep = 2;
    }
    std::string_view message(buffer_.data() + start, end - start);
    start = end + sep;
    if (message.empty() || message.front() == ':') continue;  // keep-alive comment
    std::string data = message_data(message);
    if (!data.empty()) payloads.push_back(std::move(data));
  }
  buffer_.erase(0, start);
  return payloads;
}

}  // namespace crosspoint::bench
