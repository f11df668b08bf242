// A whole sweep on the default model with tiny settings (2 precisions, 2 levels, 4 prompts,
// 8 output tokens), then the same command again: every file is there, the cells carry
// vLLM's keys and the server samples, the report has its tables and figures and renders in
// headless Chromium, and the second run keeps every cell and is much faster.
// Runs only as the ctest `sweep_end_to_end_default_model` (label slow, Release pass), which
// sets CROSSPOINT_SWEEP_E2E=1.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {

struct CommandResult {
  int exit_code = -1;
  std::string output;
  double seconds = 0;
};

CommandResult run_shell(const std::string& command) {
  CommandResult result;
  const auto start = std::chrono::steady_clock::now();
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(SweepEndToEnd, DefaultModelTinySweepThenResume) {
  if (!std::getenv("CROSSPOINT_SWEEP_E2E")) GTEST_SKIP() << "run through ctest -R sweep_end_to_end";
  const fs::path root = fs::temp_directory_path() / ("crosspoint_sweep_e2e_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path out = root / "out";
  const std::string command = std::string(CROSSPOINT_BINARY) +
                              " sweep --model default --precisions fp16,w4a16 --concurrency 1,4 --num-prompts 4"
                              " --output-len 8 --eval-samples 2 --eval-max-tokens 32 --quant-method rtn"
                              " --max-bisect-runs 1 --slo ttft:5000,tpot:500 --time-budget 60 --quant-cache " +
                              (root / "quant").string() + " --out " + out.string();
  const CommandResult first = run_shell(command);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("sweep done"), std::string::npos) << first.output;

  // Files of every stage.
  for (const char* name : {"hwinfo.json", "study.json", "budget.json", "analysis.json", "report.md", "report.html",
                           "servers/fp16.json", "servers/w4a16.json", "quality/w4a16.json", "logs/serve-fp16.log"}) {
    EXPECT_TRUE(fs::is_regular_file(out / name)) << name;
  }
  size_t num_cached_checkpoints = 0;
  for (const auto& entry : fs::directory_iterator(root / "quant")) {
    num_cached_checkpoints += fs::is_regular_file(entry.path() / "config.json");
  }
  EXPECT_EQ(num_cached_checkpoints, 1u) << "the w4a16 checkpoint is cached";
  std::vector<fs::path> cells;
  for (const auto& entry : fs::directory_iterator(out / "cells")) cells.push_back(entry.path());
  EXPECT_GE(cells.size(), 4u);  // 2 x 2, plus a crossover level when the winner flipped
  for (const char* name : {"fp16-c1.json", "fp16-c4.json", "w4a16-c1.json", "w4a16-c4.json"}) {
    const fs::path path = out / "cells" / name;
    ASSERT_TRUE(fs::is_regular_file(path)) << name;
    const auto cell = nlohmann::json::parse(read_file(path));
    for (const char* key : {"completed", "failed", "max_concurrency", "duration", "output_throughput", "median_tpot_ms",
                            "p99_tpot_ms", "median_ttft_ms", "p99_itl_ms", "request_goodput", "input_lens",
                            "output_lens", "server_metrics", "machine", "run"}) {
      EXPECT_TRUE(cell.contains(key)) << name << " lacks " << key;
    }
    EXPECT_EQ(cell["completed"].get<int>(), 4) << name;
    EXPECT_EQ(cell["failed"].get<int>(), 0) << name;
  }
  const auto startup = nlohmann::json::parse(read_file(out / "servers/w4a16.json"));
  EXPECT_GT(startup.value("kv_cache_tokens", 0.0), 0);
  EXPECT_GT(startup.value("startup_s", 0.0), 0);
  const auto quality = nlohmann::json::parse(read_file(out / "quality/w4a16.json"));
  EXPECT_GT(quality.value("perplexity", 0.0), 1.0);
  EXPECT_GT(quality.value("greedy_agreement", 0.0), 0.2);

  // The report: the analysis' sections and the sweep's own, figures inline and beside it.
  const std::string md = read_file(out / "report.md");
  for (const char* heading : {"## Recommendation", "## Quality against FP16", "## Cold start and capacity",
                              "## Latency", "## Roofline", "## Capacity"}) {
    EXPECT_NE(md.find(heading), std::string::npos) << heading;
  }
  EXPECT_GE(count(md, "\n|---"), 4u) << "expected several Markdown tables";
  EXPECT_NE(md.find("w4a16"), std::string::npos);
  const std::string html = read_file(out / "report.html");
  EXPECT_GE(count(html, "<svg"), 3u);
  EXPECT_GE(count(html, "<table"), 4u);
  EXPECT_EQ(html.find("src=\"http"), std::string::npos) << "report.html must be self-contained";
  EXPECT_EQ(html.find("href=\"http"), std::string::npos) << "report.html must be self-contained";
  size_t num_svg_files = 0;
  for (const auto& entry : fs::directory_iterator(out)) num_svg_files += entry.path().extension() == ".svg";
  EXPECT_GE(num_svg_files, 3u);

  // Headless Chromium renders it (a Debian package of scripts/lib.sh): the DOM after layout
  // keeps the figures and tables, and a screenshot is written.
  const fs::path png = out / "report.png";
  const std::string chromium =
      "chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,2400";
  const CommandResult shot =
      run_shell(chromium + " --screenshot=" + png.string() + " file://" + (out / "report.html").string());
  EXPECT_EQ(shot.exit_code, 0) << shot.output;
  ASSERT_TRUE(fs::is_regular_file(png)) << shot.output;
  EXPECT_GT(fs::file_size(png), 20000u) << "a blank page would compress to almost nothing";
  const CommandResult dom = run_shell(chromium + " --dump-dom file://" + (out / "report.html").string());
  EXPECT_GE(count(dom.output, "<svg"), 3u);
  EXPECT_NE(dom.output.find("Recommendation"), std::string::npos);
  EXPECT_NE(dom.output.find("<dt>Lowest latency (median TPOT)</dt>"), std::string::npos);  // the first screen
  EXPECT_NE(md.find("- **Load within the SLO (p99 TTFT ≤ 5000 ms and p99 TPOT ≤ 500 ms):** "), std::string::npos) << md;

  // Resume: every cell is kept, none is rerun, and the run is much faster.
  const auto cell_time = fs::last_write_time(out / "cells/fp16-c1.json");
  const CommandResult second = run_shell(command);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find(" 0 cells run"), std::string::npos) << second.output;
  EXPECT_EQ(fs::last_write_time(out / "cells/fp16-c1.json"), cell_time);
  size_t num_cells_after = 0;
  for (const auto& entry : fs::directory_iterator(out / "cells"))
    num_cells_after += entry.path().extension() == ".json";
  EXPECT_EQ(num_cells_after, cells.size());
  EXPECT_LT(second.seconds, first.seconds / 2) << "first " << first.seconds << " s, second " << second.seconds << " s";
  fs::remove_all(root);
}

}  // namespace
