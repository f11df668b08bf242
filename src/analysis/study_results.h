// A whole study as one file: the device, the model, per-precision facts from the servers'
// start-up (weights loaded, KV capacity) and every measured cell. `crosspoint roofline`
// reads it; tests/fixtures/analysis/study_l4.json is the original study in this form.
#pragma once

#include <string>
#include <vector>

#include "analysis/cell_measurement.h"
#include "analysis/precision.h"
#include "common/status.h"

namespace crosspoint::analysis {

// What a server reported at start-up for one precision.
struct PrecisionSetup {
  std::string label;  // as used by the cells: "fp16", "w8a8-fp8", "w4a16"
  Precision precision = Precision::kFp16;
  double weight_bytes = 0;     // weights as loaded, bytes; 0 = unknown
  double kv_cache_tokens = 0;  // KV capacity in tokens; 0 = unknown
  double kv_cache_bytes = 0;   // KV memory, bytes; 0 = unknown
  double engine_init_s = 0;    // start-up time, seconds; 0 = unknown
  // Bytes of one cached K or V element when this setup's KV cache differs from the study's
  // (1 for an fp8 cache); 0 = the analysis' default.
  double kv_bytes_per_element = 0;
  // Ranks the server split the model over (serve --tensor-parallel-size); each rank's device
  // holds a share, and the roofline is one rank's.
  int tensor_parallel_size = 1;
};

struct StudyResults {
  std::string title;
  std::string source;         // where the numbers come from
  std::string hardware_name;  // a datasheet_table() name, or empty
  std::string memory_budget;  // the servers' --memory-budget ("24GB"), or empty (the whole device)
  double max_num_seqs = 0;    // the servers' --max-num-seqs when the study set it; 0 = their default
  std::string model_name;
  double model_num_params = 0;   // total parameters; 0 = unknown
  double max_model_len = 0;      // tokens
  double mean_input_tokens = 0;  // workload means per request
  double mean_output_tokens = 0;
  std::vector<PrecisionSetup> precisions;
  std::vector<CellMeasurement> cells;

  // The setup for a cell's label, or nullptr.
  const PrecisionSetup* find_precision(const std::string& label) const;
};

// Parses the study file; every error names the file and the field.
Result<StudyResults> parse_study_results(const std::string& json_text, const std::string& source_name);
Result<StudyResults> load_study_results(const std::string& path);

}  // namespace crosspoint::analysis
