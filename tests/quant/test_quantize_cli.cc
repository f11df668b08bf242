// `crosspoint quantize --calib-pack`: the conversations joined and cut into samples of exactly
// --calib-max-tokens tokens (what GPTQ with long calibration sequences wants), and a clear
// refusal when the file holds too few tokens for the samples asked for. On the default model
// (skipped when the setup script has not converted it; the GPTQ run only in unsanitised builds).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <unistd.h>

#include "common/paths.h"
#include "run_command.h"

namespace crosspoint {
namespace {

class QuantizeCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(CROSSPOINT_BINARY)) GTEST_SKIP() << CROSSPOINT_BINARY << " is not here";
    if (!std::filesystem::exists(default_model_dir() + "/model.safetensors"))
      GTEST_SKIP() << "the default model is not converted yet (scripts/setup.sh)";
    out_ =
        (std::filesystem::temp_directory_path() / ("crosspoint_quantize_cli_" + std::to_string(::getpid()))).string();
  }
  void TearDown() override {
    std::error_code ec;
    if (!out_.empty()) std::filesystem::remove_all(out_, ec);
  }
  std::string quantize(const std::string& args) const {
    return std::string(CROSSPOINT_BINARY) + " quantize --model default --scheme w4a16 --device cpu --threads 2 " +
           "--calib-dataset " + CROSSPOINT_FIXTURES_DIR + "/bench/sharegpt_small.json --out " + out_ + " --force " +
           args;
  }
  std::string out_;
};

TEST_F(QuantizeCliTest, CalibPackCutsTheConversationsIntoFullSamples) {
#ifdef CROSSPOINT_SANITIZED_BINARY
  GTEST_SKIP() << "GPTQ of the default model through a sanitised binary takes six minutes; the Release pass runs it";
#endif
  const auto [output, status] =
      testing::run_command(quantize("--calib-pack --calib-samples 2 --calib-max-tokens 48 --group-size 64"));
  ASSERT_EQ(status, 0) << output;
  EXPECT_NE(output.find("GPTQ calibration over 2 samples, 96 tokens"), std::string::npos) << output;
  EXPECT_TRUE(std::filesystem::exists(out_ + "/model.safetensors"));
}

TEST_F(QuantizeCliTest, TooFewTokensToPackIsRefused) {
  const auto [output, status] =
      testing::run_command(quantize("--calib-pack --calib-samples 500 --calib-max-tokens 2048"));
  EXPECT_NE(status, 0);
  EXPECT_NE(output.find("packed samples of 2048 tokens, not the 500 asked for"), std::string::npos) << output;
  EXPECT_FALSE(std::filesystem::exists(out_ + "/model.safetensors"));
}

}  // namespace
}  // namespace crosspoint
