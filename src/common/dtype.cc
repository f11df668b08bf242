#include "common/dtype.h"

namespace crosspoint {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
    case DType::kF8E4M3: return 1;
    case DType::kI8: return 1;
    case DType::kU8: return 1;
    case DType::kI32: return 4;
    case DType::kI64: return 8;
    case DType::kF64: return 8;
    case DType::kBool: return 1;
  }
  return 0;
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kF8E4M3: return "f8_e4m3";
    case DType::kI8: return "i8";
    case DType::kU8: return "u8";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kF64: return "f64";
    case DType::kBool: return "bool";
  }
  return "?";
}

namespace {
struct SafetensorsName {
  std::string_view name;
  DType dtype;
};
constexpr SafetensorsName kSafetensorsNames[] = {
    {"F32", DType::kF32}, {"F16", DType::kF16},   {"BF16", DType::kBF16}, {"F8_E4M3", DType::kF8E4M3},
    {"I8", DType::kI8},   {"U8", DType::kU8},     {"I32", DType::kI32},   {"I64", DType::kI64},
    {"F64", DType::kF64}, {"BOOL", DType::kBool},
};
}  // namespace

std::optional<DType> dtype_from_safetensors(std::string_view name) {
  for (const auto& entry : kSafetensorsNames) {
    if (entry.name == name) return entry.dtype;
  }
  return std::nullopt;
}

std::string_view dtype_to_safetensors(DType dtype) {
  for (const auto& entry : kSafetensorsNames) {
    if (entry.dtype == dtype) return entry.name;
  }
  return "?";
}

}  // namespace crosspoint
