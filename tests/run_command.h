// stdout + stderr of a shell command and its exit status, for the tests that run the crosspoint
// binary the way a user does.
#pragma once

#include <cstdio>
#include <string>
#include <utility>

namespace crosspoint::testing {

inline std::pair<std::string, int> run_command(const std::string& command) {
  std::string output;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {"popen failed", -1};
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  return {output, pclose(pipe)};
}

}  // namespace crosspoint::testing
