// From the files of a sweep to its report: the study file (cells, servers' start-up facts,
// workload) that `crosspoint roofline --study` also reads, and the report of src/analysis
// with the sweep's own sections added: the recommendation in plain words (speed, memory and
// quality together), quality against FP16, cold start and the servers' capacity lines.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/study_analysis.h"
#include "analysis/study_results.h"
#include "common/status.h"
#include "sweep/harness_quality.h"
#include "sweep/startup_log.h"
#include "sweep/sweep_options.h"

namespace crosspoint::sweep {

// The study file from out_dir/cells, servers and hwinfo.json, for the given levels.
Result<nlohmann::json> build_study_json(const SweepOptions& options, const std::string& fp16_dir,
                                        const std::vector<int>& levels);

// Where the ceilings came from, for the report's source line, from hwinfo.json's ceilings name
// and source: "measured by crosspoint hwinfo on NVIDIA H200 at 2026-11-30 04:50 UTC" (GPU),
// "measured by crosspoint hwinfo on cpu: <model>" (CPU), "from datasheet: NVIDIA H200 SXM",
// "from measured: ceilings.py" (--ceilings).
std::string ceilings_provenance(const std::string& hw_name, const std::string& source);

// What `crosspoint eval --json` said about one quantised precision.
struct QualityResult {
  std::string precision;
  double perplexity = 0;
  double reference_perplexity = 0;           // FP16 on the same tokens
  double greedy_agreement = 0;               // 0..1: the quantised model's argmax equals FP16's
  std::optional<double> mean_kl_divergence;  // nats, FP16's next-token distribution against this one's
  int64_t num_predicted_tokens = 0;
  // Perplexity against FP16's on the same tokens, in % (+1.5 = 1.5 % higher); nullopt without a reference.
  std::optional<double> perplexity_change_pct() const {
    if (!(reference_perplexity > 0)) return std::nullopt;
    return 100.0 * (perplexity / reference_perplexity - 1.0);
  }
};

// The SLO of --slo for the analysis (p99 of each limit), or nullopt: the analysis' default.
std::optional<analysis::ServiceLevelObjective> slo_of(const SweepOptions& options);

// The serving mode the report's source line names: batch-invariant (--deterministic, and always
// on the CPU) or reproducible run to run only.
std::string determinism_mode(const SweepOptions& options);

// Plain-words recommendation and the sweep's tables, as Markdown and HTML fragments.
struct SweepSections {
  std::string markdown;
  std::string html;
};
SweepSections render_sweep_sections(const SweepOptions& options, const analysis::StudyResults& study,
                                    const analysis::StudyAnalysis& analysis,
                                    const std::vector<std::pair<std::string, ServerStartup>>& startups,
                                    const std::vector<QualityResult>& qualities,
                                    const std::vector<std::pair<std::string, std::vector<HarnessScore>>>& harness = {});

// Analyses the study and writes report.md, report.html and the figures into options.out_dir.
Status write_sweep_report(const SweepOptions& options, const std::string& fp16_dir, const nlohmann::json& study_json);

}  // namespace crosspoint::sweep
