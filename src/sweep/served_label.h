// What a sweep serves is a weight precision with a KV cache precision, labelled "w4a16" (the
// device's own KV cache) or "w4a16+kv-fp8" (serve --kv-cache-dtype fp8). The label names its
// cells, server logs and report rows; the weights come from the precision's checkpoint.
#pragma once

#include <string>
#include <vector>

namespace crosspoint::sweep {

inline constexpr const char* kFp8KvSuffix = "+kv-fp8";

// "auto" -> precision; "fp8" -> precision + kFp8KvSuffix.
std::string served_label(const std::string& precision, const std::string& kv_cache_dtype);
// "w4a16+kv-fp8" -> "w4a16".
std::string weight_precision_of(const std::string& label);
// "w4a16+kv-fp8" -> "fp8"; "w4a16" -> "auto".
std::string kv_cache_dtype_of(const std::string& label);
// Every precision with every KV dtype, the dtypes' order outermost: {fp16, w4a16, fp16+kv-fp8, ...}.
std::vector<std::string> served_labels(const std::vector<std::string>& precisions,
                                       const std::vector<std::string>& kv_cache_dtypes);

}  // namespace crosspoint::sweep
