// A ShareGPT dataset file: the streaming SAX loader (conversations, turns, a copy cut short),
// then vLLM's sampling of it (shuffle, token-count filters, oversampling) with a byte-level
// tokenizer of one token per byte.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "bench/sharegpt_dataset.h"
#include "fuzz/fuzz_temp_dir.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"

namespace {

std::unique_ptr<crosspoint::Tokenizer> byte_tokenizer() {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[crosspoint::byte_level_char(static_cast<uint8_t>(b))] = b;
  const nlohmann::json tokenizer_json = {
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"decoder", {{"type", "ByteLevel"}}}};
  auto tokenizer = crosspoint::Tokenizer::from_tokenizer_json(
      crosspoint::fuzz::write_fuzz_file("tokenizer.json", tokenizer_json.dump()));
  if (!tokenizer.is_ok()) __builtin_trap();
  return std::move(tokenizer).value();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosspoint;
  static const std::unique_ptr<Tokenizer> tokenizer = byte_tokenizer();
  auto file = bench::load_sharegpt_file(fuzz::write_fuzz_file("sharegpt.json", data, size));
  if (!file.is_ok()) return 0;
  bench::ShareGptSampling sampling;
  sampling.num_requests = 4;
  sampling.seed = size;
  bench::DatasetSummary summary;
  (void)bench::sample_sharegpt(file->conversations, *tokenizer, sampling, &summary);
  sampling.fixed_output_len = 8;
  (void)bench::sample_sharegpt(std::move(file->conversations), *tokenizer, sampling, &summary);
  return 0;
}
