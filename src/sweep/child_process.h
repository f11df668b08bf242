// Child processes of the sweep: the crosspoint binary run with arguments, its stdout and
// stderr sent to a log file. Either waited for (quantize, bench, eval) or kept running and
// stopped with SIGTERM (serve).
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

#include "common/status.h"

namespace crosspoint::sweep {

class ChildProcess {
 public:
  // Starts argv[0] with argv; stdout and stderr are appended to log_path (created). With
  // stdout_path, stdout goes there instead (truncated first), for commands that print JSON.
  static Result<ChildProcess> start(const std::vector<std::string>& argv, const std::string& log_path,
                                    const std::string& stdout_path = "");

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // A child still running is killed (SIGKILL) and reaped.
  ~ChildProcess();

  // True while the child runs; once it has exited, exit_code() is set.
  bool running();
  // The exit status (128 + signal when killed by a signal); -1 while running.
  int exit_code() const { return exit_code_; }
  // Blocks until the child exits; returns its exit code.
  int wait();
  // SIGTERM, then waits up to grace_s seconds, then SIGKILL. Returns the exit code.
  int terminate(double grace_s);
  pid_t pid() const { return pid_; }

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  void record_status(int wait_status);

  pid_t pid_ = -1;
  int exit_code_ = -1;
};

// Runs argv to completion with output to log_path; an exit code other than 0 is an error
// naming the step and carrying the last lines of the log.
Status run_to_completion(const std::vector<std::string>& argv, const std::string& log_path, const std::string& step,
                         const std::string& stdout_path = "");

// The last max_lines lines of a text file, joined with " | " (for one-line errors).
std::string log_tail(const std::string& path, int max_lines);

}  // namespace crosspoint::sweep
