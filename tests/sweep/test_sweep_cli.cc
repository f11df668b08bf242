// `crosspoint sweep` as a command: bad options fail with one clear line before anything
// runs, and a server that cannot start fails the sweep with its log tail.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "common/paths.h"
#include "test_assets.h"

namespace {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

CommandResult run_crosspoint(const std::string& args) {
  const std::string command = std::string(CROSSPOINT_BINARY) + " sweep " + args + " 2>&1";
  CommandResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string temp_dir(const std::string& name) {
  auto dir =
      std::filesystem::temp_directory_path() / ("crosspoint_sweep_cli_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  return dir.string();
}

TEST(SweepCli, BadOptionsFailBeforeAnythingRuns) {
  const std::string out = temp_dir("bad");
  struct Case {
    std::string args, needle;
  };
  const Case cases[] = {
      {"--precisions fp16,int2", "unknown precision 'int2'"},
      {"--concurrency 1,zero", "--concurrency: 'zero'"},
      {"--slo ttft=5", "--slo"},
      {"--device cuda --hardware B9000", "--hardware: hardware 'B9000'"},
      {"--device cuda --hardware H200 --gpu-memory-utilization 1.5", "--gpu-memory-utilization"},
      {"--device cuda --ceilings /nonexistent/ceilings.json", "/nonexistent/ceilings.json"},
      {"--concurrency 1,10,100 --num-prompts 20,100", "2 values for 3 --concurrency levels"},
      {"--precision-model fp16=/m", "fp16 is served from --model"},
      {"--precision-model w4a16=/nonexistent/gptq", "/nonexistent/gptq/config.json: no such file"},
      {"--num-prompts 0", "--num-prompts"},
      {"--model /nonexistent/model", "/nonexistent/model"},
      {"--dataset-path /nonexistent/sg.json", "/nonexistent/sg.json"},
  };
  for (const Case& c : cases) {
    const CommandResult r = run_crosspoint(c.args + " --out " + out);
    EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find("crosspoint sweep: "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(c.needle), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_FALSE(std::filesystem::exists(out)) << c.args << ": created the output directory before failing";
  }
}

TEST(SweepCli, HelpShowsTheStudySettings) {
  const CommandResult r = run_crosspoint("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("--concurrency 1,10,100 --num-prompts 1000"), std::string::npos) << r.output;
}

TEST(SweepCli, ServerThatFailsToStartShowsItsLog) {
  CROSSPOINT_REQUIRE_ASSET(crosspoint::default_model_dir() + "/config.json");
  const std::string out = temp_dir("nostart");
  // 64 KiB of KV cache cannot hold one sequence of 2048 tokens: serve refuses to start.
  const CommandResult r = run_crosspoint("--precisions fp16 --concurrency 1 --kv-cache-memory 64KiB --out " + out);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("crosspoint serve exited with code 1 before it was ready"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("raise --kv-cache-memory"), std::string::npos) << r.output;
  std::filesystem::remove_all(out);
}

}  // namespace
