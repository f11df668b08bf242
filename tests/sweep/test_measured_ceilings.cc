// --ceilings: the GPU's ceilings measured by shared/tools/gpu/ceilings.py (a real H200 run,
// tests/fixtures/sweep/h200_ceilings.json) become the roofline's hardware, and the serve
// command follows --device.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "analysis/hardware_json.h"
#include "sweep/measured_ceilings.h"
#include "sweep/sweep_runner.h"

namespace crosspoint::sweep {
namespace {

const std::string kH200 = std::string(CROSSPOINT_FIXTURES_DIR) + "/sweep/h200_ceilings.json";

TEST(MeasuredCeilings, CeilingsPyOutputOfTheH200) {
  auto c = load_measured_ceilings(kH200);
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->name, "NVIDIA H200");
  EXPECT_NEAR(c->memory_gb, 150.1, 0.1);
  // The best streaming read (triton, grid 2112), as ceilings.py reported it: 4,225.7 GB/s.
  EXPECT_NEAR(c->bandwidth_gb_s, 4225.7, 0.1);
  EXPECT_NEAR(c->fp16_tflops, 721.85, 0.01);
  // Row-wise (per-token x per-channel) fp8, fast accumulation: 1,367.3, not the tensor-wise 1,371.2.
  EXPECT_NEAR(c->fp8_tflops, 1367.28, 0.01);
  EXPECT_NE(c->source.find("measured: ceilings.py"), std::string::npos) << c->source;
  EXPECT_NE(c->source.find("torch 2.11.0+cu130"), std::string::npos) << c->source;

