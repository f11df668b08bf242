#include "common/status.h"

namespace crosspoint {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kCorrupt: return "corrupt";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kResourceExhausted: return "resource exhausted";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kIo: return "i/o error";
    case StatusCode::kInternal: return "internal error";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return std::string(status_code_name(code_)) + ": " + message_;
}

void check_failed(const char* file, int line, const char* expr, const std::string& message) {
  std::fprintf(stderr, "crosspoint: internal check failed at %s:%d: %s: %s\n", file, line, expr, message.c_str());
  std::abort();
}

}  // namespace crosspoint
