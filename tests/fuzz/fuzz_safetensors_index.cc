// model.safetensors.index.json of a sharded checkpoint, in a directory that also holds two
// valid shards the index may name (tensors "a" and "b" in the first, "c" in the second).
#include <cstddef>
#include <cstdint>

#include "formats/safetensors.h"
#include "fuzz/fuzz_temp_dir.h"

namespace {

void write_shards() {
  using crosspoint::DType;
  const std::string dir = crosspoint::fuzz::fuzz_temp_dir();
  const auto ok1 = crosspoint::write_safetensors(
      dir + "/model-00001-of-00002.safetensors",
      {{"a", DType::kF32, {2}, std::vector<uint8_t>(8, 1)}, {"b", DType::kF16, {1, 2}, std::vector<uint8_t>(4, 2)}});
  const auto ok2 = crosspoint::write_safetensors(dir + "/model-00002-of-00002.safetensors",
                                                 {{"c", DType::kBF16, {3}, std::vector<uint8_t>(6, 3)}});
  if (!ok1.is_ok() || !ok2.is_ok()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosspoint;
  static const bool shards_written = (write_shards(), true);
  (void)shards_written;
  fuzz::write_fuzz_file("model.safetensors.index.json", data, size);
  auto model = SafetensorsModel::open_dir(fuzz::fuzz_temp_dir());
  if (!model.is_ok()) return 0;
  for (const std::string& name : (*model)->tensor_names()) {
    auto tensor = (*model)->require(name);
    if (!tensor.is_ok() || (*tensor)->name != name) __builtin_trap();
  }
  (void)(*model)->total_bytes();
  return 0;
}
