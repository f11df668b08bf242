// The KV cache's precision as `--kv-cache-dtype` names it (vLLM's values), resolved once for
// the device that serves: what its blocks store and whether K and V are quantised to e4m3.
#pragma once

#include <string>

#include "common/dtype.h"
#include "common/status.h"

namespace crosspoint {

struct KvCacheDtype {
  DType storage = DType::kF32;  // the device's own precision (cpu f32, cuda fp16) or kF8E4M3
  bool fp8() const { return storage == DType::kF8E4M3; }
  // "f32", "fp16" or "fp8_e4m3", for logs and result files.
  std::string name() const;
};

// "auto" (the device's own precision) or "fp8" / "fp8_e4m3" (e4m3 with the checkpoint's
// k/v scales, else 1.0) on device "cpu" or "cuda"; an error naming --kv-cache-dtype otherwise.
Result<KvCacheDtype> resolve_kv_dtype(const std::string& text, const std::string& device);

}  // namespace crosspoint
