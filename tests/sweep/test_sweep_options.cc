// Option parsing and the checks made before a sweep runs anything.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include "sweep/sweep_options.h"

namespace crosspoint::sweep {
namespace {

TEST(SweepOptions, PrecisionListKeepsOrderAndRejectsUnknownAndRepeats) {
  auto p = parse_precision_list("w4a16,fp16");
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p.value(), (std::vector<std::string>{"w4a16", "fp16"}));
  auto unknown = parse_precision_list("fp16,int3");
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_NE(unknown.status().message().find("'int3'"), std::string::npos);
  EXPECT_FALSE(parse_precision_list("fp16,fp16").is_ok());
  EXPECT_FALSE(parse_precision_list("").is_ok());
}

TEST(SweepOptions, ConcurrencyListIsSortedAndUnique) {
  auto c = parse_concurrency_list("16, 1,4,4");
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c.value(), (std::vector<int>{1, 4, 16}));
  for (const char* bad : {"0", "1,x", "-3", "2.5", "", "1,,2"}) {
    EXPECT_FALSE(parse_concurrency_list(bad).is_ok()) << bad;
  }
}

TEST(SweepOptions, SloParsesEitherPart) {
  SweepOptions o;
  ASSERT_TRUE(parse_slo("ttft:500,tpot:50.5", o).is_ok());
  EXPECT_DOUBLE_EQ(*o.slo_ttft_ms, 500);
  EXPECT_DOUBLE_EQ(*o.slo_tpot_ms, 50.5);
  SweepOptions only_tpot;
  ASSERT_TRUE(parse_slo("tpot:20", only_tpot).is_ok());
  EXPECT_FALSE(only_tpot.slo_ttft_ms.has_value());
  for (const char* bad : {"ttft", "ttft:", "ttft:-1", "itl:5", "tpot:5ms"}) {
    SweepOptions o2;
    Status s = parse_slo(bad, o2);
    EXPECT_FALSE(s.is_ok()) << bad;
    EXPECT_NE(s.message().find("--slo"), std::string::npos);
  }
}

TEST(SweepOptions, ValidationNamesTheOption) {
  SweepOptions o;
  o.crosspoint_exe = "/bin/sh";  // any existing file
  o.precisions = {"fp16"};
  o.concurrency = {1};
  EXPECT_TRUE(validate_sweep_options(o).is_ok());
  auto expect_error = [&](SweepOptions bad, const std::string& needle) {
    Status s = validate_sweep_options(bad);
    ASSERT_FALSE(s.is_ok()) << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  SweepOptions b = o;
  b.num_prompts = 0;
  expect_error(b, "--num-prompts");
  b = o;
  b.device = "cuda";
  EXPECT_TRUE(validate_sweep_options(b).is_ok()) << "cuda measures its own ceilings (run_sweep checks the GPU)";
  b.hardware = "B9000";
  expect_error(b, "--hardware: hardware 'B9000' is not in the datasheet table");
  b.hardware = "H200";
  EXPECT_TRUE(validate_sweep_options(b).is_ok()) << "cuda with a datasheet entry as the fallback";
  b.gpu_memory_utilization = 1.5;
  expect_error(b, "--gpu-memory-utilization");
  b = o;
  b.device = "cuda";
  b.ceilings_path = "/nonexistent/ceilings.json";
  expect_error(b, "--ceilings: /nonexistent/ceilings.json");
  b = o;
  b.device = "tpu";
  expect_error(b, "--device");
  b = o;
  b.dataset = "alpaca";
  expect_error(b, "--dataset");
  b = o;
  b.dataset_path = "/nonexistent/sharegpt.json";
  expect_error(b, "/nonexistent/sharegpt.json");
  b = o;
  b.bisect_resolution = 0;
  expect_error(b, "--bisect-resolution");
  b = o;
  b.crosspoint_exe = "/nonexistent/crosspoint";
  expect_error(b, "/nonexistent/crosspoint");
  b = o;
  b.repeats = 0;
  expect_error(b, "--repeats");
  b = o;
  b.repeats = 9;  // more than --max-runs-per-cell (8)
  expect_error(b, "--max-runs-per-cell");
  b = o;
  b.rerun_interfered = -1;
  expect_error(b, "--rerun-interfered");
  b = o;
  b.time_budget_s = std::nan("");
  expect_error(b, "--time-budget");
  b = o;
  b.time_budget_s = -1;  // the device's default
  EXPECT_TRUE(validate_sweep_options(b).is_ok());
}

TEST(SweepOptions, NumPromptsOneNumberOrOnePerLevel) {
  SweepOptions o;
  ASSERT_TRUE(parse_num_prompts("12", "1,10,100", o).is_ok());
  EXPECT_EQ(o.num_prompts, 12);
  EXPECT_TRUE(o.num_prompts_by_level.empty());
  EXPECT_EQ(num_prompts_for_level(o, 10), 12);

  // Paired with the levels in the order given, not sorted first.
  ASSERT_TRUE(parse_num_prompts("200,20,100", "100,1,10", o).is_ok());
  EXPECT_EQ(o.num_prompts_by_level, (std::map<int, int>{{1, 20}, {10, 100}, {100, 200}}));
  EXPECT_EQ(num_prompts_for_level(o, 1), 20);
  EXPECT_EQ(num_prompts_for_level(o, 100), 200);
  // A crossover probe takes the next higher level's count; above the grid, the last one.
  EXPECT_EQ(num_prompts_for_level(o, 32), 200);
  EXPECT_EQ(num_prompts_for_level(o, 4), 100);
  EXPECT_EQ(num_prompts_for_level(o, 400), 200);

  for (const auto& [prompts, levels, needle] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"20,100", "1,10,100", "2 values for 3 --concurrency levels"},
           {"20,x,200", "1,10,100", "'x' is not a positive integer"},
           {"20,0,200", "1,10,100", "'0' is not a positive integer"},
           {"", "1", "--num-prompts: empty"},
           {"5,6", "4,4", "concurrency 4 is given two different counts"},
       }) {
    SweepOptions bad;
    Status s = parse_num_prompts(prompts, levels, bad);
    ASSERT_FALSE(s.is_ok()) << prompts;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("--num-prompts"), std::string::npos) << s.message();
  }
}

