// vLLM's burstgpt dataset (BurstGPTDataset): the BurstGPT trace CSV (columns Timestamp, Model,
// Request tokens, Response tokens, Total tokens, Log Type), rows of Model "GPT-4" with
// Response tokens > 0; num_requests of them drawn as pandas' DataFrame.sample(n, random_state=
// seed) draws them (numpy's legacy RandomState: a permutation without replacement, randint with
// replacement when n exceeds the rows; reproduced here); request i asks for the row's Response
// tokens, with a prompt of the row's Request tokens ids (i + j) % vocab_size decoded to text
// (its length is the row's count, not re-counted). The file is not shipped: --dataset-path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/sample_request.h"
#include "common/status.h"

namespace crosspoint {
class Tokenizer;
}

namespace crosspoint::bench {

struct BurstGptRow {
  int request_tokens = 0;
  int response_tokens = 0;
};

// The GPT-4 rows with Response tokens > 0, in file order. A file without the Model, Request
// tokens and Response tokens columns, or with a row whose counts are not numbers, is an error
// naming the file and line.
Result<std::vector<BurstGptRow>> load_burstgpt_rows(const std::string& path);

// Row indices numpy's RandomState(seed) picks for DataFrame.sample(n): permutation(size)[:n]
// when n <= size, else randint(0, size, n).
std::vector<size_t> numpy_sample_indices(size_t size, size_t n, uint32_t seed);

std::vector<SampleRequest> sample_burstgpt(const std::vector<BurstGptRow>& rows, const Tokenizer& tokenizer,
                                           int num_requests, uint64_t seed);

}  // namespace crosspoint::bench
