// quantize_model's output directory: the checkpoint is written into <out>.partial and moved into
// --out only when complete, so a refused or failed run leaves --out as it was and no .partial
// behind; --force replaces the weights and the files quantize writes, and keeps the others.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "model/model_test_util.h"
#include "quant/quantize_model.h"

namespace crosspoint {
namespace {

namespace fs = std::filesystem;

QuantizeModelOptions int8_options(const fs::path& out) {
  QuantizeModelOptions o;
  o.model_dir = testing::model_fixture_dir("qwen2_untied_bf16");
  o.out_dir = out.string();
  o.scheme = QuantizeScheme::kW8A8Int8;
  return o;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class QuantizeOutDirTest : public ::testing::Test {
 protected:
  // One directory per test and process: ctest runs these tests side by side.
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("crosspoint_quantize_out_" + std::to_string(::getpid()));
    root_ /= ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_.parent_path()); }
  fs::path root_;
};

TEST_F(QuantizeOutDirTest, AFinishedRunLeavesOnlyTheCheckpoint) {
  const fs::path out = root_ / "int8";
  ASSERT_TRUE(quantize_model(int8_options(out)).is_ok());
  EXPECT_TRUE(fs::exists(out / "model.safetensors"));
  EXPECT_TRUE(fs::exists(out / "config.json"));
  EXPECT_FALSE(fs::exists(fs::path(out.string() + ".partial")));
}

TEST_F(QuantizeOutDirTest, ARefusedRunTouchesNothing) {
  const fs::path out = root_ / "w4a16";
  QuantizeModelOptions o = int8_options(out);
  o.scheme = QuantizeScheme::kW4A16;
  o.int4_method = Int4Method::kRtn;
  o.int4.group_size = 48;  // divides no width of the fixture
  EXPECT_EQ(quantize_model(o).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(fs::path(out.string() + ".partial")));
  // A non-empty --out without --force is refused before anything is written.
  fs::create_directories(out);
  std::ofstream(out / "README.md") << "mine\n";
  o.int4.group_size = 32;
  EXPECT_EQ(quantize_model(o).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(out / "model.safetensors"));
  EXPECT_FALSE(fs::exists(fs::path(out.string() + ".partial")));
}

TEST_F(QuantizeOutDirTest, AFailedRunLeavesTheOldCheckpoint) {
  const fs::path out = root_ / "int8";
  ASSERT_TRUE(quantize_model(int8_options(out)).is_ok());
  const std::string before = read_file(out / "model.safetensors");
  // The same --out from a model directory whose weights are missing: the run fails after
  // --out was checked, and the finished checkpoint there stays whole.
  const fs::path broken = root_ / "broken_model";
  fs::create_directories(broken);
  fs::copy_file(fs::path(testing::model_fixture_dir("qwen2_untied_bf16")) / "config.json", broken / "config.json");
  QuantizeModelOptions o = int8_options(out);
  o.model_dir = broken.string();
  o.overwrite = true;
  EXPECT_FALSE(quantize_model(o).is_ok());
  EXPECT_EQ(read_file(out / "model.safetensors"), before);
  EXPECT_FALSE(fs::exists(fs::path(out.string() + ".partial")));
}

TEST_F(QuantizeOutDirTest, ForceReplacesTheWeightsAndKeepsOtherFiles) {
  const fs::path out = root_ / "int8";
  fs::create_directories(out);
  std::ofstream(out / "README.md") << "mine\n";
  std::ofstream(out / "model-00001-of-00002.safetensors") << "old shard\n";
  QuantizeModelOptions o = int8_options(out);
  o.overwrite = true;
  ASSERT_TRUE(quantize_model(o).is_ok());
  EXPECT_EQ(read_file(out / "README.md"), "mine\n");
  EXPECT_FALSE(fs::exists(out / "model-00001-of-00002.safetensors"));
  EXPECT_TRUE(fs::exists(out / "model.safetensors"));
  EXPECT_FALSE(fs::exists(fs::path(out.string() + ".partial")));
}

}  // namespace
}  // namespace crosspoint