TEST(SweepOptions, PrecisionModelIsPrecisionEqualsDirectoryOfTheRightFormat) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("crosspoint_sweep_precision_model_" + std::to_string(::getpid()));
  fs::create_directories(root / "gptq");
  fs::create_directories(root / "fp8");
  std::ofstream(root / "gptq" / "config.json") << R"({"quantization_config": {"quant_method": "gptq", "bits": 4}})";
  std::ofstream(root / "fp8" / "config.json")
      << R"({"quantization_config": {"quant_method": "compressed-tensors", "format": "float-quantized"}})";

  SweepOptions o;
  o.crosspoint_exe = "/bin/sh";
  o.precisions = {"fp16", "w8a8-fp8", "w4a16"};
  o.concurrency = {1};
  ASSERT_TRUE(parse_precision_model("w4a16=" + (root / "gptq").string(), o).is_ok());
  ASSERT_TRUE(parse_precision_model("w8a8-fp8=" + (root / "fp8").string(), o).is_ok());
  EXPECT_EQ(o.precision_models.at("w4a16"), (root / "gptq").string());
  EXPECT_TRUE(validate_sweep_options(o).is_ok()) << validate_sweep_options(o).message();

  for (const auto& [text, needle] : std::vector<std::pair<std::string, std::string>>{
           {"w4a16", "is not PRECISION=DIR"},
           {"=dir", "is not PRECISION=DIR"},
           {"w4a16=", "is not PRECISION=DIR"},
           {"fp16=/m", "fp16 is served from --model"},
           {"int3=/m", "unknown precision 'int3'"},
       }) {
    SweepOptions bad;
    Status s = parse_precision_model(text, bad);
    ASSERT_FALSE(s.is_ok()) << text;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  }
  EXPECT_FALSE(parse_precision_model("w4a16=/other", o).is_ok()) << "given twice";

  // The directory must hold the precision's format, and the precision must be swept.
  SweepOptions swapped = o;
  swapped.precision_models = {{"w4a16", (root / "fp8").string()}};
  Status s = validate_sweep_options(swapped);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("quantization_config is 'compressed-tensors/float-quantized', expected 'gptq', 'awq', "
                             "'compressed-tensors/pack-quantized'"),
            std::string::npos)
      << s.message();
  // AWQ and llm-compressor's W4A16 are W4A16 checkpoints too.
  for (const std::string quant : {R"({"quant_method": "awq", "bits": 4})",
                                  R"({"quant_method": "compressed-tensors", "format": "pack-quantized"})"}) {
    fs::create_directories(root / "w4a16");
    std::ofstream(root / "w4a16" / "config.json") << R"({"quantization_config": )" << quant << "}";
    SweepOptions other = o;
    other.precision_models["w4a16"] = (root / "w4a16").string();
    EXPECT_TRUE(validate_sweep_options(other).is_ok()) << quant << ": " << validate_sweep_options(other).message();
  }
  SweepOptions missing = o;
  missing.precision_models = {{"w4a16", (root / "none").string()}};
  s = validate_sweep_options(missing);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("none/config.json: no such file"), std::string::npos) << s.message();
  SweepOptions unswept = o;
  unswept.precisions = {"fp16", "w8a8-fp8"};
  s = validate_sweep_options(unswept);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("w4a16 is not in --precisions"), std::string::npos) << s.message();
  fs::remove_all(root);
}

}  // namespace
}  // namespace crosspoint::sweep
