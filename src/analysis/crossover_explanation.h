// Why each crossover of a study happens, read off the roofline of the cells on both sides of
// it: bytes per step, arithmetic intensity against each precision's critical intensity,
// attention's share of the bytes, the time no roofline term accounts for, the batch, and
// whether the KV cache bound it. The report's "Why the crossovers happen" section shows it.
#pragma once

#include <string>
#include <vector>

#include "analysis/crossover.h"
#include "analysis/study_analysis.h"

namespace crosspoint::analysis {

struct CrossoverExplanation {
  Crossover crossover;
  std::string where;                 // "median TPOT: w4a16 leads up to concurrency 32, w8a8-fp8 from 100"
  std::vector<std::string> reasons;  // one sentence per roofline term, with its numbers
};

// One entry per crossover of median TPOT, p99 TPOT and output throughput (the metrics a
// decode step's roofline speaks to), in that order. A crossover whose four cells lack a
// roofline row or a measured TPOT is left out.
std::vector<CrossoverExplanation> explain_crossovers(const StudyAnalysis& analysis);

}  // namespace crosspoint::analysis
