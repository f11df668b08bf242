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
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ8_1 = 9,
  kBF16 = 30,
};

// A metadata value. Arrays hold one of the vector alternatives.
using GgufValue = std::variant<uint64_t, int64_t, double, bool, std::string,
                               std::vector<int64_t>, std::vector<double>, std::vector<std::string>,
                               std::vector<bool>>;

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
  Result<int64_t> get_int(const std::string& key) const;       // any integer type
  Result<double> get_float(const std::string& key) const;      // f32/f64 (or integer)
  Result<bool> get_bool(const std::string& key) const;
  Result<std::vector<std::string>> get_string_array(const std::string& key) const;
  Result<std::vector<int64_t>> get_int_array(const std::string& key) const;
  Result<std::vector<double>> get_float_array(const std::string& key) const;
  bool has(const std::string& key) const { return metadata_.count(key) != 0; }

 private:
  MappedFile file_;
  std::map<std::string, GgufValue> metadata_;
  std::vector<GgufTensor> tensors_;
};

// Dequantises a whole tensor to fp32 in ggml element order.
Result<std::vector<float>> gguf_dequantize(const GgufTensor& tensor);

}  // namespace crosspoint
