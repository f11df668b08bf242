// GPU ceilings: the host-side logic everywhere (device resolution, datasheet match by CUDA
// name, the result as ceilings and JSON, `crosspoint hwinfo|serve|generate` without a GPU),
// and on a machine with a GPU a measurement whose rates must be positive and below twice
// the datasheet of the detected GPU (a sanity check that can fail, not a speed assertion).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/gpu_ceilings.h"
#include "analysis/hardware_json.h"

namespace crosspoint::analysis {
namespace {

TEST(ResolveDevice, AutoIsCudaOnlyWithAGpuAndACudaBuild) {
  std::string why;
  EXPECT_EQ(resolve_device_with("auto", 0, true, &why).value(), "cpu");
  EXPECT_NE(why.find("no CUDA GPU"), std::string::npos) << why;
  EXPECT_EQ(resolve_device_with("auto", 0, false, &why).value(), "cpu");
  EXPECT_NE(why.find("no CUDA backend"), std::string::npos) << why;
  EXPECT_EQ(resolve_device_with("auto", 2, false, &why).value(), "cpu");
  EXPECT_EQ(resolve_device_with("auto", 1, true, &why).value(), "cuda");
  EXPECT_NE(why.find("1 CUDA GPU visible"), std::string::npos) << why;
  EXPECT_EQ(resolve_device_with("cpu", 4, true, &why).value(), "cpu");
  EXPECT_EQ(resolve_device_with("cuda", 1, true, &why).value(), "cuda");

  auto no_gpu = resolve_device_with("cuda", 0, true);
  ASSERT_FALSE(no_gpu.is_ok());
  EXPECT_EQ(no_gpu.status().message(), "--device cuda: no CUDA GPU is visible on this machine");
  auto no_build = resolve_device_with("cuda", 1, false);
  ASSERT_FALSE(no_build.is_ok());
  EXPECT_NE(no_build.status().message().find("built without CUDA"), std::string::npos);
  auto unknown = resolve_device_with("tpu", 1, true);
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_EQ(unknown.status().message(), "--device must be cpu, cuda or auto, got 'tpu'");
}

TEST(ResolveDevice, AutoIsCpuOnThisMachineWithoutAGpu) {
  if (gpu_device_count() > 0) GTEST_SKIP() << "a GPU is visible";
  std::string why;
  auto device = resolve_device("auto", &why);
  ASSERT_TRUE(device.is_ok()) << device.status().to_string();
  EXPECT_EQ(device.value(), "cpu");
  EXPECT_FALSE(why.empty());
  EXPECT_FALSE(resolve_device("cuda").is_ok());
}

TEST(DatasheetForGpuName, CudaDeviceNamesFindTheirEntry) {
  const std::pair<const char*, const char*> cases[] = {
      {"NVIDIA H200", "H200"},
      {"NVIDIA H200 NVL", "H200"},
      {"NVIDIA H100 80GB HBM3", "H100 SXM"},
      {"NVIDIA H100 PCIe", "H100 PCIe"},
      {"NVIDIA A100-SXM4-40GB", "A100 40GB"},
      {"NVIDIA A100-SXM4-80GB", "A100 80GB"},
      {"NVIDIA A100 80GB PCIe", "A100 80GB"},
      {"NVIDIA L4", "L4"},
      {"NVIDIA L40S", "L40S"},
      {"NVIDIA A10G", "A10G"},
      {"NVIDIA A10", "A10"},
      {"Tesla T4", "T4"},
      {"NVIDIA GeForce RTX 4090", "RTX 4090"},
      {"NVIDIA GeForce RTX 3090", "RTX 3090"},
  };
  for (const auto& [cuda_name, entry] : cases) {
    auto found = datasheet_for_gpu_name(cuda_name);
    ASSERT_TRUE(found.is_ok()) << cuda_name << ": " << found.status().to_string();
    EXPECT_EQ(found.value().name, entry) << cuda_name;
  }
  for (const char* unknown : {"NVIDIA B200", "NVIDIA L40", "AMD Instinct MI300X", ""}) {
    auto missing = datasheet_for_gpu_name(unknown);
    ASSERT_FALSE(missing.is_ok()) << unknown;
    EXPECT_NE(missing.status().message().find("no entry in the datasheet table"), std::string::npos);
  }
}

TEST(GpuMeasurement, MedianOfOddEvenAndEmpty) {
  EXPECT_EQ(median_of({}), 0);
  EXPECT_EQ(median_of({5}), 5);
  EXPECT_EQ(median_of({9, 1, 5}), 5);
  EXPECT_EQ(median_of({4, 1, 3, 2}), 2.5);
}

GpuMeasurement h200_like() {
  GpuMeasurement m;
  m.gpu_name = "NVIDIA H200";
  m.compute_capability_major = 9;
  m.num_sms = 132;
  m.total_memory_bytes = int64_t{150} * 1000 * 1000 * 1000;
  m.measured_at_utc = "2026-11-30 04:50 UTC";
  m.read_bandwidth_gb_s = {4226, 4300, 20};
  m.write_bandwidth_gb_s = {4100, 4200, 20};
  m.copy_bandwidth_gb_s = {3900, 4000, 20};
  m.fp16_gemm_tflops = {722, 740, 20};
  m.fp8_gemm_tflops = {1371, 1400, 20};
  m.int8_gemm_tops = {1290, 1320, 20};
  m.gemm_size = 8192;
  m.bandwidth_buffer_bytes = int64_t{4} << 30;
  m.method = "bandwidth = streaming read ...";
  return m;
}

TEST(GpuMeasurement, CeilingsUseTheStreamingReadAndSayWhereTheyCameFrom) {
  const HardwareCeilings c = h200_like().as_ceilings();
  EXPECT_EQ(c.name, "NVIDIA H200");
  EXPECT_EQ(c.bandwidth_gb_s, 4226);  // the read median, not the best run nor the copy
  EXPECT_EQ(c.fp16_tflops, 722);
  EXPECT_EQ(c.fp8_tflops, 1371);
  EXPECT_EQ(c.int8_tops, 1290);
  EXPECT_DOUBLE_EQ(c.memory_gb, 150);
  EXPECT_EQ(c.source.rfind("measured by crosspoint hwinfo on NVIDIA H200 at 2026-11-30 04:50 UTC: ", 0), 0u)
      << c.source;
  // Round trip through the JSON `crosspoint roofline --hwinfo` and the sweep read back.
  const nlohmann::json hwinfo = {{"device", "cuda"},
                                 {"measured", true},
                                 {"ceilings", ceilings_to_json(c)},
                                 {"measurement", gpu_measurement_to_json(h200_like())}};
  auto back = ceilings_from_json(hwinfo, "hwinfo.json");
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back.value().bandwidth_gb_s, 4226);
  EXPECT_EQ(back.value().fp8_tflops, 1371);
  EXPECT_EQ(back.value().int8_tops, 1290);
  const nlohmann::json& raw = hwinfo["measurement"];
  EXPECT_EQ(raw["compute_capability"], "9.0");
  EXPECT_EQ(raw["copy_bandwidth_gb_s"]["median"], 3900);
  EXPECT_EQ(raw["fp16_gemm_tflops"]["num_repeats"], 20);
  EXPECT_EQ(raw["gemm_size"], 8192);
  EXPECT_EQ(raw["int8_gemm_tops"]["median"], 1290);
}

TEST(GpuMeasurement, WithoutAGpuTheErrorSaysWhy) {
  if (gpu_device_count() > 0) GTEST_SKIP() << "a GPU is visible";
  auto measured = measure_gpu(GpuMeasureOptions::quick());
  ASSERT_FALSE(measured.is_ok());
  EXPECT_EQ(measured.status().code(), StatusCode::kUnsupported);
  const std::string& message = measured.status().message();
  EXPECT_TRUE(message.find("built without CUDA") != std::string::npos ||
              message.find("no CUDA GPU is visible") != std::string::npos)
      << message;
}

// On the GPU: every rate positive, none above twice the datasheet of the detected GPU, and the
// memory given back (a second measurement finds as much free memory as the first).
TEST(GpuMeasurement, RatesArePositiveAndBelowTwiceTheDatasheet) {
  if (gpu_device_count() == 0) GTEST_SKIP() << "no CUDA GPU";
  auto first = measure_gpu(GpuMeasureOptions::quick());
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  const GpuMeasurement& m = first.value();
  std::printf(
      "%s: read %.0f GB/s, write %.0f GB/s, copy %.0f GB/s, fp16 %.1f TFLOP/s, fp8 %.1f TFLOP/s %s, int8 %.1f TOP/s "
      "%s\n",
      m.gpu_name.c_str(), m.read_bandwidth_gb_s.median, m.write_bandwidth_gb_s.median, m.copy_bandwidth_gb_s.median,
      m.fp16_gemm_tflops.median, m.fp8_gemm_tflops.median, m.fp8_note.c_str(), m.int8_gemm_tops.median,
      m.int8_note.c_str());
  EXPECT_GT(m.num_sms, 0);
  EXPECT_GT(m.total_memory_bytes, 0);
  EXPECT_GT(m.bandwidth_buffer_bytes, 4 * m.l2_cache_bytes) << "the read must not fit in L2";
  for (double rate : {m.read_bandwidth_gb_s.median, m.write_bandwidth_gb_s.median, m.copy_bandwidth_gb_s.median,
                      m.fp16_gemm_tflops.median}) {
    EXPECT_GT(rate, 0);
  }
  EXPECT_GE(m.read_bandwidth_gb_s.best, m.read_bandwidth_gb_s.median);
  const int sm = m.compute_capability_major * 10 + m.compute_capability_minor;
  if (sm >= 89) { EXPECT_GT(m.fp8_gemm_tflops.median, 0) << m.fp8_note; }
  EXPECT_GT(m.int8_gemm_tops.median, 0) << m.int8_note;
  auto sheet = datasheet_for_gpu_name(m.gpu_name);
  if (sheet.is_ok()) {
    const HardwareCeilings& d = sheet.value();
    EXPECT_LT(m.read_bandwidth_gb_s.median, 2 * d.bandwidth_gb_s) << d.name;
    EXPECT_LT(m.write_bandwidth_gb_s.median, 2 * d.bandwidth_gb_s) << d.name;
    EXPECT_LT(m.copy_bandwidth_gb_s.median, 2 * d.bandwidth_gb_s) << d.name;
    EXPECT_LT(m.fp16_gemm_tflops.median, 2 * d.fp16_tflops) << d.name;
    if (d.fp8_tflops > 0) { EXPECT_LT(m.fp8_gemm_tflops.median, 2 * d.fp8_tflops) << d.name; }
    if (d.int8_tops > 0) { EXPECT_LT(m.int8_gemm_tops.median, 2 * d.int8_tops) << d.name; }
  } else {
    std::printf("%s is not in the datasheet table: only positivity checked\n", m.gpu_name.c_str());
  }
  auto second = measure_gpu(GpuMeasureOptions::quick());
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  EXPECT_GT(second.value().free_memory_bytes, m.free_memory_bytes - (int64_t{256} << 20))
      << "the first measurement kept GPU memory";
}

// `crosspoint <args>`: stdout and stderr together, and the exit code.
std::string run_crosspoint(const std::string& args, int* exit_code) {
  const std::string command = std::string(CROSSPOINT_BINARY) + " " + args + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  std::string out;
  std::array<char, 4096> buffer;
  while (pipe && fgets(buffer.data(), buffer.size(), pipe.get())) out += buffer.data();
  const int status = pclose(pipe.release());
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

#define SKIP_WITHOUT_BINARY() \
  if (!std::filesystem::exists(CROSSPOINT_BINARY)) GTEST_SKIP() << CROSSPOINT_BINARY << " is not here"

TEST(HwinfoCuda, WithoutAGpuIsOneClearErrorOrTheNamedDatasheet) {
  if (gpu_device_count() > 0) GTEST_SKIP() << "a GPU is visible";
  SKIP_WITHOUT_BINARY();
  int code = 0;
  std::string out = run_crosspoint("hwinfo --device cuda", &code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_EQ(out.rfind("crosspoint hwinfo: unsupported: --device cuda: ", 0), 0u) << out;
  EXPECT_NE(out.find("pass --hardware NAME"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << "one line: " << out;

  out = run_crosspoint("hwinfo --device cuda --hardware H200 --json", &code);
  ASSERT_EQ(code, 0) << out;
  const nlohmann::json json = nlohmann::json::parse(out);
  EXPECT_EQ(json["device"], "cuda");
  EXPECT_FALSE(json["measured"].get<bool>());
  EXPECT_NE(json["not_measured_reason"].get<std::string>().find("--device cuda"), std::string::npos);
  EXPECT_EQ(json["ceilings"]["bandwidth_gb_s"].get<double>(), 4800);
  EXPECT_NE(json["ceilings"]["source"].get<std::string>().find("not measured"), std::string::npos);

  out = run_crosspoint("hwinfo --device cuda --hardware B9000", &code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("'B9000' is not in the datasheet table"), std::string::npos) << out;
}

TEST(HwinfoCuda, AutoIsTheDefaultAndMeasuresTheCpuWithoutAGpu) {
  if (gpu_device_count() > 0) GTEST_SKIP() << "a GPU is visible";
  SKIP_WITHOUT_BINARY();
  int code = 0;
  const std::string out = run_crosspoint("hwinfo --quick --json --threads 2", &code);
  ASSERT_EQ(code, 0) << out;
  const nlohmann::json json = nlohmann::json::parse(out);
  EXPECT_EQ(json["device"], "cpu");
  EXPECT_TRUE(json["measured"].get<bool>());
  EXPECT_TRUE(json["measurement"].contains("cpu_name"));
}

// serve and generate default to --device auto and say which device they took, before the
// model is read (the model here does not exist, so each stops right after).
TEST(DeviceAuto, ServeAndGenerateSayWhichDeviceAndWhy) {
  if (gpu_device_count() > 0) GTEST_SKIP() << "a GPU is visible";
  SKIP_WITHOUT_BINARY();
  for (const std::string sub : {"serve --model /nonexistent/m", "generate --model /nonexistent/m --prompt hi"}) {
    int code = 0;
    const std::string out = run_crosspoint(sub, &code);
    EXPECT_EQ(code, 1) << sub << "\n" << out;
    EXPECT_NE(out.find("device: cpu (--device auto: "), std::string::npos) << sub << "\n" << out;
    EXPECT_NE(out.find("/nonexistent/m"), std::string::npos) << sub << "\n" << out;
  }
}

}  // namespace
}  // namespace crosspoint::analysis
