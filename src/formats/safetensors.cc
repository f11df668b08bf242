// safetensors reader: header validation and the zero-copy tensor table. The writer is in
// safetensors_writer.cc, directories of shards in safetensors_model.cc.
#include "formats/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <limits>

namespace crosspoint {

namespace {

// The reference implementation refuses headers above 100 MB; so do we.
constexpr uint64_t kMaxHeaderBytes = 100ull * 1000 * 1000;

// A JSON number that is a non-negative integer, as uint64.
bool json_to_u64(const nlohmann::json& value, uint64_t* out) {
  if (value.is_number_unsigned()) {
    *out = value.get<uint64_t>();
    return true;
  }
  if (value.is_number_integer()) {
    const int64_t v = value.get<int64_t>();
    if (v < 0) return false;
    *out = static_cast<uint64_t>(v);
    return true;
  }
  return false;
}

// One tensor's header entry, before the byte range is turned into a pointer.
struct HeaderEntry {
  TensorInfo info;
  uint64_t begin = 0;  // offset into the data section
  uint64_t end = 0;
};

Result<HeaderEntry> parse_entry(const std::string& path, const std::string& name, const nlohmann::json& value) {
  const std::string where = path + ": tensor '" + name + "'";
  if (!value.is_object()) return corrupt(where + ": header entry is not a JSON object");
  HeaderEntry entry;
  entry.info.name = name;
  entry.info.file = path;

  auto dtype_it = value.find("dtype");
  if (dtype_it == value.end() || !dtype_it->is_string()) {
    return corrupt(where + ": missing or non-string \"dtype\"");
  }
  const std::string dtype_text = dtype_it->get<std::string>();
  const std::optional<DType> dtype = dtype_from_safetensors(dtype_text);
  if (!dtype) return unsupported(where + ": unknown or unsupported dtype \"" + dtype_text + "\"");
  entry.info.dtype = *dtype;

  auto shape_it = value.find("shape");
  if (shape_it == value.end() || !shape_it->is_array()) { return corrupt(where + ": missing or non-array \"shape\""); }
  // prod(shape) * dtype size, checked for overflow.
  uint64_t num_bytes = dtype_size(*dtype);
  bool overflow = false;
  for (const auto& dim_json : *shape_it) {
    uint64_t dim = 0;
    if (!json_to_u64(dim_json, &dim) || dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return corrupt(where + ": shape entry " + dim_json.dump() + " is not a non-negative integer");
    }
    entry.info.shape.push_back(static_cast<int64_t>(dim));
    if (dim != 0 && num_bytes > std::numeric_limits<uint64_t>::max() / dim) overflow = true;
    num_bytes *= dim;
  }
  if (overflow) return corrupt(where + ": shape " + shape_it->dump() + " overflows 64-bit byte size");

  auto offsets_it = value.find("data_offsets");
  if (offsets_it == value.end() || !offsets_it->is_array() || offsets_it->size() != 2 ||
      !json_to_u64((*offsets_it)[0], &entry.begin) || !json_to_u64((*offsets_it)[1], &entry.end)) {
    return corrupt(where + ": \"data_offsets\" must be [begin, end] with non-negative integers");
  }
  if (entry.end < entry.begin) {
    return corrupt(where + ": data_offsets end " + std::to_string(entry.end) + " before begin " +
                   std::to_string(entry.begin));
  }
  if (entry.end - entry.begin != num_bytes) {
    return corrupt(where + ": data_offsets span " + std::to_string(entry.end - entry.begin) + " bytes but shape " +
                   shape_it->dump() + " x " + dtype_text + " needs " + std::to_string(num_bytes));
  }
  entry.info.num_bytes = static_cast<size_t>(num_bytes);
  return entry;
}

// Offsets must tile the data section: sorted by begin, each starts where the previous
// ended, and the last ends at the end of the file.
Status check_tiling(const std::string& path, std::vector<const HeaderEntry*> entries, uint64_t data_bytes) {
  std::sort(entries.begin(), entries.end(), [](const HeaderEntry* a, const HeaderEntry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t expected_begin = 0;
  const HeaderEntry* previous = nullptr;
  for (const HeaderEntry* entry : entries) {
    if (entry->end > data_bytes) {
      return corrupt(path + ": tensor '" + entry->info.name + "': data_offsets [" + std::to_string(entry->begin) +
                     ", " + std::to_string(entry->end) + "] run past the data section of " +
                     std::to_string(data_bytes) + " bytes (file truncated?)");
    }
    if (entry->begin < expected_begin) {
      return corrupt(path + ": tensor '" + entry->info.name + "' overlaps tensor '" + previous->info.name +
                     "' (begin " + std::to_string(entry->begin) + " < previous end " + std::to_string(expected_begin) +
                     ")");
    }
    if (entry->begin > expected_begin) {
      return corrupt(path + ": tensor '" + entry->info.name + "': gap of " +
                     std::to_string(entry->begin - expected_begin) +
                     " bytes before it (offsets must tile the data section)");
    }
    expected_begin = entry->end;
    previous = entry;
  }
  if (expected_begin != data_bytes) {
    return corrupt(path + ": tensors cover " + std::to_string(expected_begin) + " bytes but the data section has " +
                   std::to_string(data_bytes) + " (trailing bytes or missing tensors)");
  }
  return Status::ok();
}

}  // namespace

int64_t TensorInfo::num_elements() const {
  int64_t n = 1;
  for (int64_t dim : shape) n *= dim;
  return n;
}

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  CROSSPOINT_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(path));
  const uint64_t file_bytes = mapped.size();
  if (file_bytes < 8) {
    return corrupt(path + ": " + std::to_string(file_bytes) +
                   " bytes is too short for a safetensors file (8-byte header length missing)");
  }
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, mapped.data(), 8);  // little-endian hosts only (x86, arm64)
  if (header_bytes > file_bytes - 8) {
    return corrupt(path + ": header length " + std::to_string(header_bytes) + " exceeds file size " +
                   std::to_string(file_bytes));
  }
  if (header_bytes > kMaxHeaderBytes) {
    return corrupt(path + ": header length " + std::to_string(header_bytes) + " exceeds the 100 MB limit");
  }
  const char* header_begin = reinterpret_cast<const char*>(mapped.data() + 8);
  nlohmann::json header = nlohmann::json::parse(header_begin, header_begin + header_bytes, nullptr,
                                                /*allow_exceptions=*/false);
  if (header.is_discarded()) return corrupt(path + ": header is not valid JSON");
  if (!header.is_object()) return corrupt(path + ": header is JSON but not an object");

