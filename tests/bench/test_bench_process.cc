// Process-level tests: the crosspoint binary against tests/bench/fake_openai_server.py,
// each result checked in Python (check_result.py recomputes every aggregate with numpy).
// The scenarios live in run_bench_scenario.py; this file runs one per test.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/paths.h"
#include "test_assets.h"

namespace crosspoint::bench {
namespace {

// A Python with numpy: $CROSSPOINT_TEST_PYTHON, the setup script's venv, or python3.
std::string find_python() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("CROSSPOINT_TEST_PYTHON")) candidates.push_back(env);
  candidates.push_back(cache_dir() + "/venv/bin/python3");
  candidates.push_back("python3");
  for (const std::string& python : candidates) {
    if (python.find('/') != std::string::npos && !std::filesystem::exists(python)) continue;
    const std::string probe = python + " -c 'import numpy' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return python;
  }
  return "";
}

void run_scenario(const std::string& name, const std::string& env = "") {
  static const std::string python = find_python();
  if (python.empty()) {
    CROSSPOINT_REQUIRE_ASSET(cache_dir() + "/venv/bin/python3");
    FAIL() << cache_dir() << "/venv/bin/python3 cannot import numpy: scripts/setup.sh installs it";
  }
  const std::string command = env + python + " " + CROSSPOINT_SOURCE_DIR +
                              "/tests/bench/run_bench_scenario.py --binary " + CROSSPOINT_BINARY + " --scenario " +
                              name;
  const int rc = std::system(command.c_str());
  EXPECT_EQ(rc, 0) << "scenario " << name << " failed (its output is above): " << command;
}

TEST(BenchProcess, KeysAndAggregatesRecomputed) { run_scenario("aggregates"); }
TEST(BenchProcess, ShareGptChatWithTokenizerFallback) { run_scenario("sharegpt"); }
TEST(BenchProcess, PoissonArrivalsHaveTheRequestedRate) { run_scenario("poisson"); }
TEST(BenchProcess, FailedRequestsCarryTheirReason) { run_scenario("failures"); }
TEST(BenchProcess, TimeoutAndUnreachableServer) { run_scenario("timeout_and_unreachable"); }
TEST(BenchProcess, ServerKilledMidRun) { run_scenario("killed"); }
// The client's CPU share is checked only on an optimised, unsanitised binary: under
// AddressSanitizer the same client costs several times more and says nothing about Release.
TEST(BenchProcess, ThousandConcurrentStreams) {
#ifdef CROSSPOINT_SANITIZED_BINARY
  run_scenario("thousand_streams", "CROSSPOINT_BENCH_SANITIZED=1 ");
#else
  run_scenario("thousand_streams");
#endif
}
TEST(BenchProcess, BadOptionsFailBeforeAnyLoad) { run_scenario("bad_options"); }
// vLLM's documented command lines (tests/fixtures/bench/vllm_bench_serve_examples.txt) run
// unchanged: bodies, the result file's name and keys.
TEST(BenchProcess, VllmDocumentedCommandLinesRun) { run_scenario("vllm_command_lines"); }
TEST(BenchProcess, VllmFlagsReachTheWire) { run_scenario("vllm_flags"); }
TEST(BenchProcess, RampUpSchedule) { run_scenario("ramp_up"); }
TEST(BenchProcess, CustomSonnetBurstGptDatasets) { run_scenario("vllm_datasets"); }
// --gpu-energy through tests/bench/fake_nvml.c: joules, per request and per output token.
TEST(BenchProcess, GpuEnergyFromNvml) {
  run_scenario("gpu_energy", std::string("CROSSPOINT_FAKE_NVML=") + CROSSPOINT_FAKE_NVML + " ");
}

// crosspoint's own server and engine, in front of the toy model (fast, no weights).
TEST(BenchProcess, AgainstCrosspointServerWithToyModel) {
#ifdef CROSSPOINT_TOY_SERVER
  run_scenario("toy_server", std::string("CROSSPOINT_TOY_SERVER=") + CROSSPOINT_TOY_SERVER + " ");
#else
  GTEST_SKIP() << "serving_toy_server is not built";
#endif
}

// `crosspoint serve` with the default model, when the setup script has installed it.
TEST(BenchProcess, AgainstCrosspointServeDefaultModel) {
  const std::string model_dir = default_model_dir();
  CROSSPOINT_REQUIRE_ASSET(model_dir + "/config.json");
  CROSSPOINT_REQUIRE_ASSET(model_dir + "/tokenizer.json");
  run_scenario("default_model");
}

}  // namespace
}  // namespace crosspoint::bench
