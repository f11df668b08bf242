// The report's first screen as a reader sees it: rendered by headless Chromium at 1400 x 900
// (a Debian package of scripts/lib.sh), with a script added at the end of the page that writes
// where the verdict and the figures landed into the DOM, read back with --dump-dom.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/hardware_table.h"
#include "analysis/study_analysis.h"
#include "analysis/study_report.h"
#include "kv_grid_fixture.h"
#include "study_fixture.h"

namespace crosspoint::analysis {
namespace {

namespace fs = std::filesystem;

std::string run_shell(const std::string& command, int* exit_code) {
  std::string output;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return output;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return output;
}

// Measures in the page itself: the verdict's and first figures' boxes, and per SVG its points.
constexpr const char* kLayoutProbe = R"(<script>
(() => {
  const box = e => { const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, right: r.right}; };
  const lines = Array.from(document.querySelectorAll('#verdict dd')).map(e => ({text: e.textContent, box: box(e)}));
  const figures = Array.from(document.querySelectorAll('#first-figures svg')).map(box);
  const svgs = Array.from(document.querySelectorAll('svg')).map(
      s => s.querySelectorAll('.point').length + s.querySelectorAll('.band').length);
  const pre = document.createElement('pre');
  pre.id = 'layout';
  pre.textContent = JSON.stringify({lines, figures, svgs, width: window.innerWidth});
  document.body.appendChild(pre);
})();
</script>
)";

// The layout the probe wrote, from Chromium's DOM after the page ran.
nlohmann::json first_screen_layout(const ReportFiles& report, const fs::path& dir) {
  fs::create_directories(dir);
  std::string html = report.html;
  html.insert(html.rfind("</body>"), kLayoutProbe);
  std::ofstream(dir / "report.html", std::ios::binary) << html;
  const std::string chromium =
      "chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,900 ";
  int exit_code = -1;
  const std::string dom = run_shell(chromium + "--dump-dom file://" + (dir / "report.html").string(), &exit_code);
  EXPECT_EQ(exit_code, 0) << "headless Chromium (scripts/lib.sh installs it): " << dom;
  const size_t start = dom.find("<pre id=\"layout\">");
  if (start == std::string::npos) {
    ADD_FAILURE() << "the probe wrote no layout: " << dom.substr(0, 2000);
    return {};
  }
  const size_t from = start + std::string("<pre id=\"layout\">").size();
  std::string text = dom.substr(from, dom.find("</pre>", from) - from);
  for (const auto& [entity, plain] :
       {std::pair<std::string, std::string>{"&quot;", "\""}, {"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}}) {
    for (size_t at = text.find(entity); at != std::string::npos; at = text.find(entity, at + plain.size()))
      text.replace(at, entity.size(), plain);
  }
  const nlohmann::json layout = nlohmann::json::parse(text, nullptr, false);
  EXPECT_FALSE(layout.is_discarded()) << text;
  // A screenshot of that screen, for a person to look at when this fails.
  run_shell(
      chromium + "--screenshot=" + (dir / "first_screen.png").string() + " file://" + (dir / "report.html").string(),
      &exit_code);
  return layout;
}

void expect_answer_before_scrolling(const ReportFiles& report, const fs::path& dir) {
  const nlohmann::json layout = first_screen_layout(report, dir);
  ASSERT_TRUE(layout.is_object());
  EXPECT_EQ(layout["width"].get<int>(), 1400);
  ASSERT_EQ(layout["lines"].size(), 7u) << layout.dump();
  for (const auto& line : layout["lines"]) {
    EXPECT_FALSE(line["text"].get<std::string>().empty());
    EXPECT_LE(line["box"]["bottom"].get<double>(), 900) << line.dump();
  }
  ASSERT_EQ(layout["figures"].size(), 2u);
  for (const auto& figure : layout["figures"]) {
    EXPECT_LE(figure["bottom"].get<double>(), 900) << figure.dump();
    EXPECT_LE(figure["right"].get<double>(), 1400) << figure.dump();
  }
  // Every figure of the report has data: points (or interval bands) drawn.
  for (const auto& num_marks : layout["svgs"]) EXPECT_GT(num_marks.get<int>(), 0) << layout["svgs"].dump();
}

TEST(FirstScreenInBrowser, KvGridAnswersBeforeScrolling) {
  // The widest verdict: six ways of serving, two crossovers.
  const StudyResults study = testing::kv_grid_study();
  AnalysisOptions options;
  options.hardware = find_datasheet("H200").value();
  options.model_num_params = 7.6e9;
  auto analysis = analyze_study(study, options);
  ASSERT_TRUE(analysis.is_ok()) << analysis.status().to_string();
  const ReportFiles report = render_study_report(study, analysis.value());
  // The verdict's words in the page, the first of them the cross-precision answer.
  EXPECT_NE(report.html.find("<dd>w4a16 at 1 (by 40 %); w8a8-fp8 at 64 (by 11 %); fp16 at 512 (by 13 %)</dd>"),
            std::string::npos);
  expect_answer_before_scrolling(report, fs::path(::testing::TempDir()) / "first_screen_kv_grid");
}

TEST(FirstScreenInBrowser, SeedStudyAnswersBeforeScrolling) {
  const StudyResults study = testing::load_study_or_die();
  AnalysisOptions options;
  options.hardware = find_datasheet("L4").value();
  auto analysis = analyze_study(study, options);
  ASSERT_TRUE(analysis.is_ok()) << analysis.status().to_string();
  expect_answer_before_scrolling(render_study_report(study, analysis.value()),
                                 fs::path(::testing::TempDir()) / "first_screen_seed");
}

}  // namespace
}  // namespace crosspoint::analysis
