// `crosspoint convert` as a user runs it: output directory, refusal to overwrite, --force,
// and one-line errors with a non-zero exit for bad input.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "formats/model_config.h"
#include "formats/safetensors.h"
#include "formats_test_util.h"

namespace crosspoint {
namespace {

using testing::fixture;
using testing::ScratchDir;

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

RunResult run_convert(const std::string& args) {
  const std::string command = std::string(CROSSPOINT_BINARY) + " convert " + args + " 2>&1";
  RunResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The last line of the output (the error line, after any log lines).
std::string last_line(const std::string& text) {
  std::string trimmed = text;
  while (!trimmed.empty() && trimmed.back() == '\n') trimmed.pop_back();
  const size_t newline = trimmed.rfind('\n');
  return newline == std::string::npos ? trimmed : trimmed.substr(newline + 1);
}

TEST(ConvertCli, WritesDirectoryRefusesOverwriteAndHonoursForce) {
  ScratchDir scratch;
  const std::string out = scratch.file("tiny");
  const std::string gguf = fixture("tiny_llama/model.gguf");
  RunResult first = run_convert("--gguf " + gguf + " --out " + out);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  for (const char* file :
       {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"}) {
    EXPECT_TRUE(std::filesystem::exists(out + "/" + file)) << file;
  }
  EXPECT_NE(first.output.find("27 tensors"), std::string::npos) << first.output;
  auto config = load_model_config(out);
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  EXPECT_EQ(config->architecture_name, "LlamaForCausalLM");
  auto converted = SafetensorsModel::open_dir(out);
  auto original = SafetensorsModel::open_dir(fixture("tiny_llama"));
  ASSERT_TRUE(converted.is_ok() && original.is_ok());
  const TensorInfo* got = (*converted)->find("model.layers.1.self_attn.k_proj.weight");
  const TensorInfo* want = (*original)->find("model.layers.1.self_attn.k_proj.weight");
  ASSERT_TRUE(got && want);
  EXPECT_EQ(std::memcmp(got->data, want->data, want->num_bytes), 0);

  RunResult again = run_convert("--gguf " + gguf + " --out " + out);
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_EQ(last_line(again.output),
            "crosspoint convert: invalid argument: " + out + ": already exists (pass --force to overwrite it)");

  RunResult forced = run_convert("--gguf " + fixture("tiny_qwen2/model.gguf") + " --out " + out + " --force");
  ASSERT_EQ(forced.exit_code, 0) << forced.output;
  config = load_model_config(out);
  ASSERT_TRUE(config.is_ok());
  EXPECT_EQ(config->architecture_name, "Qwen2ForCausalLM");
  // Only the model directory is left: no scratch directories beside it.
  size_t entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(scratch.path())) entries += entry.exists();
  EXPECT_EQ(entries, 1u);
}

TEST(ConvertCli, BadInputIsOneLineErrorAndNoOutput) {
  ScratchDir scratch;
  const std::string out = scratch.file("never");
  std::vector<uint8_t> truncated = testing::read_bytes(fixture("tiny_qwen2/model.gguf"));
  truncated.resize(truncated.size() / 2);
  testing::write_bytes(scratch.file("truncated.gguf"), truncated);

  RunResult bad = run_convert("--gguf " + scratch.file("truncated.gguf") + " --out " + out);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(last_line(bad.output).rfind("crosspoint convert: corrupt: " + scratch.file("truncated.gguf") + ": ", 0), 0u)
      << bad.output;
  EXPECT_FALSE(std::filesystem::exists(out));

  RunResult missing = run_convert("--gguf " + scratch.file("nope.gguf") + " --out " + out);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(last_line(missing.output),
            "crosspoint convert: not found: " + scratch.file("nope.gguf") + ": no such file");

  RunResult other_arch = run_convert("--gguf " + fixture("gguf_types.gguf") + " --out " + out);
  EXPECT_EQ(other_arch.exit_code, 1);
  EXPECT_NE(last_line(other_arch.output).find("general.architecture \"testarch\" is not supported"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(out));

  RunResult usage = run_convert("--out " + out);
  EXPECT_NE(usage.exit_code, 0);
}

}  // namespace
}  // namespace crosspoint
