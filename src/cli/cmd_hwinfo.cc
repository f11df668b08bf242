// crosspoint hwinfo: the ceilings every roofline is measured against, measured here and now
// on the device in use: on the CPU memory bandwidth and matmul rates (analysis/cpu_ceilings.h),
// on a GPU streaming read/write/copy bandwidth and cuBLASLt fp16/fp8 GEMM rates
// (analysis/gpu_ceilings.h). --device auto (the default) is cuda when a GPU is visible. A GPU
// that cannot be measured falls back to the datasheet entry of --hardware NAME, saying why.
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/cpu_ceilings.h"
#include "analysis/gpu_ceilings.h"
#include "analysis/hardware_json.h"
#include "analysis/hardware_table.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "common/log.h"
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
  const double ridge =
      analysis::critical_intensity(c.fp16_tflops > 0 ? c.fp16_tflops : c.fp32_tflops, c.bandwidth_gb_s);
  std::printf("%-28s %.1f FLOP/byte\n", "critical intensity (fp16)", ridge);
  std::printf("%-28s %s\n", "source", c.source.c_str());
}

void print_datasheet_list() {
  std::printf("%-12s %8s %10s %10s %10s %10s %8s\n", "device", "mem GB", "BW GB/s", "fp16 TF", "fp8 TF", "int8 TOP",
              "I* fp16");
  for (const auto& c : analysis::datasheet_table()) {
    std::printf("%-12s %8.0f %10.0f %10.1f %10.1f %10.1f %8.0f\n", c.name.c_str(), c.memory_gb, c.bandwidth_gb_s,
                c.fp16_tflops, c.fp8_tflops, c.int8_tops,
                analysis::critical_intensity(c.fp16_tflops, c.bandwidth_gb_s));
  }
}

// Measured GPU figures beside the datasheet entry of the same GPU, so the gap is visible.
void print_gpu_measurement(const analysis::GpuMeasurement& m, const analysis::HardwareCeilings* datasheet) {
  auto pct = [&](double measured, double peak) {
    return peak > 0 && measured > 0 ? fmt::format("{:5.1f} %", 100.0 * measured / peak) : std::string("    -");
  };
  auto value = [](double v, const char* unit) { return v > 0 ? fmt::format("{:.1f} {}", v, unit) : std::string("-"); };
  std::printf("%-28s %s (sm_%d%d, %d SMs, %.0f MHz SM, %.0f MHz memory x %d bit, L2 %.0f MiB, %.1f of %.1f GiB free)\n",
              "gpu", m.gpu_name.c_str(), m.compute_capability_major, m.compute_capability_minor, m.num_sms,
              m.sm_clock_mhz, m.memory_clock_mhz, m.memory_bus_width_bits, m.l2_cache_bytes / 1048576.0,
              m.free_memory_bytes / 1073741824.0, m.total_memory_bytes / 1073741824.0);
  const std::string sheet_name = datasheet != nullptr ? "datasheet " + datasheet->name : "datasheet";
  std::printf("%-28s %-22s %-22s %s\n", "", "measured (median)", sheet_name.c_str(), "measured/datasheet");
  const double sheet_bw = datasheet != nullptr ? datasheet->bandwidth_gb_s : 0;
  const struct {
    const char* label;
    double measured;
    double peak;
    const char* unit;
  } rows[] = {
      {"read bandwidth (ceiling)", m.read_bandwidth_gb_s.median, sheet_bw, "GB/s"},
      {"write bandwidth", m.write_bandwidth_gb_s.median, sheet_bw, "GB/s"},
      {"copy bandwidth (r+w)", m.copy_bandwidth_gb_s.median, sheet_bw, "GB/s"},
      {"fp16 GEMM", m.fp16_gemm_tflops.median, datasheet != nullptr ? datasheet->fp16_tflops : 0, "TFLOP/s"},
      {"fp8 GEMM", m.fp8_gemm_tflops.median, datasheet != nullptr ? datasheet->fp8_tflops : 0, "TFLOP/s"},
      {"int8 GEMM", m.int8_gemm_tops.median, datasheet != nullptr ? datasheet->int8_tops : 0, "TOP/s"},
  };
  for (const auto& row : rows) {
    std::printf("%-28s %-22s %-22s %s\n", row.label, value(row.measured, row.unit).c_str(),
                value(row.peak, row.unit).c_str(), pct(row.measured, row.peak).c_str());
  }
  if (!m.fp8_note.empty()) std::printf("%-28s %s\n", "fp8 note", m.fp8_note.c_str());
  if (!m.int8_note.empty()) std::printf("%-28s %s\n", "int8 note", m.int8_note.c_str());
  std::printf("\n");
}

}  // namespace

