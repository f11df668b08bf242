// A Hugging Face tokenizer.json: model (vocab, merges as "a b" strings or pairs, options),
// normalizer, pre-tokenizer (regex split, ByteLevel), decoder, added tokens; then a short
// text encoded and decoded with it.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_temp_dir.h"
#include "fuzz/tokenizer_round_trip.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosspoint;
  const std::string path = fuzz::write_fuzz_file("tokenizer.json", data, size);
  auto tokenizer = Tokenizer::from_tokenizer_json(path);
  if (tokenizer.is_ok()) fuzz::exercise_tokenizer(**tokenizer);
  return 0;
}
