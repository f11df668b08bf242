// Child processes: exit codes, logs, SIGTERM, and the one-line errors with the log tail.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <chrono>
#include <thread>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sweep/child_process.h"
#include "sweep/served_model.h"

namespace crosspoint::sweep {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("crosspoint_sweep_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

TEST(ChildProcess, ExitCodeAndLog) {
  const std::string log = temp_path("exit.log");
  std::filesystem::remove(log);
  auto child = ChildProcess::start({"/bin/sh", "-c", "echo hello; echo oops >&2; exit 3"}, log);
  ASSERT_TRUE(child.is_ok());
  EXPECT_EQ(child->wait(), 3);
  const std::string text = read_text_file(log);
  EXPECT_NE(text.find("hello"), std::string::npos);
  EXPECT_NE(text.find("oops"), std::string::npos);
  std::filesystem::remove(log);
}

TEST(ChildProcess, SeparateStdout) {
  const std::string log = temp_path("sep.log"), out = temp_path("sep.out");
  ASSERT_TRUE(run_to_completion({"/bin/sh", "-c", "echo '{}'; echo progress >&2"}, log, "step", out).is_ok());
  EXPECT_EQ(read_text_file(out), "{}\n");
  EXPECT_EQ(read_text_file(log), "progress\n");
  std::filesystem::remove(log);
  std::filesystem::remove(out);
}

TEST(ChildProcess, FailureCarriesTheLogTail) {
  const std::string log = temp_path("fail.log");
  std::filesystem::remove(log);
  Status s = run_to_completion({"/bin/sh", "-c", "echo line1; echo line2; echo 'bad thing happened'; exit 1"}, log,
                               "crosspoint quantize");
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("crosspoint quantize failed (exit 1"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("bad thing happened"), std::string::npos);
  EXPECT_EQ(s.message().find('\n'), std::string::npos);
  std::filesystem::remove(log);
}

// Whether a process is gone (or a zombie nobody has reaped yet: it no longer runs).
bool process_gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return true;
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && (text[paren + 2] == 'Z' || text[paren + 2] == 'X');
}

// A sweep stopped by a signal (here a helper process standing in for it, killed by SIGTERM
// whose default action runs no destructor) leaves no child running.
TEST(ChildProcess, ChildEndsWhenTheSweepIsKilled) {
  const std::string log = temp_path("orphan.log");
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t sweep = ::fork();
  ASSERT_GE(sweep, 0);
  if (sweep == 0) {
    auto child = ChildProcess::start({"/bin/sleep", "60"}, log);
    const pid_t pid = child.is_ok() ? child->pid() : -1;
    (void)!::write(fds[1], &pid, sizeof(pid));
    ::pause();  // until SIGTERM kills it, destructors never run
    ::_exit(0);
  }
  ::close(fds[1]);
  pid_t grandchild = -1;
  ASSERT_EQ(::read(fds[0], &grandchild, sizeof(grandchild)), static_cast<ssize_t>(sizeof(grandchild)));
  ::close(fds[0]);
  ASSERT_GT(grandchild, 0);
  EXPECT_FALSE(process_gone(grandchild));
  ::kill(sweep, SIGTERM);
  int status = 0;
  ASSERT_EQ(::waitpid(sweep, &status, 0), sweep);
  EXPECT_TRUE(WIFSIGNALED(status));
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {  // up to 10 s; it is normally at once
    gone = process_gone(grandchild);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!gone) ::kill(grandchild, SIGKILL);
  EXPECT_TRUE(gone) << "the child of a killed sweep kept running";
  std::filesystem::remove(log);
}

TEST(ChildProcess, TerminateStopsALongChild) {
  const std::string log = temp_path("term.log");
  auto child = ChildProcess::start({"/bin/sleep", "30"}, log);
  ASSERT_TRUE(child.is_ok());
  EXPECT_TRUE(child->running());
  EXPECT_EQ(child->terminate(5), 128 + 15);  // SIGTERM
  EXPECT_FALSE(child->running());
  std::filesystem::remove(log);
}

TEST(ChildProcess, MissingProgramExits127) {
  const std::string log = temp_path("missing.log");
  auto child = ChildProcess::start({"/nonexistent/program"}, log);
  ASSERT_TRUE(child.is_ok());
  EXPECT_EQ(child->wait(), 127);
  std::filesystem::remove(log);
}

TEST(ServedModel, ServerThatExitsEarlyIsAClearError) {
  const std::string log = temp_path("serve.log");
  auto served =
      ServedModel::start({"/bin/sh", "-c", "echo 'crosspoint serve: KV cache too small' >&2; exit 1", "sh"}, log, 10);
  ASSERT_FALSE(served.is_ok());
  EXPECT_NE(served.status().message().find("exited with code 1"), std::string::npos) << served.status().message();
  EXPECT_NE(served.status().message().find("KV cache too small"), std::string::npos);
  std::filesystem::remove(log);
}

TEST(ServedModel, NothingListeningIsMinusOne) {
  EXPECT_EQ(http_get_status("http://127.0.0.1:1", "/health", 0.5), -1);
  EXPECT_EQ(http_get_status("not a url", "/health", 0.5), -1);
}

}  // namespace
}  // namespace crosspoint::sweep