int run_hwinfo(int argc, char** argv) {
  CLI::App app{"Measure this machine's memory bandwidth and matmul rates (the roofline's ceilings)", "hwinfo"};
  bool json = false;
  bool quick = false;
  bool list = false;
  std::string device = "auto";
  std::string hardware;
  int num_threads = 0;
  app.add_flag("--json", json, "print JSON instead of a table");
  app.add_option("--device", device, "auto (cuda when a GPU is visible, else cpu), cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--hardware", hardware, "datasheet entry to use when the GPU cannot be measured (e.g. H200)");
  app.add_option("--threads", num_threads, "threads for the CPU measurement (default: all)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--quick", quick, "small buffers: a rough figure in a fraction of a second");
  app.add_flag("--list", list, "print the built-in datasheet table and exit");
  if (int code = parse_or_exit_code(app, argc, argv); code >= 0) return code;

  if (list) {
    print_datasheet_list();
    return 0;
  }

  std::string why_device;
  auto resolved = analysis::resolve_device(device, &why_device);
  // --device cuda that cannot run here still has the datasheet fallback below.
  const std::string target = resolved.is_ok() ? resolved.value() : device;
  if (!resolved.is_ok() && device != "cuda") return report_error("hwinfo", resolved.status());
  // Logs only beside the table: --json output is read whole, and says the device itself.
  if (device == "auto" && !json) log_info("hwinfo: {}", why_device);

  nlohmann::json out = {{"device", target}};
  analysis::HardwareCeilings ceilings;
  if (target == "cpu") {
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
    Result<analysis::GpuMeasurement> measured =
        resolved.is_ok()
            ? analysis::measure_gpu(quick ? analysis::GpuMeasureOptions::quick() : analysis::GpuMeasureOptions())
            : Result<analysis::GpuMeasurement>(resolved.status());
    if (measured.is_ok()) {
      const analysis::GpuMeasurement& m = measured.value();
      ceilings = m.as_ceilings();
      out["measured"] = true;
      out["measurement"] = analysis::gpu_measurement_to_json(m);
      auto sheet = analysis::datasheet_for_gpu_name(m.gpu_name);
      if (sheet.is_ok()) out["datasheet"] = analysis::ceilings_to_json(sheet.value());
      if (!json) print_gpu_measurement(m, sheet.is_ok() ? &sheet.value() : nullptr);
    } else {
      // The datasheet is the fallback, and only when asked for by name.
      const std::string why = measured.status().message();
      if (hardware.empty()) {
        return report_error("hwinfo",
                            Status(measured.status().code(), why + "; pass --hardware NAME to use the datasheet "
                                                                   "instead (see --list)"));
      }
      auto entry = analysis::find_datasheet(hardware);
      if (!entry.is_ok()) return report_error("hwinfo", entry.status());
      if (!json)
        log_info("hwinfo: the GPU was not measured ({}); using the datasheet entry {}", why, entry.value().name);
      ceilings = entry.value();
      ceilings.source += " (not measured: " + why + ")";
      out["measured"] = false;
      out["not_measured_reason"] = why;
    }
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
