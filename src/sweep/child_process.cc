#include "sweep/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <fstream>
#include <thread>

namespace crosspoint::sweep {

Result<ChildProcess> ChildProcess::start(const std::vector<std::string>& argv, const std::string& log_path,
                                         const std::string& stdout_path) {
  CROSSPOINT_CHECK(!argv.empty(), "ChildProcess::start needs a program");
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return io_error(log_path + ": cannot open for writing: " + std::strerror(errno));
  int out_fd = log_fd;
  if (!stdout_path.empty()) {
    out_fd = ::open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out_fd < 0) {
      ::close(log_fd);
      return io_error(stdout_path + ": cannot open for writing: " + std::strerror(errno));
    }
  }
  // Built before fork: only async-signal-safe calls happen in the child.
  std::vector<char*> c_argv;
  for (const std::string& arg : argv) c_argv.push_back(const_cast<char*>(arg.c_str()));
  c_argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    if (out_fd != log_fd) ::close(out_fd);
    return internal_error(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // The child gets SIGTERM when the sweep dies, however it dies (SIGINT, SIGTERM, SIGKILL,
    // a crash): no server or benchmark is left running on its own. The signal follows the
    // thread that forked, which is the sweep's main thread. Should the sweep have died
    // before the request took effect, the child is already an orphan and stops here.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::execv(c_argv[0], c_argv.data());
    const char message[] = "exec failed\n";
    (void)!::write(STDERR_FILENO, message, sizeof(message) - 1);
    ::_exit(127);
  }
  ::close(log_fd);
  if (out_fd != log_fd) ::close(out_fd);
  return ChildProcess(pid);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept : pid_(other.pid_), exit_code_(other.exit_code_) {
  other.pid_ = -1;
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0 && exit_code_ < 0) terminate(0);
    pid_ = other.pid_;
    exit_code_ = other.exit_code_;
    other.pid_ = -1;
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && exit_code_ < 0) terminate(0);
}

void ChildProcess::record_status(int wait_status) {
  if (WIFEXITED(wait_status)) {
    exit_code_ = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    exit_code_ = 128 + WTERMSIG(wait_status);
  }
}

bool ChildProcess::running() {
  if (pid_ <= 0 || exit_code_ >= 0) return false;
  int wait_status = 0;
  const pid_t r = ::waitpid(pid_, &wait_status, WNOHANG);
  if (r == pid_) record_status(wait_status);
  return exit_code_ < 0;
}

int ChildProcess::wait() {
  if (pid_ <= 0 || exit_code_ >= 0) return exit_code_;
  int wait_status = 0;
  while (::waitpid(pid_, &wait_status, 0) < 0 && errno == EINTR) {}
  record_status(wait_status);
  return exit_code_;
}

int ChildProcess::terminate(double grace_s) {
  if (!running()) return exit_code_;
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  while (running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (running()) ::kill(pid_, SIGKILL);
  return wait();
}

std::string log_tail(const std::string& path, int max_lines) {
  std::ifstream in(path);
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    // Progress bars redraw with '\r': keep what the line finally showed.
    const size_t cr = line.find_last_of('\r', line.size() >= 2 ? line.size() - 2 : 0);
    if (cr != std::string::npos && cr + 1 < line.size()) line = line.substr(cr + 1);
    if (line.empty()) continue;
    lines.push_back(line);
    if (static_cast<int>(lines.size()) > max_lines) lines.pop_front();
  }
  std::string joined;
  for (const std::string& l : lines) joined += (joined.empty() ? "" : " | ") + l;
  return joined.empty() ? "(empty log)" : joined;
}

Status run_to_completion(const std::vector<std::string>& argv, const std::string& log_path, const std::string& step,
                         const std::string& stdout_path) {
  CROSSPOINT_ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::start(argv, log_path, stdout_path));
  const int code = child.wait();
  if (code != 0) {
    return internal_error(step + " failed (exit " + std::to_string(code) + "; log " + log_path +
                          "): " + log_tail(log_path, 3));
  }
  return Status::ok();
}

}  // namespace crosspoint::sweep
