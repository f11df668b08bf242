// `crosspoint tokenize` end to end: ids as JSON, --decode, --no-special, and one-line
// errors with a non-zero exit for missing or corrupt tokenizer files.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tokenizer_test_util.h"

namespace crosspoint {
namespace {

struct CommandResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};

CommandResult run_command(const std::string& args) {
  const std::string command = std::string(CROSSPOINT_BINARY) + " tokenize " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  std::string output;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

TEST(TokenizeCli, EncodesAndDecodesWithQwen) {
  CROSSPOINT_REQUIRE_ASSET(testing::qwen_tokenizer_dir() + "/tokenizer.json");
  const std::string model = " --model " + testing::qwen_tokenizer_dir();
  auto encoded = run_command(model + " --text 'Hello world'");
  EXPECT_EQ(encoded.exit_code, 0);
  EXPECT_EQ(encoded.output, "[9707,1879]\n");
  auto special = run_command(model + " --text 'Hello world<|im_end|>'");
  EXPECT_EQ(special.output, "[9707,1879,151645]\n");
  auto decoded = run_command(model + " --decode '[9707, 1879]'");
  EXPECT_EQ(decoded.exit_code, 0);
  EXPECT_EQ(decoded.output, "Hello world\n");
}

TEST(TokenizeCli, FromGgufAndExportedFiles) {
  CROSSPOINT_REQUIRE_ASSET(testing::smollm2_gguf_path());
  const auto smollm2 = testing::load_fixture("smollm2.json")["cases"];
  const auto& hello = *std::find_if(smollm2.begin(), smollm2.end(), [](const auto& c) { return c["name"] == "hello"; });
  const std::string expected = hello["ids"].dump() + "\n";
  auto encoded = run_command("--gguf " + testing::smollm2_gguf_path() + " --text 'Hello world'");
  EXPECT_EQ(encoded.exit_code, 0);
  EXPECT_EQ(encoded.output, expected);

  const auto dir = std::filesystem::temp_directory_path() / ("crosspoint_cli_export_" + std::to_string(getpid()));
  auto exported = run_command("--gguf " + testing::smollm2_gguf_path() + " --export-hf " + dir.string());
  EXPECT_EQ(exported.exit_code, 0) << exported.output;
  const std::string model = " --model " + dir.string();
  EXPECT_EQ(run_command(model + " --text 'Hello world'").output, expected);
  EXPECT_EQ(run_command(model + " --no-special --text '<|im_end|>'").output, "[44,108,306,79,486,108,46]\n");
  auto too_big = run_command(model + " --decode '[999999999]'");
  EXPECT_NE(too_big.exit_code, 0);
  EXPECT_NE(too_big.output.find("vocabulary size"), std::string::npos);
  auto not_json = run_command(model + " --decode 'nope'");
  EXPECT_NE(not_json.exit_code, 0);
  EXPECT_NE(not_json.output.find("--decode"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(TokenizeCli, MissingAndCorruptFilesGiveOneLineErrors) {
  const auto dir = std::filesystem::temp_directory_path() / ("crosspoint_cli_tok_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto missing = run_command("--model " + dir.string() + " --text hi");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("tokenizer.json"), std::string::npos);
  EXPECT_EQ(std::count(missing.output.begin(), missing.output.end(), '\n'), 1) << missing.output;

  std::ofstream(dir / "tokenizer.json") << "{\"model\": {\"type\": \"BPE\", \"vocab\": ";
  auto corrupt = run_command("--model " + dir.string() + " --text hi");
  EXPECT_EQ(corrupt.exit_code, 1);
  EXPECT_NE(corrupt.output.find("not valid JSON"), std::string::npos) << corrupt.output;
  EXPECT_EQ(std::count(corrupt.output.begin(), corrupt.output.end(), '\n'), 1) << corrupt.output;

  auto bad_gguf = run_command("--gguf " + (dir / "tokenizer.json").string() + " --text hi");
  EXPECT_EQ(bad_gguf.exit_code, 1);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace crosspoint
