// The wall clock as text, for the dates results and reports carry (measurements use clock.h).
#pragma once

#include <ctime>
#include <string>

namespace crosspoint {

// Now in UTC, formatted by strftime; the default is ISO 8601 ("2026-12-07T08:12:14Z").
inline std::string utc_now(const char* format = "%Y-%m-%dT%H:%M:%SZ") {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[64];
  std::strftime(text, sizeof(text), format, &tm);
  return text;
}

}  // namespace crosspoint
