// Logging to stderr with a level and a wall-clock timestamp, like vLLM's INFO lines.
// Level from CROSSPOINT_LOG_LEVEL (debug, info, warning, error) or set_log_level().
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace crosspoint {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void set_log_level(LogLevel level);
LogLevel log_level();
void log_line(LogLevel level, std::string_view message);

template <typename... Args>
void log_debug(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() <= LogLevel::kDebug) log_line(LogLevel::kDebug, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void log_info(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() <= LogLevel::kInfo) log_line(LogLevel::kInfo, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void log_warning(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() <= LogLevel::kWarning) log_line(LogLevel::kWarning, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void log_error(fmt::format_string<Args...> f, Args&&... args) {
  log_line(LogLevel::kError, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace crosspoint
