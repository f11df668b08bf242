#include "bench/burstgpt_dataset.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>

#include "tokenizer/tokenizer.h"

namespace crosspoint::bench {

namespace {

// One CSV line's fields (BurstGPT's fields hold no quotes or commas; quotes are stripped).
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream stream(line);
  while (std::getline(stream, field, ',')) {
    while (!field.empty() && (field.back() == '\r' || field.back() == ' ')) field.pop_back();
    if (field.size() >= 2 && field.front() == '"' && field.back() == '"') field = field.substr(1, field.size() - 2);
    fields.push_back(field);
  }
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

// numpy's legacy random_interval: a uniform integer in [0, max] by masked rejection.
uint32_t random_interval(std::mt19937& mt, uint32_t max) {
  if (max == 0) return 0;
  uint32_t mask = max;
  for (int shift = 1; shift <= 16; shift <<= 1) mask |= mask >> shift;
  uint32_t value = 0;
  do { value = static_cast<uint32_t>(mt()) & mask; } while (value > max);
  return value;
}

}  // namespace

Result<std::vector<BurstGptRow>> load_burstgpt_rows(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("burstgpt dataset: " + path + ": cannot open");
  std::string line;
  if (!std::getline(in, line)) return invalid_argument("burstgpt dataset: " + path + ": empty");
  const std::vector<std::string> header = split_csv(line);
  auto column = [&](const std::string& name) -> int {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return static_cast<int>(i);
    return -1;
  };
  const int model = column("Model"), request = column("Request tokens"), response = column("Response tokens");
  if (model < 0 || request < 0 || response < 0)
    return invalid_argument("burstgpt dataset: " + path +
                            ": the header lacks Model, Request tokens or Response tokens (is it the BurstGPT CSV?)");
  std::vector<BurstGptRow> rows;
  int line_number = 1;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::vector<std::string> fields = split_csv(line);
    const int needed = std::max({model, request, response});
    const std::string where = "burstgpt dataset: " + path + ":" + std::to_string(line_number);
    if (static_cast<int>(fields.size()) <= needed) return invalid_argument(where + ": too few fields");
    auto number = [&](const std::string& text, double& out) {
      char* end = nullptr;
      out = std::strtod(text.c_str(), &end);
      return !text.empty() && *end == '\0';
    };
    double request_tokens = 0, response_tokens = 0;
    if (!number(fields[request], request_tokens) || !number(fields[response], response_tokens))
      return invalid_argument(where + ": Request tokens / Response tokens are not numbers");
    if (fields[model] != "GPT-4" || !(response_tokens > 0)) continue;
    rows.push_back({static_cast<int>(request_tokens), static_cast<int>(response_tokens)});
  }
  if (rows.empty()) return invalid_argument("burstgpt dataset: " + path + ": no GPT-4 row with Response tokens > 0");
  return rows;
}

std::vector<size_t> numpy_sample_indices(size_t size, size_t n, uint32_t seed) {
  std::mt19937 mt(seed);  // numpy's RandomState(seed): the same init_genrand
  std::vector<size_t> picked;
  if (n <= size) {
    // permutation(size): shuffle of arange, for i from size-1 down to 1, j = random_interval(i).
    std::vector<size_t> order(size);
    std::iota(order.begin(), order.end(), size_t{0});
    for (size_t i = size; i-- > 1;) std::swap(order[i], order[random_interval(mt, static_cast<uint32_t>(i))]);
    picked.assign(order.begin(), order.begin() + static_cast<long>(n));
  } else {
    // randint(0, size, n): masked rejection on [0, size - 1].
    for (size_t k = 0; k < n; ++k) picked.push_back(random_interval(mt, static_cast<uint32_t>(size - 1)));
  }
  return picked;
}

std::vector<SampleRequest> sample_burstgpt(const std::vector<BurstGptRow>& rows, const Tokenizer& tokenizer,
                                           int num_requests, uint64_t seed) {
  const std::vector<size_t> picked =
      numpy_sample_indices(rows.size(), static_cast<size_t>(num_requests), static_cast<uint32_t>(seed));
  const int vocab_size = tokenizer.vocab_size();
  std::vector<SampleRequest> samples;
  for (int i = 0; i < num_requests; ++i) {
    const BurstGptRow& row = rows[picked[static_cast<size_t>(i)]];
    std::vector<int32_t> ids(static_cast<size_t>(std::max(row.request_tokens, 0)));
    for (size_t j = 0; j < ids.size(); ++j) ids[j] = static_cast<int32_t>((i + static_cast<long>(j)) % vocab_size);
    SampleRequest sample;
    sample.prompt = tokenizer.decode(ids);
    sample.prompt_len = row.request_tokens;
    sample.expected_output_len = row.response_tokens;
    samples.push_back(std::move(sample));
  }
  return samples;
}

}  // namespace crosspoint::bench
