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
      {"--tensor-parallel-size 0", "--tensor-parallel-size 0: must be at least 1"},
      {"-tp -2", "--tensor-parallel-size -2"},
      {"--pipeline-parallel-size 2", "--pipeline-parallel-size 2: crosspoint serve runs on one GPU"},
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

// `--config FILE`, vLLM's YAML config (docs.vllm.ai, "Server Arguments"): its example file
// parses, the command line wins over it (the positional MODEL over `model:`), switches and
// mappings become what vLLM makes of them, and bad files are errors naming the file.
std::string write_config(const std::string& name, const std::string& text) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "crosspoint-vllm-config-test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return path;
}

TEST(VllmServeFlags, ConfigFileAsVllmReadsIt) {
  SKIP_WITHOUT_BINARY();
  const std::string example = write_config("example.yaml",
                                           "model: /nonexistent/from-config\n"
                                           "host: \"127.0.0.1\"\n"
                                           "port: 6379\n"
                                           "uvicorn-log-level: \"info\"\n"
                                           "trust_remote_code: true\n"
                                           "enforce-eager: false\n");
  {
    const auto [output, status] = run_serve("--config " + example);
    EXPECT_NE(status, 0);
    EXPECT_NE(output.find("5 flag(s) from " + example), std::string::npos) << output;  // the false switch left out
    EXPECT_NE(output.find("/nonexistent/from-config"), std::string::npos) << output;
    EXPECT_NE(output.find("--uvicorn-log-level info: vLLM's flag, without effect"), std::string::npos) << output;
    EXPECT_NE(output.find("--trust-remote-code: vLLM's flag, without effect"), std::string::npos) << output;
  }
  {  // the command line wins: its MODEL and its --uvicorn-log-level
    const auto [output, status] =
        run_serve(std::string(kMissingModel) + " --uvicorn-log-level debug --config=" + example);
    EXPECT_NE(output.find(kMissingModel), std::string::npos) << output;
    EXPECT_EQ(output.find("/nonexistent/from-config"), std::string::npos) << output;
    EXPECT_NE(output.find("--uvicorn-log-level debug"), std::string::npos) << output;
    EXPECT_EQ(output.find("--uvicorn-log-level info"), std::string::npos) << output;
  }
  {  // a mapping becomes its JSON, and a feature crosspoint lacks is refused by name
    const auto [output, status] =
        run_serve(std::string(kMissingModel) + " --config " +
                  write_config("spec.yaml", "speculative-config:\n  method: ngram\n  num_speculative_tokens: 3\n"));
    EXPECT_NE(status, 0);
    EXPECT_NE(output.find(R"(--speculative-config {"method":"ngram","num_speculative_tokens":3})"), std::string::npos)
        << output;
  }
  const std::vector<std::pair<std::string, std::string>> bad = {
      {write_config("broken.yaml", "a: [1\n"), "not YAML"},
      {write_config("list.yaml", "- model\n"), "must be a mapping"},
      {write_config("unknown.yaml", "no-such-flag: 3\n"), "no-such-flag is not a flag of crosspoint serve"},
      {"/nonexistent/config.yaml", "--config /nonexistent/config.yaml: no such file"},
  };
  for (const auto& [path, message] : bad) {
    const auto [output, status] = run_serve(std::string(kMissingModel) + " --config " + path);
    EXPECT_NE(status, 0) << path;
    EXPECT_NE(output.find(message), std::string::npos) << path << "\n" << output;
    EXPECT_NE(output.find(path), std::string::npos) << output;
    EXPECT_EQ(output.find("model directory does not exist"), std::string::npos) << path;  // stopped first
  }
}

}  // namespace
}  // namespace crosspoint
