// GGUF v3 parsing: header, metadata, tensor directory. Every length read from the file is
// checked against the bytes that remain before it is used, so a truncated or corrupt file
// is a Status naming the file and the key or tensor, never an out-of-bounds read.
#include "formats/gguf.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

namespace crosspoint {

namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as little-endian u32
constexpr uint32_t kMaxDims = 4;             // GGML_MAX_DIMS
constexpr int kMaxArrayNesting = 2;          // array of arrays; deeper is refused

enum class ValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

struct TypeBlock {
  uint32_t id;
  const char* name;
  uint64_t block_elements;
  uint64_t block_bytes;
};
// ggml's type table (ggml.c type_traits / gguf-py GGML_QUANT_SIZES).
constexpr TypeBlock kTypeBlocks[] = {
    {0, "F32", 1, 4},         {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},      {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},      {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 40},
    {10, "Q2_K", 256, 84},    {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
    {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},   {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82},   {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},         {25, "I16", 1, 2},
    {26, "I32", 1, 4},        {27, "I64", 1, 8},        {28, "F64", 1, 8},        {29, "IQ1_M", 256, 56},
    {30, "BF16", 1, 2},       {34, "TQ1_0", 256, 54},   {35, "TQ2_0", 256, 66},   {39, "MXFP4", 32, 17},
};

const TypeBlock* find_type_block(GgmlType type) {
  for (const TypeBlock& block : kTypeBlocks) {
    if (block.id == static_cast<uint32_t>(type)) return &block;
  }
  return nullptr;
}

// A bounds-checked little-endian reader over the mapped file.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size, std::string path) : data_(data), size_(size), path_(std::move(path)) {}

  size_t offset() const { return offset_; }
  size_t remaining() const { return size_ - offset_; }

  template <typename T>
  Status read(T* out, const std::string& what) {
    if (remaining() < sizeof(T)) return truncated(what);
    std::memcpy(out, data_ + offset_, sizeof(T));
    offset_ += sizeof(T);
    return Status::ok();
  }

  Status read_string(std::string* out, const std::string& what) {
    uint64_t length = 0;
    CROSSPOINT_RETURN_IF_ERROR(read(&length, what + " (string length)"));
    if (length > remaining()) {
      return corrupt(path_ + ": " + what + ": string length " + std::to_string(length) + " at byte " +
                     std::to_string(offset_ - 8) + " runs past the end of the file (" + std::to_string(size_) +
                     " bytes)");
    }
    out->assign(reinterpret_cast<const char*>(data_ + offset_), static_cast<size_t>(length));
    offset_ += static_cast<size_t>(length);
    return Status::ok();
  }

  Status truncated(const std::string& what) const {
    return corrupt(path_ + ": truncated at byte " + std::to_string(offset_) + " while reading " + what);
  }
  const std::string& path() const { return path_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t offset_ = 0;
  std::string path_;
};

// Smallest encoded size of one element, to reject absurd array counts before allocating.
uint64_t min_element_bytes(ValueType type) {
  switch (type) {
    case ValueType::kU8:
    case ValueType::kI8:
    case ValueType::kBool: return 1;
    case ValueType::kU16:
    case ValueType::kI16: return 2;
    case ValueType::kU32:
    case ValueType::kI32:
    case ValueType::kF32: return 4;
    case ValueType::kU64:
    case ValueType::kI64:
    case ValueType::kF64:
    case ValueType::kString: return 8;
    case ValueType::kArray: return 12;
  }
  return 1;
}

bool is_known_value_type(uint32_t type) { return type <= 12; }

// Reads one scalar of an integer type, widened to int64 (u64 above INT64_MAX is an error).
Status read_integer(Cursor& cursor, ValueType type, int64_t* out, const std::string& what) {
  switch (type) {
    case ValueType::kU8: {
      uint8_t v = 0;
      CROSSPOINT_RETURN_IF_ERROR(cursor.read(&v, what));
      *out = v;
      return Status::ok();
    }
    case ValueType::kI8: {
      int8_t v = 0;
      CROSSPOINT_RETURN_IF_ERROR(cursor.read(&v, what));
      *out = v;
      return Status::ok();
    }
    case ValueType::kU16: {
      uint16_t v = 0;
      CROSSPOINT_RETURN_IF_ERROR(cursor.read(&v, what));
      *out = v;
      return Status::ok();
    }
    case ValueType::kI16: {
      int16_t v = 0;
      CROSSPOINT_RETURN_IF_ERROR(cursor.read(&v, what));
      *out = v;
      return Status::ok();
    }
    case ValueType::kU32: {
      uint32_t v = 0;
      CROSSPOINT_RETURN_IF_ERROR(cursor.read(&v, what));
      *out = v;
      return Status::ok();
    }
    case ValueType::kI32: {
      int32_t v = 0;
      CROSSPOINT_RETURN_IF_ERROR(cursor.read(&v, what));
      *out = v;
      return Status::ok();
    }
    case ValueType::kI64: {
      int64_t v = 0;
      CROSSPOINT_RETURN_IF_ERROR(cursor.read(&v, what));
      *out = v;
      return Status::ok();
    }
    case ValueType::kU64: {
      uint64_t v = 0;
      CROSSPOINT_RETURN_IF_ERROR(cursor.read(&v, what));
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return unsupported(cursor.path() + ": " + what + ": u64 array element " + std::to_string(v) + " exceeds int64");
      }
      *out = static_cast<int64_t>(v);
      return Status::ok();
    }
    default: return internal_error("read_integer on a non-integer type");
  }
}

Status read_float(Cursor& cursor, ValueType type, double* out, const std::string& what) {
  if (type == ValueType::kF32) {
    float v = 0;
    CROSSPOINT_RETURN_IF_ERROR(cursor.read(&v, what));
    *out = v;
  } else {
    CROSSPOINT_RETURN_IF_ERROR(cursor.read(out, what));
  }
  return Status::ok();
}

Status read_bool(Cursor& cursor, bool* out, const std::string& what) {
  uint8_t v = 0;
  CROSSPOINT_RETURN_IF_ERROR(cursor.read(&v, what));
  if (v > 1) return corrupt(cursor.path() + ": " + what + ": bool byte " + std::to_string(v) + " is not 0 or 1");
  *out = v == 1;
  return Status::ok();
}

// An array of scalars or strings (not of arrays) with `count` elements.
Status read_flat_array(Cursor& cursor, ValueType element_type, uint64_t count, GgufValue* out,
                       const std::string& what) {
  switch (element_type) {
    case ValueType::kU8:
    case ValueType::kI8:
    case ValueType::kU16:
    case ValueType::kI16:
    case ValueType::kU32:
    case ValueType::kI32:
    case ValueType::kU64:
    case ValueType::kI64: {
      std::vector<int64_t> values(count);
      for (auto& v : values) CROSSPOINT_RETURN_IF_ERROR(read_integer(cursor, element_type, &v, what));
      *out = std::move(values);
      return Status::ok();
    }
    case ValueType::kF32:
    case ValueType::kF64: {
      std::vector<double> values(count);
      for (auto& v : values) CROSSPOINT_RETURN_IF_ERROR(read_float(cursor, element_type, &v, what));
      *out = std::move(values);
      return Status::ok();
    }
    case ValueType::kBool: {
      std::vector<bool> values(count);
      for (uint64_t i = 0; i < count; ++i) {
        bool v = false;
        CROSSPOINT_RETURN_IF_ERROR(read_bool(cursor, &v, what));
        values[i] = v;
      }
      *out = std::move(values);
      return Status::ok();
    }
    case ValueType::kString: {
      std::vector<std::string> values(count);
      for (auto& v : values) CROSSPOINT_RETURN_IF_ERROR(cursor.read_string(&v, what));
      *out = std::move(values);
      return Status::ok();
    }
    default: return internal_error("read_flat_array on an array type");
  }
}

// Reads an array header (element type and count) and checks the count fits the file.
Status read_array_header(Cursor& cursor, ValueType* element_type, uint64_t* count, const std::string& what) {
  uint32_t raw_type = 0;
  CROSSPOINT_RETURN_IF_ERROR(cursor.read(&raw_type, what + " (array element type)"));
  if (!is_known_value_type(raw_type)) {
    return corrupt(cursor.path() + ": " + what + ": unknown array element type " + std::to_string(raw_type));
  }
  CROSSPOINT_RETURN_IF_ERROR(cursor.read(count, what + " (array length)"));
  *element_type = static_cast<ValueType>(raw_type);
  if (*count > cursor.remaining() / min_element_bytes(*element_type)) {
    return corrupt(cursor.path() + ": " + what + ": array length " + std::to_string(*count) +
                   " runs past the end of the file");
  }
  return Status::ok();
}

}  // namespace

