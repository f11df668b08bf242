#include "bench/sample_request.h"

namespace crosspoint::bench {

DatasetSummary summarize_dataset(const std::string& name, const std::string& path,
                                 const std::vector<SampleRequest>& requests) {
  DatasetSummary summary;
  summary.name = name;
  summary.path = path;
  summary.num_requests = static_cast<int>(requests.size());
  if (requests.empty()) return summary;
  double input_sum = 0, output_sum = 0;
  for (const SampleRequest& r : requests) {
    input_sum += r.prompt_len;
    output_sum += r.expected_output_len;
  }
  summary.mean_input_tokens = input_sum / requests.size();
  summary.mean_output_tokens = output_sum / requests.size();
  return summary;
}

}  // namespace crosspoint::bench
