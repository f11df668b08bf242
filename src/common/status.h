// Status and Result<T>: how library code reports expected failures (corrupt file, bad
// request, KV cache full). Programmer errors use CROSSPOINT_CHECK instead. Library code
// never calls exit().
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace crosspoint {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // a bad option, request or parameter
  kNotFound,           // a missing file, tensor, model or route
  kCorrupt,            // a file whose bytes contradict its format
  kUnsupported,        // a valid input we do not handle (architecture, dtype, scheme)
  kResourceExhausted,  // KV cache full, a request larger than the cache
  kUnavailable,        // busy or shutting down: the same call may succeed later
  kIo,                 // the operating system refused (open, read, mmap, socket)
  kInternal,
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return {}; }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "corrupt: model.safetensors: header length 9999 exceeds file size 12"
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status corrupt(std::string m) { return {StatusCode::kCorrupt, std::move(m)}; }
inline Status unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
inline Status resource_exhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status io_error(std::string m) { return {StatusCode::kIo, std::move(m)}; }
inline Status internal_error(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.is_ok()) status_ = internal_error("Result constructed from an ok Status");
  }
  bool is_ok() const { return value_.has_value(); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

[[noreturn]] void check_failed(const char* file, int line, const char* expr, const std::string& message);

}  // namespace crosspoint

// Programmer errors: a broken invariant, never bad input.
#define CROSSPOINT_CHECK(cond, message)                                            \
  do {                                                                             \
    if (!(cond)) ::crosspoint::check_failed(__FILE__, __LINE__, #cond, (message)); \
  } while (0)

// Early return for Status-returning functions.
#define CROSSPOINT_RETURN_IF_ERROR(expr)   \
  do {                                     \
    ::crosspoint::Status status_ = (expr); \
    if (!status_.is_ok()) return status_;  \
  } while (0)

#define CROSSPOINT_CONCAT_INNER(a, b) a##b
#define CROSSPOINT_CONCAT(a, b) CROSSPOINT_CONCAT_INNER(a, b)
// CROSSPOINT_ASSIGN_OR_RETURN(auto file, SafetensorsFile::open(path));
#define CROSSPOINT_ASSIGN_OR_RETURN(lhs, expr)                                                             \
  auto CROSSPOINT_CONCAT(result_, __LINE__) = (expr);                                                      \
  if (!CROSSPOINT_CONCAT(result_, __LINE__).is_ok()) return CROSSPOINT_CONCAT(result_, __LINE__).status(); \
  lhs = std::move(CROSSPOINT_CONCAT(result_, __LINE__)).value()
