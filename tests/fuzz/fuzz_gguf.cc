// One GGUF file: magic and version, the metadata key/values (every value type, nested
// arrays), the tensor directory and its extents; then what `crosspoint convert` reads off
// it: typed metadata, small tensors dequantised, the config.json it implies.
#include <cstddef>
#include <cstdint>

#include "formats/gguf.h"
#include "formats/gguf_to_hf.h"
#include "fuzz/fuzz_temp_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosspoint;
  const std::string path = fuzz::write_fuzz_file("model.gguf", data, size);
  auto gguf = GgufFile::open(path);
  if (!gguf.is_ok()) return 0;
  for (const auto& [key, value] : gguf->metadata()) {
    (void)gguf->get_string(key);
    (void)gguf->get_int(key);
    (void)gguf->get_float(key);
    (void)gguf->get_bool(key);
    (void)gguf->get_string_array(key);
    (void)gguf->get_int_array(key);
    (void)gguf->get_float_array(key);
    if (!gguf->has(key)) __builtin_trap();
  }
  for (const auto& tensor : gguf->tensors()) {
    (void)tensor.shape();
    (void)ggml_type_name(tensor.type);
    if (gguf->find_tensor(tensor.name) == nullptr) __builtin_trap();
    // Small tensors only: below gguf_dequantize's threshold for the thread pool.
    if (tensor.num_elements() <= 16384) (void)gguf_dequantize(tensor);
  }
  (void)hf_config_json_from_gguf(*gguf);
  return 0;
}
