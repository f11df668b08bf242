// safetensors: one file (mmap'd, zero-copy) and a model directory of them (single file or
// shards listed in model.safetensors.index.json). Byte format: docs/formats.md and
// ../shared/docs/reference/checkpoint-formats.md.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/mapped_file.h"
#include "common/status.h"

namespace crosspoint {

// One tensor inside a mapped file. `data` points into the map and lives as long as the
// file (or the SafetensorsModel that owns it).
struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // row-major, outermost first, as PyTorch prints it
  const uint8_t* data = nullptr;
  size_t num_bytes = 0;
  std::string file;  // the file it came from, for error messages

  int64_t num_elements() const;
};

class SafetensorsFile {
 public:
  // Validates the whole header: JSON shape, known dtypes, offsets inside the file, byte
  // sizes equal to prod(shape) * dtype size, no overlaps. Errors name the file and tensor.
  static Result<SafetensorsFile> open(const std::string& path);

  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const TensorInfo* find(const std::string& name) const;
  const std::string& path() const { return file_.path(); }

 private:
  MappedFile file_;
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// For loaders: a tensor must have exactly `expected_shape` (what config.json implies) and,
// when `allowed_dtypes` is not empty, one of those dtypes. The error names the file, the
// tensor, both shapes or the dtype: "corrupt: /m/model.safetensors: tensor 'lm_head.weight':
// shape [100, 64] but the config implies [128, 64]".
Status check_tensor(const TensorInfo& tensor, const std::vector<int64_t>& expected_shape,
                    const std::vector<DType>& allowed_dtypes = {});

// All weights of a Hugging Face model directory.
class SafetensorsModel {
 public:
  // Opens model.safetensors, or every shard named by model.safetensors.index.json.
  static Result<std::unique_ptr<SafetensorsModel>> open_dir(const std::string& dir);

  const TensorInfo* find(const std::string& name) const;
  // find() or a not_found Status naming the tensor and the directory.
  Result<const TensorInfo*> require(const std::string& name) const;
  std::vector<std::string> tensor_names() const;
  size_t total_bytes() const;

 private:
  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorInfo*> index_;
};

// A tensor to write: bytes are copied as given (little-endian, C order).
struct TensorToWrite {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

// Writes a safetensors file the reference library reads (header padded to 8 bytes).
Status write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                         const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

}  // namespace crosspoint
