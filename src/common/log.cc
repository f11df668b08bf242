#include "common/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

namespace crosspoint {
namespace {

LogLevel level_from_env() {
  const char* env = std::getenv("CROSSPOINT_LOG_LEVEL");
  if (env == nullptr) return LogLevel::kInfo;
  if (std::strcmp(env, "debug") == 0) return LogLevel::kDebug;
  if (std::strcmp(env, "warning") == 0) return LogLevel::kWarning;
  if (std::strcmp(env, "error") == 0) return LogLevel::kError;
  return LogLevel::kInfo;
}

std::atomic<LogLevel>& current_level() {
  static std::atomic<LogLevel> level{level_from_env()};
  return level;
}

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarning: return "WARNING";
    case LogLevel::kError: return "ERROR";
  }
  return "?";
}

}  // namespace

void set_log_level(LogLevel level) { current_level().store(level); }
LogLevel log_level() { return current_level().load(); }

void log_line(LogLevel level, std::string_view message) {
  static std::mutex mutex;
  auto now = std::chrono::system_clock::now();
  std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  int millis =
      static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm_local{};
  localtime_r(&seconds, &tm_local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%m-%d %H:%M:%S", &tm_local);
  std::lock_guard<std::mutex> lock(mutex);
  std::fprintf(stderr, "%s %s.%03d %.*s\n", level_name(level), stamp, millis, static_cast<int>(message.size()),
               message.data());
}

}  // namespace crosspoint
