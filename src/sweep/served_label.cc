#include "sweep/served_label.h"

#include <cstring>

namespace crosspoint::sweep {

namespace {

bool has_fp8_kv_suffix(const std::string& label) {
  const size_t n = std::strlen(kFp8KvSuffix);
  return label.size() > n && label.compare(label.size() - n, n, kFp8KvSuffix) == 0;
}

}  // namespace

std::string served_label(const std::string& precision, const std::string& kv_cache_dtype) {
  return kv_cache_dtype == "auto" ? precision : precision + kFp8KvSuffix;
}

std::string weight_precision_of(const std::string& label) {
  return has_fp8_kv_suffix(label) ? label.substr(0, label.size() - std::strlen(kFp8KvSuffix)) : label;
}

std::string kv_cache_dtype_of(const std::string& label) { return has_fp8_kv_suffix(label) ? "fp8" : "auto"; }

std::vector<std::string> served_labels(const std::vector<std::string>& precisions,
                                       const std::vector<std::string>& kv_cache_dtypes) {
  std::vector<std::string> labels;
  for (const std::string& kv : kv_cache_dtypes)
    for (const std::string& p : precisions) labels.push_back(served_label(p, kv));
  return labels;
}

}  // namespace crosspoint::sweep
