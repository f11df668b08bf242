// Child processes: exit codes, logs, SIGTERM, and the one-line errors with the log tail.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

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
