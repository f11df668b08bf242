// `vllm serve` command lines given to `crosspoint serve` unchanged (the model replaced by a
// directory that does not exist, so that each run stops right after its flags are read): they
// parse, the flags without effect here are logged, and the flags for features crosspoint lacks
// are refused naming them. The lines follow vLLM's docs ("OpenAI-Compatible Server", "Engine
// Arguments", docs.vllm.ai, 2026).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace crosspoint {
namespace {

#define SKIP_WITHOUT_BINARY() \
  if (!std::filesystem::exists(CROSSPOINT_BINARY)) GTEST_SKIP() << CROSSPOINT_BINARY << " is not here"

std::pair<std::string, int> run_serve(const std::string& args) {
  std::string output;
  FILE* pipe = popen((std::string(CROSSPOINT_BINARY) + " serve " + args + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {"popen failed", -1};
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  return {output, pclose(pipe)};
}

constexpr const char* kMissingModel = "/nonexistent/vllm-model";

TEST(VllmServeFlags, PastedCommandLinesParse) {
  SKIP_WITHOUT_BINARY();
  const std::vector<std::string> lines = {
      "",
      "--dtype auto --api-key token-abc123",
      "--generation-config vllm",
      "--tensor-parallel-size 1 --max-model-len 4096 --gpu-memory-utilization 0.9 --trust-remote-code --seed 0 "
      "--disable-log-requests",
      "-tp 1 --max-num-seqs 256 --max-num-batched-tokens 2048 --enable-prefix-caching --port 8000 "
      "--served-model-name qwen --download-dir /tmp --load-format auto --enable-chunked-prefill",
      "--quantization fp8 --kv-cache-dtype fp8 --block-size 16 --swap-space 4 --uvicorn-log-level info",
      "--tokenizer " + std::string(kMissingModel) + " --max-logprobs 20 --disable-log-stats -pp=1",
  };
  for (const std::string& line : lines) {
    const auto [output, status] = run_serve(std::string(kMissingModel) + " " + line);
    EXPECT_NE(status, 0) << line;
    EXPECT_EQ(output.find("not expected"), std::string::npos) << line << "\n" << output;
    EXPECT_EQ(output.find("unrecognized"), std::string::npos) << line << "\n" << output;
    EXPECT_NE(output.find(kMissingModel), std::string::npos) << line << "\n" << output;  // read as the model
  }
  const auto [output, status] = run_serve(std::string(kMissingModel) + " --trust-remote-code --download-dir /tmp");
  EXPECT_NE(output.find("--trust-remote-code: vLLM's flag, without effect in crosspoint serve"), std::string::npos)
      << output;
  EXPECT_NE(output.find("--download-dir /tmp: vLLM's flag, without effect"), std::string::npos) << output;
}

TEST(VllmServeFlags, FeaturesCrosspointLacksAreRefusedNamingTheFlag) {
  SKIP_WITHOUT_BINARY();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--enable-lora --lora-modules a=/b", "--enable-lora"},
      {"--speculative-config {}", "--speculative-config"},
      {"--tensor-parallel-size 2", "--tensor-parallel-size 2: crosspoint serve runs on one GPU"},
      {"-tp 4", "--tensor-parallel-size 4"},
      {"--ssl-keyfile k.pem", "--ssl-keyfile"},
      {"--max-logprobs 5", "--max-logprobs 5"},
  };
  for (const auto& [line, message] : cases) {
    const auto [output, status] = run_serve(std::string(kMissingModel) + " " + line);
    EXPECT_NE(status, 0) << line;
    EXPECT_NE(output.find(message), std::string::npos) << line << "\n" << output;
    EXPECT_EQ(output.find(std::string("model ") + kMissingModel), std::string::npos) << line;  // refused first
  }
  const auto [twice, status] = run_serve(std::string(kMissingModel) + " --model /other");
  EXPECT_EQ(status >> 8, 2);
  EXPECT_NE(twice.find("the model is given twice"), std::string::npos) << twice;
}

}  // namespace
}  // namespace crosspoint
