#include "runner/kv_cache_dtype.h"

namespace crosspoint {

std::string KvCacheDtype::name() const {
  switch (storage) {
    case DType::kF8E4M3: return "fp8_e4m3";
    case DType::kF16: return "fp16";
    default: return "f32";
  }
}

Result<KvCacheDtype> resolve_kv_dtype(const std::string& text, const std::string& device) {
  if (device != "cpu" && device != "cuda")
    return invalid_argument("--kv-cache-dtype: unknown device '" + device + "' (cpu or cuda)");
  KvCacheDtype kv;
  if (text == "auto") kv.storage = device == "cuda" ? DType::kF16 : DType::kF32;
  else if (text == "fp8" || text == "fp8_e4m3") kv.storage = DType::kF8E4M3;
  else return invalid_argument("--kv-cache-dtype " + text + ": expected auto, fp8 or fp8_e4m3");
  return kv;
}

}  // namespace crosspoint
