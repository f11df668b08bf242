// One prompt of a benchmark dataset, as vLLM's SampleRequest: the text to send and the
// lengths it was sampled with.
#pragma once

#include <string>
#include <vector>

namespace crosspoint::bench {

struct SampleRequest {
  std::string prompt;           // raw text (no chat template applied)
  int prompt_len = 0;           // tokens of `prompt` by the benchmark's tokenizer
  int expected_output_len = 0;  // tokens; sent as max_tokens / max_completion_tokens
};

// What the sampler reports about the sample it drew.
struct DatasetSummary {
  std::string name;  // "sharegpt" or "random"
  std::string path;  // the ShareGPT file; empty for random
  int num_requests = 0;
  double mean_input_tokens = 0;   // mean prompt_len of the sample
  double mean_output_tokens = 0;  // mean expected_output_len of the sample
  int num_entries_scanned = 0;    // ShareGPT: shuffled entries looked at (accepted + rejected)
  int num_oversampled = 0;        // ShareGPT: requests repeated because too few were accepted
  int num_entries_in_file = 0;    // ShareGPT: entries with two turns (before shuffling)
  bool file_truncated = false;    // ShareGPT: the file was cut short; only its complete entries were used
};

DatasetSummary summarize_dataset(const std::string& name, const std::string& path,
                                 const std::vector<SampleRequest>& requests);

}  // namespace crosspoint::bench
