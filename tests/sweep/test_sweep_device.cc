// The sweep and its device: the hwinfo child's command line follows the resolved device,
// the report names where its ceilings came from, and --device cuda without a GPU stops the
// sweep with one line before anything is written.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "analysis/gpu_ceilings.h"
#include "sweep/sweep_report.h"
#include "sweep/sweep_runner.h"

namespace crosspoint::sweep {
namespace {

TEST(HwinfoCommand, CpuIsQuickCudaMeasuresWithTheDatasheetAsFallback) {
  SweepOptions o;
  o.crosspoint_exe = "/x/crosspoint";
  o.device = "cpu";
  o.threads = 2;
  EXPECT_EQ(hwinfo_command(o), (std::vector<std::string>{"/x/crosspoint", "hwinfo", "--json", "--quick", "--device",
                                                         "cpu", "--threads", "2"}));
  o.device = "cuda";
  EXPECT_EQ(hwinfo_command(o), (std::vector<std::string>{"/x/crosspoint", "hwinfo", "--json", "--device", "cuda"}));
  o.hardware = "H200";
  EXPECT_EQ(hwinfo_command(o),
            (std::vector<std::string>{"/x/crosspoint", "hwinfo", "--json", "--device", "cuda", "--hardware", "H200"}));
}

TEST(ServeCommand, EveryServerIsToldItsDevice) {
  SweepOptions o;
  o.crosspoint_exe = "/x/crosspoint";
  for (const std::string device : {"cpu", "cuda"}) {
    o.device = device;
    const std::vector<std::string> argv = serve_command(o, "/m");
    auto flag = std::find(argv.begin(), argv.end(), "--device");
    ASSERT_NE(flag, argv.end()) << device;
    ASSERT_NE(flag + 1, argv.end());
    EXPECT_EQ(*(flag + 1), device);
  }
}

TEST(CeilingsProvenance, NamesTheMeasurementTheDatasheetOrTheFile) {
  EXPECT_EQ(ceilings_provenance(
                "NVIDIA H200", "measured by crosspoint hwinfo on NVIDIA H200 at 2026-11-30 04:50 UTC: bandwidth = ..."),
            "measured by crosspoint hwinfo on NVIDIA H200 at 2026-11-30 04:50 UTC");
  EXPECT_EQ(ceilings_provenance("cpu: AMD EPYC", "measured: 64 MiB read by 2 threads ..."),
            "measured by crosspoint hwinfo on cpu: AMD EPYC");
  EXPECT_EQ(ceilings_provenance("H200", "datasheet: NVIDIA H200 SXM (not measured: no CUDA GPU)"),
            "from datasheet: NVIDIA H200 SXM");
  EXPECT_EQ(ceilings_provenance("NVIDIA H200", "measured: ceilings.py (PyTorch; best streaming read)"),
            "from measured: ceilings.py");
  EXPECT_EQ(ceilings_provenance("cpu", ""), "of cpu");
}

TEST(SweepCli, CudaWithoutAGpuFailsBeforeAnythingIsWritten) {
  if (analysis::gpu_device_count() > 0) GTEST_SKIP() << "a GPU is visible";
  if (!std::filesystem::exists(CROSSPOINT_BINARY)) GTEST_SKIP() << CROSSPOINT_BINARY << " is not here";
  const auto out = std::filesystem::temp_directory_path() / ("crosspoint_sweep_device_" + std::to_string(::getpid()));
  std::filesystem::remove_all(out);
  const std::string command = std::string(CROSSPOINT_BINARY) + " sweep --device cuda --out " + out.string() + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 1) << output;
  EXPECT_NE(output.find("crosspoint sweep: unsupported: --device cuda: "), std::string::npos) << output;
  EXPECT_FALSE(std::filesystem::exists(out)) << "created the output directory before failing";
}

}  // namespace
}  // namespace crosspoint::sweep
