// Dequantisation of the GGUF tensor types crosspoint converts. Block layouts (32 weights
// per block, along dims[0]):
//   Q8_0: fp16 d, int8 qs[32]          x[j] = qs[j] * d
//   Q4_0: fp16 d, u8 qs[16]            x[j] = (nibble_j - 8) * d
//   Q4_1: fp16 d, fp16 m, u8 qs[16]    x[j] = nibble_j * d + m
// where nibble_j is the low nibble of qs[j] for j < 16 and the high nibble of qs[j - 16]
// for j >= 16.
#include <cstring>

#include "common/dtype.h"
#include "common/thread_pool.h"
#include "formats/gguf.h"

namespace crosspoint {

namespace {

constexpr uint64_t kQBlock = 32;

uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

void dequantize_q8_0_block(const uint8_t* block, float* out) {  // 34 bytes -> 32 floats
  const float d = f16_to_f32(load_u16(block));
  const int8_t* qs = reinterpret_cast<const int8_t*>(block + 2);
  for (uint64_t j = 0; j < kQBlock; ++j) out[j] = static_cast<float>(qs[j]) * d;
}

void dequantize_q4_0_block(const uint8_t* block, float* out) {  // 18 bytes -> 32 floats
  const float d = f16_to_f32(load_u16(block));
  const uint8_t* qs = block + 2;
  for (uint64_t j = 0; j < kQBlock / 2; ++j) {
    out[j] = static_cast<float>(static_cast<int>(qs[j] & 0x0f) - 8) * d;
    out[j + kQBlock / 2] = static_cast<float>(static_cast<int>(qs[j] >> 4) - 8) * d;
  }
}

void dequantize_q4_1_block(const uint8_t* block, float* out) {  // 20 bytes -> 32 floats
  const float d = f16_to_f32(load_u16(block));
  const float m = f16_to_f32(load_u16(block + 2));
  const uint8_t* qs = block + 4;
  for (uint64_t j = 0; j < kQBlock / 2; ++j) {
    out[j] = static_cast<float>(qs[j] & 0x0f) * d + m;
    out[j + kQBlock / 2] = static_cast<float>(qs[j] >> 4) * d + m;
  }
}

bool is_dequantizable(GgmlType type) {
  switch (type) {
    case GgmlType::kF32:
    case GgmlType::kF16:
    case GgmlType::kBF16:
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_1: return true;
    default: return false;
  }
}

// Elements [begin, begin + count), both block-aligned and in range (checked by the caller).
void dequantize_unchecked(const GgufTensor& tensor, uint64_t begin, uint64_t count, float* out) {
  if (count == 0) return;  // a tensor with a zero dim: out (an empty vector's data()) may be null
  const uint8_t* data = tensor.data;
  switch (tensor.type) {
    case GgmlType::kF32: std::memcpy(out, data + begin * 4, count * 4); return;
    case GgmlType::kF16:
      for (uint64_t i = 0; i < count; ++i) out[i] = f16_to_f32(load_u16(data + (begin + i) * 2));
      return;
    case GgmlType::kBF16:
      for (uint64_t i = 0; i < count; ++i) out[i] = bf16_to_f32(load_u16(data + (begin + i) * 2));
      return;
    case GgmlType::kQ8_0:
      for (uint64_t b = 0; b < count / kQBlock; ++b)
        dequantize_q8_0_block(data + (begin / kQBlock + b) * 34, out + b * kQBlock);
      return;
    case GgmlType::kQ4_0:
      for (uint64_t b = 0; b < count / kQBlock; ++b)
        dequantize_q4_0_block(data + (begin / kQBlock + b) * 18, out + b * kQBlock);
      return;
    case GgmlType::kQ4_1:
      for (uint64_t b = 0; b < count / kQBlock; ++b)
        dequantize_q4_1_block(data + (begin / kQBlock + b) * 20, out + b * kQBlock);
      return;
    default: return;
  }
}

}  // namespace

Status gguf_dequantize_range(const GgufTensor& tensor, uint64_t element_begin, uint64_t num_elements, float* out) {
  if (!is_dequantizable(tensor.type)) {
    return unsupported("tensor '" + tensor.name + "': dequantising " + ggml_type_name(tensor.type) +
                       " is not supported (F32, F16, BF16, Q8_0, Q4_0, Q4_1 are)");
  }
  uint64_t block_elements = 0, block_bytes = 0;
  ggml_type_block(tensor.type, &block_elements, &block_bytes);
  const uint64_t total = tensor.num_elements();
  if (element_begin > total || num_elements > total - element_begin || element_begin % block_elements != 0 ||
      num_elements % block_elements != 0) {
    return invalid_argument("tensor '" + tensor.name + "': element range [" + std::to_string(element_begin) + ", " +
                            std::to_string(element_begin + num_elements) + ") is outside " + std::to_string(total) +
                            " elements or not aligned to blocks of " + std::to_string(block_elements));
  }
  dequantize_unchecked(tensor, element_begin, num_elements, out);
  return Status::ok();
}

Result<std::vector<float>> gguf_dequantize(const GgufTensor& tensor) {
  if (!is_dequantizable(tensor.type)) {
    return unsupported("tensor '" + tensor.name + "': dequantising " + ggml_type_name(tensor.type) +
                       " is not supported (F32, F16, BF16, Q8_0, Q4_0, Q4_1 are)");
  }
  const uint64_t total = tensor.num_elements();
  std::vector<float> out(total);  // ggml element order
  uint64_t block_elements = 0, block_bytes = 0;
  ggml_type_block(tensor.type, &block_elements, &block_bytes);
  const uint64_t num_chunks = total / kQBlock;  // 32 is a multiple of every supported block size
  if (num_chunks < 1024) {
    dequantize_unchecked(tensor, 0, total, out.data());
  } else {
    global_thread_pool().parallel_for(
        num_chunks,
        [&](size_t begin, size_t end) {
          dequantize_unchecked(tensor, begin * kQBlock, (end - begin) * kQBlock, out.data() + begin * kQBlock);
        },
        /*min_chunk=*/1024);
  }
  // A tail shorter than 32 elements exists only for F32/F16/BF16 with odd sizes.
  const uint64_t tail_begin = num_chunks * kQBlock;
  if (num_chunks >= 1024 && tail_begin < total) {
    dequantize_unchecked(tensor, tail_begin, total - tail_begin, out.data() + tail_begin);
  }
  return out;
}

}  // namespace crosspoint
