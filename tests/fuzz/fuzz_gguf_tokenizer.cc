// The tokenizer a GGUF file carries in its tokenizer.ggml.* metadata (what `crosspoint
// tokenize --gguf` and `convert` build): tokens, scores, types, merges, pre-tokenizer name,
// special ids; then a short text encoded and decoded with it.
#include <cstddef>
#include <cstdint>

#include "formats/gguf.h"
#include "fuzz/fuzz_temp_dir.h"
#include "fuzz/tokenizer_round_trip.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosspoint;
  const std::string path = fuzz::write_fuzz_file("tokenizer.gguf", data, size);
  auto gguf = GgufFile::open(path);
  if (!gguf.is_ok()) return 0;
  auto tokenizer = Tokenizer::from_gguf(*gguf);
  if (tokenizer.is_ok()) fuzz::exercise_tokenizer(**tokenizer);
  return 0;
}
