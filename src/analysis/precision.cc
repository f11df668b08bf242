#include "analysis/precision.h"

#include <cctype>

namespace crosspoint::analysis {

std::string_view precision_name(Precision precision) {
  switch (precision) {
    case Precision::kFp32: return "fp32";
    case Precision::kFp16: return "fp16";
    case Precision::kW8A8Fp8: return "w8a8-fp8";
    case Precision::kW8A8Int8: return "w8a8-int8";
    case Precision::kW4A16: return "w4a16";
  }
  return "unknown";
}

Result<Precision> parse_precision(std::string_view text) {
  std::string key;
  for (char c : text) key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (key == "fp32" || key == "float32" || key == "f32") return Precision::kFp32;
  if (key == "fp16" || key == "float16" || key == "f16" || key == "bf16" || key == "bfloat16" || key == "half")
    return Precision::kFp16;
  if (key == "w8a8-fp8" || key == "w8a8" || key == "fp8" || key == "w8a8fp8" || key == "fp8-dynamic")
    return Precision::kW8A8Fp8;
  if (key == "w8a8-int8" || key == "int8" || key == "w8a8int8") return Precision::kW8A8Int8;
  if (key == "w4a16" || key == "int4" || key == "gptq" || key == "gptq-int4" || key == "awq" || key == "marlin")
    return Precision::kW4A16;
  return invalid_argument("unknown precision '" + std::string(text) +
                          "' (expected fp32, fp16, bf16, w8a8-fp8, w8a8-int8 or w4a16)");
}

double linear_weight_bytes(Precision precision, int64_t num_out, int64_t num_in, int64_t group_size) {
  const double num_weights = static_cast<double>(num_out) * static_cast<double>(num_in);
  switch (precision) {
    case Precision::kFp32: return 4 * num_weights;
    case Precision::kFp16: return 2 * num_weights;
    case Precision::kW8A8Fp8:
    case Precision::kW8A8Int8: return num_weights + 4.0 * num_out;  // fp32 scale per output channel
    case Precision::kW4A16: {
      // GPTQ: packed 4-bit weights, then per (group, output channel) an fp16 scale and a
      // 4-bit zero point. A partial last group still has its scale.
      const int64_t num_groups = group_size > 0 ? (num_in + group_size - 1) / group_size : 1;
      return 0.5 * num_weights + static_cast<double>(num_groups) * num_out * (2.0 + 0.5);
    }
  }
  return 0;
}

double bytes_per_weight(Precision precision, int64_t group_size) {
  switch (precision) {
    case Precision::kFp32: return 4;
    case Precision::kFp16: return 2;
    case Precision::kW8A8Fp8:
    case Precision::kW8A8Int8: return 1;
    case Precision::kW4A16: return 0.5 + 2.5 / static_cast<double>(group_size > 0 ? group_size : 1 << 30);
  }
  return 0;
}

double math_peak_tflops(Precision precision, const HardwareCeilings& hardware, bool* fell_back) {
  double peak = 0;
  switch (precision) {
    case Precision::kFp32: peak = hardware.fp32_tflops; break;
    case Precision::kFp16:
    case Precision::kW4A16: peak = hardware.fp16_tflops; break;
    case Precision::kW8A8Fp8: peak = hardware.fp8_tflops; break;
    case Precision::kW8A8Int8: peak = hardware.int8_tops; break;
  }
  const bool fallback = peak <= 0;
  if (fell_back) *fell_back = fallback;
  return fallback ? hardware.fp16_tflops : peak;
}

}  // namespace crosspoint::analysis