  // Kept as hwinfo.json in the shape `crosspoint hwinfo --json` prints, which the report reads.
  const nlohmann::json hwinfo = measured_ceilings_hwinfo_json(*c, "cuda", nlohmann::json::object());
  EXPECT_EQ(hwinfo["device"], "cuda");
  EXPECT_TRUE(hwinfo["measured"].get<bool>());
  auto back = analysis::ceilings_from_json(hwinfo, "hwinfo.json");
  ASSERT_TRUE(back.is_ok());
  EXPECT_EQ(back->name, "NVIDIA H200");
  EXPECT_NEAR(back->bandwidth_gb_s, 4225.7, 0.1);
}

TEST(MeasuredCeilings, MissingPiecesAreNamed) {
  auto error_of = [](const nlohmann::json& j) {
    auto c = ceilings_from_torch_measurement(j, "c.json");
    return c.is_ok() ? std::string("ok") : c.status().message();
  };
  const nlohmann::json read = {{"GBps_median", 4000.0}};
  const nlohmann::json mm = {{"TFLOPs_median", 700.0}};
  EXPECT_NE(error_of({{"sm_count", 132}}).find("'gpu_name' is missing"), std::string::npos);
  EXPECT_NE(error_of({{"gpu_name", "X"}, {"matmul_float16_8192^3", mm}}).find("(read bytes)"), std::string::npos);
  EXPECT_NE(error_of({{"gpu_name", "X"}, {"a (read bytes)", read}}).find("matmul_float16_8192^3"), std::string::npos);
  // No fp8 entry: a GPU without fp8 matmul, rate 0.
  auto no_fp8 = ceilings_from_torch_measurement(
      {{"gpu_name", "A100"}, {"a (read bytes)", read}, {"matmul_bfloat16_8192^3", mm}}, "c.json");
  ASSERT_TRUE(no_fp8.is_ok()) << no_fp8.status().message();
  EXPECT_EQ(no_fp8->fp8_tflops, 0);
  EXPECT_EQ(no_fp8->fp16_tflops, 700);

  // Files: missing, not JSON, and a plain hwinfo ceilings object (read by the analysis).
  const std::string dir =
      std::filesystem::temp_directory_path() / ("crosspoint_ceilings_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/broken.json") << "{not json";
  std::ofstream(dir + "/hwinfo.json") << R"({"ceilings": {"name": "L4", "bandwidth_gb_s": 300, "fp16_tflops": 121}})";
  EXPECT_NE(load_measured_ceilings(dir + "/none.json").status().message().find("none.json: cannot open"),
            std::string::npos);
  EXPECT_NE(load_measured_ceilings(dir + "/broken.json").status().message().find("not valid JSON"), std::string::npos);
  auto l4 = load_measured_ceilings(dir + "/hwinfo.json");
  ASSERT_TRUE(l4.is_ok()) << l4.status().message();
  EXPECT_EQ(l4->name, "L4");
  EXPECT_EQ(l4->bandwidth_gb_s, 300);
  std::filesystem::remove_all(dir);
}

TEST(ServeCommand, CpuKeepsKvMemoryAndThreadsCudaPassesTheMemoryFraction) {
  SweepOptions o;
  o.crosspoint_exe = "/x/crosspoint";
  o.threads = 2;
  o.max_model_len = 4096;
  const std::vector<std::string> cpu = serve_command(o, "/m");
  EXPECT_EQ(cpu, (std::vector<std::string>{"/x/crosspoint", "serve", "--model", "/m", "--served-model-name", "sweep",
                                           "--max-model-len", "4096", "--device", "cpu", "--kv-cache-memory", "1GiB",
                                           "--threads", "2"}));
  o.device = "cuda";
  o.gpu_memory_utilization = 0.85;
  o.enforce_eager = true;
  const std::vector<std::string> cuda = serve_command(o, "/m");
  EXPECT_EQ(cuda, (std::vector<std::string>{"/x/crosspoint", "serve", "--model", "/m", "--served-model-name", "sweep",
                                            "--max-model-len", "4096", "--device", "cuda", "--gpu-memory-utilization",
                                            "0.85", "--enforce-eager"}));
  // A memory budget replaces the fraction on the GPU and the KV size on the CPU.
  o.memory_budget = "24GB";
  o.enforce_eager = false;
  EXPECT_EQ(serve_command(o, "/m"),
            (std::vector<std::string>{"/x/crosspoint", "serve", "--model", "/m", "--served-model-name", "sweep",
                                      "--max-model-len", "4096", "--device", "cuda", "--memory-budget", "24GB"}));
  o.device = "cpu";
  EXPECT_EQ(serve_command(o, "/m"),
            (std::vector<std::string>{"/x/crosspoint", "serve", "--model", "/m", "--served-model-name", "sweep",
                                      "--max-model-len", "4096", "--device", "cpu", "--memory-budget", "24GB",
                                      "--threads", "2"}));
  // A +kv-fp8 label's server gets --kv-cache-dtype fp8.
  EXPECT_EQ(serve_command(o, "/m", "fp8"),
            (std::vector<std::string>{"/x/crosspoint", "serve", "--model", "/m", "--served-model-name", "sweep",
                                      "--max-model-len", "4096", "--kv-cache-dtype", "fp8", "--device", "cpu",
                                      "--memory-budget", "24GB", "--threads", "2"}));
  // A -tp2 label's server is split over two ranks.
  EXPECT_EQ(serve_command(o, "/m", "auto", "default", 2),
            (std::vector<std::string>{"/x/crosspoint", "serve", "--model", "/m", "--served-model-name", "sweep",
                                      "--max-model-len", "4096", "--tensor-parallel-size", "2", "--device", "cpu",
                                      "--memory-budget", "24GB", "--threads", "2"}));
  // --max-num-seqs reaches every server only when set.
  o.max_num_seqs = 1024;
  EXPECT_EQ(serve_command(o, "/m"),
            (std::vector<std::string>{"/x/crosspoint", "serve", "--model", "/m", "--served-model-name", "sweep",
                                      "--max-model-len", "4096", "--max-num-seqs", "1024", "--device", "cpu",
                                      "--memory-budget", "24GB", "--threads", "2"}));
}

}  // namespace
}  // namespace crosspoint::sweep