std::string ggml_type_name(GgmlType type) {
  const TypeBlock* block = find_type_block(type);
  return block ? block->name : "type " + std::to_string(static_cast<uint32_t>(type));
}

bool ggml_type_block(GgmlType type, uint64_t* block_elements, uint64_t* block_bytes) {
  const TypeBlock* block = find_type_block(type);
  if (block == nullptr) return false;
  *block_elements = block->block_elements;
  *block_bytes = block->block_bytes;
  return true;
}

uint64_t GgufTensor::num_elements() const {
  uint64_t n = 1;
  for (uint64_t dim : dims) n *= dim;
  return n;
}

std::vector<int64_t> GgufTensor::shape() const { return std::vector<int64_t>(dims.rbegin(), dims.rend()); }

namespace {

// One metadata value of any type; nested arrays go to `nested` (one level only).
Status read_value(Cursor& cursor, ValueType type, const std::string& key, GgufValue* value,
                  std::vector<GgufValue>* nested, bool* is_nested) {
  const std::string what = "metadata key '" + key + "'";
  *is_nested = false;
  switch (type) {
    case ValueType::kU8:
    case ValueType::kU16:
    case ValueType::kU32:
    case ValueType::kU64: {
      uint64_t v = 0;
      if (type == ValueType::kU64) {
        CROSSPOINT_RETURN_IF_ERROR(cursor.read(&v, what));
      } else {
        int64_t widened;
        CROSSPOINT_RETURN_IF_ERROR(read_integer(cursor, type, &widened, what));
        v = static_cast<uint64_t>(widened);
      }
      *value = v;
      return Status::ok();
    }
    case ValueType::kI8:
    case ValueType::kI16:
    case ValueType::kI32:
    case ValueType::kI64: {
      int64_t v = 0;
      CROSSPOINT_RETURN_IF_ERROR(read_integer(cursor, type, &v, what));
      *value = v;
      return Status::ok();
    }
    case ValueType::kF32:
    case ValueType::kF64: {
      double v = 0;
      CROSSPOINT_RETURN_IF_ERROR(read_float(cursor, type, &v, what));
      *value = v;
      return Status::ok();
    }
    case ValueType::kBool: {
      bool v = false;
      CROSSPOINT_RETURN_IF_ERROR(read_bool(cursor, &v, what));
      *value = v;
      return Status::ok();
    }
    case ValueType::kString: {
      std::string v;
      CROSSPOINT_RETURN_IF_ERROR(cursor.read_string(&v, what));
      *value = std::move(v);
      return Status::ok();
    }
    case ValueType::kArray: {
      ValueType element_type;
      uint64_t count;
      CROSSPOINT_RETURN_IF_ERROR(read_array_header(cursor, &element_type, &count, what));
      if (element_type != ValueType::kArray) return read_flat_array(cursor, element_type, count, value, what);
      *is_nested = true;
      nested->clear();
      for (uint64_t i = 0; i < count; ++i) {
        ValueType inner_type;
        uint64_t inner_count;
        CROSSPOINT_RETURN_IF_ERROR(read_array_header(cursor, &inner_type, &inner_count, what));
        if (inner_type == ValueType::kArray) {
          return unsupported(cursor.path() + ": " + what + ": arrays nested deeper than " +
                             std::to_string(kMaxArrayNesting) + " levels are not supported");
        }
        GgufValue inner;
        CROSSPOINT_RETURN_IF_ERROR(read_flat_array(cursor, inner_type, inner_count, &inner, what));
        nested->push_back(std::move(inner));
      }
      return Status::ok();
    }
  }
  return corrupt(cursor.path() + ": " + what + ": unknown value type " + std::to_string(static_cast<uint32_t>(type)));
}

// Reads one tensor directory entry; data pointers are filled in once the data section is known.
Status read_tensor_info(Cursor& cursor, uint64_t tensor_idx, GgufTensor* tensor, uint64_t* offset) {
  const std::string what = "tensor #" + std::to_string(tensor_idx);
  CROSSPOINT_RETURN_IF_ERROR(cursor.read_string(&tensor->name, what + " name"));
  const std::string where = cursor.path() + ": tensor '" + tensor->name + "'";
  uint32_t num_dims = 0;
  CROSSPOINT_RETURN_IF_ERROR(cursor.read(&num_dims, what + " n_dims"));
  if (num_dims == 0 || num_dims > kMaxDims) {
    return corrupt(where + ": n_dims " + std::to_string(num_dims) + " is outside 1.." + std::to_string(kMaxDims));
  }
  tensor->dims.resize(num_dims);
  uint64_t num_elements = 1;
  for (uint64_t& dim : tensor->dims) {
    CROSSPOINT_RETURN_IF_ERROR(cursor.read(&dim, what + " dims"));
    if (dim != 0 && num_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / dim) {
      return corrupt(where + ": element count overflows int64");
    }
    num_elements *= dim;
  }
  uint32_t raw_type = 0;
  CROSSPOINT_RETURN_IF_ERROR(cursor.read(&raw_type, what + " type"));
  tensor->type = static_cast<GgmlType>(raw_type);
  CROSSPOINT_RETURN_IF_ERROR(cursor.read(offset, what + " offset"));
  uint64_t block_elements = 0, block_bytes = 0;
  if (!ggml_type_block(tensor->type, &block_elements, &block_bytes)) {
    return unsupported(where + ": unknown ggml type id " + std::to_string(raw_type));
  }
  if (tensor->dims[0] % block_elements != 0) {
    return corrupt(where + ": dims[0] = " + std::to_string(tensor->dims[0]) + " is not a multiple of the " +
                   ggml_type_name(tensor->type) + " block size " + std::to_string(block_elements));
  }
  const uint64_t num_blocks = num_elements / block_elements;
  if (num_blocks > std::numeric_limits<uint64_t>::max() / block_bytes) return corrupt(where + ": byte size overflows");
  tensor->num_bytes = static_cast<size_t>(num_blocks * block_bytes);
  return Status::ok();
}

// Tensors must lie inside the data section, at aligned offsets, without overlapping.
Status check_tensor_extents(const std::string& path, const std::vector<GgufTensor>& tensors,
                            const std::vector<uint64_t>& offsets, uint64_t data_bytes, uint64_t alignment) {
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return offsets[a] < offsets[b]; });
  uint64_t previous_end = 0;
  const GgufTensor* previous = nullptr;
  for (size_t i : order) {
    const std::string where = path + ": tensor '" + tensors[i].name + "'";
    if (offsets[i] % alignment != 0) {
      return corrupt(where + ": offset " + std::to_string(offsets[i]) + " is not a multiple of the alignment " +
                     std::to_string(alignment));
    }
    if (offsets[i] > data_bytes || tensors[i].num_bytes > data_bytes - offsets[i]) {
      return corrupt(where + ": bytes [" + std::to_string(offsets[i]) + ", " +
                     std::to_string(offsets[i] + tensors[i].num_bytes) + ") run past the data section of " +
                     std::to_string(data_bytes) + " bytes (file truncated?)");
    }
    if (previous != nullptr && offsets[i] < previous_end) {
      return corrupt(where + ": overlaps tensor '" + previous->name + "'");
    }
    previous_end = offsets[i] + tensors[i].num_bytes;
    previous = &tensors[i];
  }
  return Status::ok();
}

}  // namespace

