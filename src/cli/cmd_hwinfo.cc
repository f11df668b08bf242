// crosspoint hwinfo: the ceilings every roofline is measured against. On the CPU it measures
// memory bandwidth and matmul rates here and now; for a GPU it falls back to the datasheet
// table when it cannot measure (no CUDA measurement in this build yet).
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/cpu_ceilings.h"
#include "analysis/hardware_json.h"
#include "analysis/hardware_table.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "common/thread_pool.h"

namespace crosspoint::cli {

namespace {

void print_ceilings_table(const analysis::HardwareCeilings& c) {
  auto rate = [](double value, const char* unit) {
    return value > 0 ? fmt::format("{:.3f} {}", value, unit) : std::string("-");
  };
  std::printf("%-28s %s\n", "device", c.name.c_str());
  std::printf("%-28s %s\n", "memory", c.memory_gb > 0 ? fmt::format("{:.1f} GB", c.memory_gb).c_str() : "-");
  std::printf("%-28s %s\n", "memory bandwidth", fmt::format("{:.1f} GB/s", c.bandwidth_gb_s).c_str());
  std::printf("%-28s %s\n", "fp16 matmul", rate(c.fp16_tflops, "TFLOP/s").c_str());
  std::printf("%-28s %s\n", "fp8 matmul", rate(c.fp8_tflops, "TFLOP/s").c_str());
  std::printf("%-28s %s\n", "int8 matmul", rate(c.int8_tops, "TOP/s").c_str());
  std::printf("%-28s %s\n", "fp32 matmul", rate(c.fp32_tflops, "TFLOP/s").c_str());
  const double ridge = analysis::critical_intensity(c.fp16_tflops > 0 ? c.fp16_tflops : c.fp32_tflops, c.bandwidth_gb_s);
  std::printf("%-28s %.1f FLOP/byte\n", "critical intensity (fp16)", ridge);
  std::printf("%-28s %s\n", "source", c.source.c_str());
}

void print_datasheet_list() {
  std::printf("%-12s %8s %10s %10s %10s %10s %8s\n", "device", "mem GB", "BW GB/s", "fp16 TF", "fp8 TF", "int8 TOP",
              "I* fp16");
  for (const auto& c : analysis::datasheet_table()) {
    std::printf("%-12s %8.0f %10.0f %10.1f %10.1f %10.1f %8.0f\n", c.name.c_str(), c.memory_gb, c.bandwidth_gb_s,
                c.fp16_tflops, c.fp8_tflops, c.int8_tops, analysis::critical_intensity(c.fp16_tflops, c.bandwidth_gb_s));
  }
}

}  // namespace

int run_hwinfo(int argc, char** argv) {
  CLI::App app{"Measure this machine's memory bandwidth and matmul rates (the roofline's ceilings)", "hwinfo"};
  bool json = false;
  bool quick = false;
  bool list = false;
  std::string device = "cpu";
  std::string hardware;
  int num_threads = 0;
  app.add_flag("--json", json, "print JSON instead of a table");
  app.add_option("--device", device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--hardware", hardware, "datasheet entry to use when the device cannot be measured (e.g. L4)");
  app.add_option("--threads", num_threads, "threads for the CPU measurement (default: all)")->check(CLI::PositiveNumber);
  app.add_flag("--quick", quick, "small buffers: a rough figure in a fraction of a second");
  app.add_flag("--list", list, "print the built-in datasheet table and exit");
  if (int code = parse_or_exit_code(app, argc, argv); code >= 0) return code;

  if (list) {
    print_datasheet_list();
    return 0;
  }

  nlohmann::json out = {{"device", device}};
  analysis::HardwareCeilings ceilings;
  if (device == "cpu") {
    if (num_threads > 0) set_global_num_threads(num_threads);
    analysis::CpuMeasureOptions options;
    if (quick) {
      options.bandwidth_buffer_bytes = int64_t{64} << 20;
      options.gemm_size = 256;
    }
    const analysis::CpuMeasurement measured = analysis::measure_cpu(options, global_thread_pool());
    ceilings = measured.as_ceilings();
    out["measured"] = true;
    out["measurement"] = {{"cpu_name", measured.cpu_name},
                          {"num_threads", measured.num_threads},
                          {"read_bandwidth_gb_s", measured.read_bandwidth_gb_s},
                          {"fp32_gemm_tflops", measured.fp32_gemm_tflops},
                          {"fp16_gemm_tflops", measured.fp16_gemm_tflops},
                          {"bandwidth_buffer_bytes", measured.bandwidth_buffer_bytes},
                          {"gemm_size", measured.gemm_size},
                          {"method", measured.method}};
  } else {
    // No CUDA measurement in this build: the datasheet is the fallback, said so plainly.
    if (hardware.empty()) {
      return report_error("hwinfo", unsupported("--device cuda: this build cannot measure a GPU; pass --hardware NAME "
                                                "to use the datasheet (see --list)"));
    }
    auto entry = analysis::find_datasheet(hardware);
    if (!entry.is_ok()) return report_error("hwinfo", entry.status());
    ceilings = entry.value();
    ceilings.source += " (not measured: no GPU measurement in this build)";
    out["measured"] = false;
  }
  out["ceilings"] = analysis::ceilings_to_json(ceilings);
  if (json) {
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    print_ceilings_table(ceilings);
  }
  return 0;
}

}  // namespace crosspoint::cli
