// What a sweep serves is a weight precision with a KV cache precision and, when the sweep
// makes it an axis, prefix caching on or off: labelled "w4a16" (the device's own KV cache, the
// server's default caching), "w4a16+kv-fp8" (serve --kv-cache-dtype fp8), "w4a16+prefix-cache"
// (--enable-prefix-caching) or "w4a16+kv-fp8+no-prefix-cache" (--no-enable-prefix-caching),
// and split over ranks when the sweep makes that an axis: "fp16-tp2" (serve -tp 2).
// The label names its cells, server logs and report rows; the weights come from the
// precision's checkpoint.
#pragma once

#include <string>
#include <vector>

namespace crosspoint::sweep {

inline constexpr const char* kFp8KvSuffix = "+kv-fp8";
inline constexpr const char* kPrefixCacheSuffix = "+prefix-cache";
inline constexpr const char* kNoPrefixCacheSuffix = "+no-prefix-cache";
inline constexpr const char* kTensorParallelMarker = "-tp";  // then the rank count

// What one label serves. prefix_caching: "default" (the server decides), "on" or "off".
struct ServedSetup {
  std::string precision;
  std::string kv_cache_dtype = "auto";
  std::string prefix_caching = "default";
  int tensor_parallel_size = 1;
};

// ("w4a16", "fp8", "on") -> "w4a16+kv-fp8+prefix-cache".
std::string served_label(const std::string& precision, const std::string& kv_cache_dtype,
                         const std::string& prefix_caching = "default", int tensor_parallel_size = 1);
ServedSetup served_setup_of(const std::string& label);
// "w4a16+kv-fp8+prefix-cache" -> "w4a16".
std::string weight_precision_of(const std::string& label);
// "w4a16+kv-fp8" -> "fp8"; "w4a16" -> "auto".
std::string kv_cache_dtype_of(const std::string& label);
// "w4a16+prefix-cache" -> "on"; "+no-prefix-cache" -> "off"; else "default".
std::string prefix_caching_of(const std::string& label);
// "fp16-tp2+kv-fp8" -> 2; "fp16" -> 1.
int tensor_parallel_size_of(const std::string& label);
// The label without its prefix-caching and rank parts: quality is a property of the weights and
// the KV cache alone (a split changes the logits by fp32 rounding), so the labels that differ
// only in caching or ranks share one evaluation.
std::string quality_label_of(const std::string& label);
// Every precision with every KV dtype, caching mode and rank count, the modes outermost, then
// the dtypes, then the rank counts: {fp16, w4a16, fp16-tp2, w4a16-tp2, fp16+kv-fp8, ...}.
std::vector<std::string> served_labels(const std::vector<std::string>& precisions,
                                       const std::vector<std::string>& kv_cache_dtypes,
                                       const std::vector<std::string>& prefix_caching = {"default"},
                                       const std::vector<int>& tensor_parallel_sizes = {1});

}  // namespace crosspoint::sweep
