// Small helpers shared by the subcommands: parse with CLI11 and turn a Status into the
// one-line error and exit code every subcommand uses.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "common/status.h"

namespace crosspoint::cli {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;  // bytes, for the logs' GiB figures

// Parses argv into app. Returns -1 to continue, or the exit code to return now
// (0 after --help, 2 after a usage error, which CLI11 has already printed).
inline int parse_or_exit_code(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) { return app.exit(e); }
  return -1;
}

// "crosspoint generate: not found: /x/config.json: no such file" and exit code 1.
inline int report_error(const char* command, const Status& status) {
  std::fprintf(stderr, "crosspoint %s: %s\n", command, status.to_string().c_str());
  return 1;
}

}  // namespace crosspoint::cli
