// GGUF v3 reader: metadata key/values, tensor directory, and dequantisation of the tensor
// types crosspoint converts (F32, F16, BF16, Q8_0, Q4_0, Q4_1).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "common/mapped_file.h"
#include "common/status.h"

namespace crosspoint {

enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kBF16 = 30,
};
// Other ggml type ids (K-quants, IQ*, I8..F64) are accepted by GgufFile::open, which
// knows every type's block size, but gguf_dequantize refuses them.

// "Q4_1", "F16", ... or "type 77" for an id crosspoint does not know.
std::string ggml_type_name(GgmlType type);
// Elements per block and bytes per block; false for an unknown type id.
bool ggml_type_block(GgmlType type, uint64_t* block_elements, uint64_t* block_bytes);

// A metadata value. Arrays hold one of the vector alternatives.
using GgufValue = std::variant<uint64_t, int64_t, double, bool, std::string, std::vector<int64_t>, std::vector<double>,
                               std::vector<std::string>, std::vector<bool>>;

struct GgufTensor {
  std::string name;
  GgmlType type = GgmlType::kF32;
  std::vector<uint64_t> dims;  // ggml order: dims[0] is the fastest-varying (reverse of PyTorch)
  const uint8_t* data = nullptr;
  size_t num_bytes = 0;
  uint64_t num_elements() const;
  // PyTorch-order shape: dims reversed.
  std::vector<int64_t> shape() const;
};

class GgufFile {
 public:
  // Validates magic, version 3, every string/array length and every tensor's extent.
  static Result<GgufFile> open(const std::string& path);

  const std::string& path() const { return file_.path(); }
  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find_tensor(const std::string& name) const;

  // Typed metadata access; errors name the key and the file.
  Result<std::string> get_string(const std::string& key) const;
  Result<int64_t> get_int(const std::string& key) const;   // any integer type
  Result<double> get_float(const std::string& key) const;  // f32/f64 (or integer)
  Result<bool> get_bool(const std::string& key) const;
  Result<std::vector<std::string>> get_string_array(const std::string& key) const;
  Result<std::vector<int64_t>> get_int_array(const std::string& key) const;
  Result<std::vector<double>> get_float_array(const std::string& key) const;
  bool has(const std::string& key) const { return metadata_.count(key) != 0 || nested_arrays_.count(key) != 0; }

  // Arrays whose elements are arrays (rare): each element is one of GgufValue's vector
  // alternatives. Three or more levels of nesting are refused by open().
  const std::map<std::string, std::vector<GgufValue>>& nested_arrays() const { return nested_arrays_; }
  // general.alignment, or 32 when absent.
  uint64_t alignment() const { return alignment_; }

 private:
  MappedFile file_;
  std::map<std::string, GgufValue> metadata_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, std::vector<GgufValue>> nested_arrays_;
  uint64_t alignment_ = 32;
};

// Dequantises a whole tensor to fp32 in ggml element order (multithreaded on the global
// pool). Unsupported types are an error naming the tensor and the type.
Result<std::vector<float>> gguf_dequantize(const GgufTensor& tensor);
// Dequantises elements [element_begin, element_begin + num_elements) into out
// ([num_elements] fp32); both must be multiples of the type's block size (32 for the
// Q types), e.g. whole rows.
Status gguf_dequantize_range(const GgufTensor& tensor, uint64_t element_begin, uint64_t num_elements, float* out);

}  // namespace crosspoint
