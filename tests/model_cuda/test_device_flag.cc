// `crosspoint serve|generate --device ...`: one clear error line, before any model is read,
// when the device cannot be used (here: no GPU on the machine, or an unknown device name).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "model/cuda/cuda_model.h"
#include "run_command.h"

namespace crosspoint {
namespace {

// The crosspoint binary of this build; absent where only the test binary was copied (the GPU
// machine runs a bundle whose binary lives elsewhere).
#define SKIP_WITHOUT_BINARY() \
  if (!std::filesystem::exists(CROSSPOINT_BINARY)) GTEST_SKIP() << CROSSPOINT_BINARY << " is not here"

TEST(DeviceFlagTest, CudaWithoutAGpuIsOneClearError) {
  if (cuda::cuda_device_count() > 0) GTEST_SKIP() << "a GPU is present";
  SKIP_WITHOUT_BINARY();
  for (const std::string sub : {"serve --model /nonexistent", "generate --model /nonexistent --prompt hi"}) {
    const auto [output, status] = testing::run_command(std::string(CROSSPOINT_BINARY) + " " + sub + " --device cuda");
    EXPECT_NE(status, 0) << sub;
    EXPECT_NE(output.find("--device cuda: no CUDA GPU is visible on this machine"), std::string::npos) << output;
    EXPECT_EQ(output.find("/nonexistent"), std::string::npos) << "the device is checked before the model: " << output;
  }
}

TEST(DeviceFlagTest, UnknownDeviceIsNamed) {
  SKIP_WITHOUT_BINARY();
  const auto [serve_output, serve_status] =
      testing::run_command(std::string(CROSSPOINT_BINARY) + " serve --model /nonexistent --device tpu");
  EXPECT_NE(serve_status, 0);
  EXPECT_NE(serve_output.find("--device must be cpu, cuda or auto, got 'tpu'"), std::string::npos) << serve_output;
  const auto [gen_output, gen_status] =
      testing::run_command(std::string(CROSSPOINT_BINARY) + " generate --model /nonexistent --prompt hi --device tpu");
  EXPECT_NE(gen_status, 0);
  EXPECT_NE(gen_output.find("--device must be cpu, cuda or auto, got 'tpu'"), std::string::npos) << gen_output;
}

}  // namespace
}  // namespace crosspoint
