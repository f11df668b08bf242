// write_safetensors: the header the reference library writes (JSON padded with spaces to a
// multiple of 8 bytes), tensors ordered by element size (largest first) then name, so every
// tensor starts at an offset aligned to its element size.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>

#include "formats/safetensors.h"

namespace crosspoint {

Status write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  std::vector<const TensorToWrite*> order;
  std::set<std::string> names;
  for (const TensorToWrite& tensor : tensors) {
    if (tensor.name.empty() || tensor.name == "__metadata__") {
      return invalid_argument(path + ": invalid tensor name '" + tensor.name + "'");
    }
    if (!names.insert(tensor.name).second) {
      return invalid_argument(path + ": tensor '" + tensor.name + "' given twice");
    }
    uint64_t expected_bytes = dtype_size(tensor.dtype);
    for (int64_t dim : tensor.shape) {
      if (dim < 0) return invalid_argument(path + ": tensor '" + tensor.name + "' has a negative dimension");
      expected_bytes *= static_cast<uint64_t>(dim);
    }
    if (expected_bytes != tensor.bytes.size()) {
      return invalid_argument(path + ": tensor '" + tensor.name + "' has " + std::to_string(tensor.bytes.size()) +
                              " bytes but its shape and dtype need " + std::to_string(expected_bytes));
    }
    order.push_back(&tensor);
  }
  std::sort(order.begin(), order.end(), [](const TensorToWrite* a, const TensorToWrite* b) {
    const size_t size_a = dtype_size(a->dtype), size_b = dtype_size(b->dtype);
    return size_a != size_b ? size_a > size_b : a->name < b->name;
  });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [key, value] : metadata) meta[key] = value;
    header["__metadata__"] = std::move(meta);
  }
  uint64_t offset = 0;
  for (const TensorToWrite* tensor : order) {
    nlohmann::ordered_json entry;
    entry["dtype"] = std::string(dtype_to_safetensors(tensor->dtype));
    entry["shape"] = tensor->shape;
    entry["data_offsets"] = {offset, offset + tensor->bytes.size()};
    header[tensor->name] = std::move(entry);
    offset += tensor->bytes.size();
  }
  std::string header_text = header.dump();
  header_text.append((8 - header_text.size() % 8) % 8, ' ');

  const std::string temp_path = path + ".partial";
  std::FILE* out = std::fopen(temp_path.c_str(), "wb");
  if (out == nullptr) return io_error(temp_path + ": cannot open for writing: " + std::strerror(errno));
  const uint64_t header_bytes = header_text.size();
  bool ok = std::fwrite(&header_bytes, 8, 1, out) == 1 &&
            std::fwrite(header_text.data(), 1, header_text.size(), out) == header_text.size();
  for (const TensorToWrite* tensor : order) {
    if (!ok) break;
    ok = tensor->bytes.empty() ||
         std::fwrite(tensor->bytes.data(), 1, tensor->bytes.size(), out) == tensor->bytes.size();
  }
  ok = (std::fclose(out) == 0) && ok;
  if (!ok) {
    std::remove(temp_path.c_str());
    return io_error(path + ": write failed (disk full?)");
  }
  if (std::rename(temp_path.c_str(), path.c_str()) != 0) {
    std::remove(temp_path.c_str());
    return io_error(path + ": cannot rename " + temp_path + " into place: " + std::strerror(errno));
  }
  return Status::ok();
}

}  // namespace crosspoint
