// One safetensors file: the 8-byte header length, the JSON header (dtypes, shapes, offsets,
// __metadata__) and the tensor table over the data section.
#include <cstddef>
#include <cstdint>

#include "formats/safetensors.h"
#include "fuzz/fuzz_temp_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosspoint;
  const std::string path = fuzz::write_fuzz_file("model.safetensors", data, size);
  auto file = SafetensorsFile::open(path);
  if (!file.is_ok()) return 0;
  // Every accepted tensor's bytes are read: an extent outside the file faults here.
  uint8_t checksum = 0;
  for (const auto& [name, tensor] : file->tensors()) {
    for (size_t i = 0; i < tensor.num_bytes; ++i) checksum ^= tensor.data[i];
    (void)check_tensor(tensor, tensor.shape, {tensor.dtype});
    (void)tensor.num_elements();
    if (file->find(name) != &tensor) __builtin_trap();
  }
  for (const auto& [key, value] : file->metadata()) checksum ^= static_cast<uint8_t>(key.size() + value.size());
  asm volatile("" : : "r"(checksum));  // keeps the reads
  return 0;
}