Result<GgufFile> GgufFile::open(const std::string& path) {
  CROSSPOINT_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(path));
  Cursor cursor(mapped.data(), mapped.size(), path);
  uint32_t magic = 0, version = 0;
  CROSSPOINT_RETURN_IF_ERROR(cursor.read(&magic, "the magic"));
  if (magic != kGgufMagic) return corrupt(path + ": not a GGUF file (bad magic)");
  CROSSPOINT_RETURN_IF_ERROR(cursor.read(&version, "the version"));
  if (version != 3)
    return unsupported(path + ": GGUF version " + std::to_string(version) + " (only version 3 is read)");
  uint64_t tensor_count = 0, kv_count = 0;
  CROSSPOINT_RETURN_IF_ERROR(cursor.read(&tensor_count, "the tensor count"));
  CROSSPOINT_RETURN_IF_ERROR(cursor.read(&kv_count, "the metadata count"));
  // Each key/value needs at least 13 bytes and each tensor entry at least 28.
  if (kv_count > cursor.remaining() / 13 || tensor_count > cursor.remaining() / 28) {
    return corrupt(path + ": metadata count " + std::to_string(kv_count) + " / tensor count " +
                   std::to_string(tensor_count) + " cannot fit in the file");
  }

  GgufFile file;
  for (uint64_t kv_idx = 0; kv_idx < kv_count; ++kv_idx) {
    std::string key;
    CROSSPOINT_RETURN_IF_ERROR(cursor.read_string(&key, "metadata key #" + std::to_string(kv_idx)));
    uint32_t raw_type = 0;
    CROSSPOINT_RETURN_IF_ERROR(cursor.read(&raw_type, "the type of metadata key '" + key + "'"));
    if (!is_known_value_type(raw_type)) {
      return corrupt(path + ": metadata key '" + key + "': unknown value type " + std::to_string(raw_type));
    }
    if (file.has(key)) return corrupt(path + ": metadata key '" + key + "' appears twice");
    GgufValue value;
    std::vector<GgufValue> nested;
    bool is_nested = false;
    CROSSPOINT_RETURN_IF_ERROR(read_value(cursor, static_cast<ValueType>(raw_type), key, &value, &nested, &is_nested));
    if (is_nested) {
      file.nested_arrays_[key] = std::move(nested);
    } else {
      file.metadata_[key] = std::move(value);
    }
  }

  if (file.has("general.alignment")) {
    auto alignment = file.get_int("general.alignment");
    if (!alignment.is_ok()) return alignment.status();
    const int64_t a = alignment.value();
    if (a <= 0 || (a & (a - 1)) != 0) {
      return corrupt(path + ": general.alignment " + std::to_string(a) + " is not a positive power of two");
    }
    file.alignment_ = static_cast<uint64_t>(a);
  }

  std::vector<uint64_t> offsets(tensor_count);
  file.tensors_.resize(tensor_count);
  std::set<std::string> names;
  for (uint64_t i = 0; i < tensor_count; ++i) {
    CROSSPOINT_RETURN_IF_ERROR(read_tensor_info(cursor, i, &file.tensors_[i], &offsets[i]));
    if (!names.insert(file.tensors_[i].name).second) {
      return corrupt(path + ": tensor '" + file.tensors_[i].name + "' appears twice");
    }
  }
  uint64_t data_start = cursor.offset();
  data_start += (file.alignment_ - data_start % file.alignment_) % file.alignment_;
  if (tensor_count > 0 && data_start > mapped.size()) {
    return corrupt(path + ": truncated: the tensor data section starts at byte " + std::to_string(data_start) +
                   " but the file has " + std::to_string(mapped.size()));
  }
  const uint64_t data_bytes = data_start <= mapped.size() ? mapped.size() - data_start : 0;
  CROSSPOINT_RETURN_IF_ERROR(check_tensor_extents(path, file.tensors_, offsets, data_bytes, file.alignment_));
  for (uint64_t i = 0; i < tensor_count; ++i) file.tensors_[i].data = mapped.data() + data_start + offsets[i];
  // Moving the MappedFile keeps the mapping, so the data pointers stay valid.
  file.file_ = std::move(mapped);
  return file;
}

const GgufTensor* GgufFile::find_tensor(const std::string& name) const {
  for (const GgufTensor& tensor : tensors_) {
    if (tensor.name == name) return &tensor;
  }
  return nullptr;
}

}  // namespace crosspoint
