// `crosspoint bench serve` as a library call: sample the dataset, warm up, send the load,
// compute vLLM's metrics and crosspoint's additions. The caller loads the tokenizer, writes
// the result file and prints the summary.
#pragma once

#include <string>
#include <vector>

#include "bench/bench_options.h"
#include "bench/bench_result.h"
#include "common/status.h"

namespace crosspoint {
class Tokenizer;
}

namespace crosspoint::bench {

// Errors only for what stops the benchmark before load is sent (bad options, dataset);
// network and server failures are failed requests inside the result.
Result<BenchResult> run_bench_serve(const BenchOptions& options, const Tokenizer& tokenizer);

// "Name: value" headers of every request: the API key (--api-key, else $OPENAI_API_KEY) as a
// bearer token, then each --header, replacing a header of the same name (vLLM's
// headers |= extra_headers); an x-request-id header is left to the client's own ids.
std::vector<std::string> request_headers(const BenchOptions& options);

// Writes result_to_json_text(result) to path (via a temporary file, then rename).
Status write_result_file(const BenchResult& result, const std::string& path);

}  // namespace crosspoint::bench