  SafetensorsFile file;
  std::vector<HeaderEntry> entries;
  entries.reserve(header.size());
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (value.is_null()) continue;
      if (!value.is_object()) return corrupt(path + ": __metadata__ is not a JSON object");
      for (const auto& [meta_key, meta_value] : value.items()) {
        if (!meta_value.is_string()) {
          return corrupt(path + ": __metadata__ value of '" + meta_key + "' is not a string");
        }
        file.metadata_[meta_key] = meta_value.get<std::string>();
      }
      continue;
    }
    CROSSPOINT_ASSIGN_OR_RETURN(HeaderEntry entry, parse_entry(path, key, value));
    entries.push_back(std::move(entry));
  }

  const uint64_t data_bytes = file_bytes - 8 - header_bytes;
  std::vector<const HeaderEntry*> entry_ptrs;
  for (const HeaderEntry& entry : entries) entry_ptrs.push_back(&entry);
  CROSSPOINT_RETURN_IF_ERROR(check_tiling(path, entry_ptrs, data_bytes));

  const uint8_t* data_section = mapped.data() + 8 + header_bytes;
  for (HeaderEntry& entry : entries) {
    entry.info.data = data_section + entry.begin;
    std::string name = entry.info.name;
    file.tensors_.emplace(std::move(name), std::move(entry.info));
  }
  // Moving the MappedFile keeps the mapping (and so every data pointer) where it is.
  file.file_ = std::move(mapped);
  return file;
}

Status check_tensor(const TensorInfo& tensor, const std::vector<int64_t>& expected_shape,
                    const std::vector<DType>& allowed_dtypes) {
  auto shape_text = [](const std::vector<int64_t>& shape) {
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
  };
  if (tensor.shape != expected_shape) {
    return corrupt(tensor.file + ": tensor '" + tensor.name + "': shape " + shape_text(tensor.shape) +
                   " but the config implies " + shape_text(expected_shape));
  }
  if (!allowed_dtypes.empty() &&
      std::find(allowed_dtypes.begin(), allowed_dtypes.end(), tensor.dtype) == allowed_dtypes.end()) {
    std::string allowed;
    for (DType dtype : allowed_dtypes) allowed += (allowed.empty() ? "" : "/") + std::string(dtype_name(dtype));
    return unsupported(tensor.file + ": tensor '" + tensor.name + "': dtype " + std::string(dtype_name(tensor.dtype)) +
                       " where " + allowed + " is expected");
  }
  return Status::ok();
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

}  // namespace crosspoint
