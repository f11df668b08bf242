#include "sweep/served_label.h"

#include <cstring>

namespace crosspoint::sweep {

namespace {

// Removes `suffix` from the end of `label` when it is there.
bool strip_suffix(std::string& label, const char* suffix) {
  const size_t n = std::strlen(suffix);
  if (label.size() <= n || label.compare(label.size() - n, n, suffix) != 0) return false;
  label.resize(label.size() - n);
  return true;
}

}  // namespace

std::string served_label(const std::string& precision, const std::string& kv_cache_dtype,
                         const std::string& prefix_caching, int tensor_parallel_size) {
  std::string label = precision;
  if (tensor_parallel_size > 1) label += kTensorParallelMarker + std::to_string(tensor_parallel_size);
  if (kv_cache_dtype == "fp8") label += kFp8KvSuffix;
  if (prefix_caching == "on") label += kPrefixCacheSuffix;
  if (prefix_caching == "off") label += kNoPrefixCacheSuffix;
  return label;
}

ServedSetup served_setup_of(const std::string& label) {
  ServedSetup setup;
  std::string rest = label;
  if (strip_suffix(rest, kPrefixCacheSuffix)) setup.prefix_caching = "on";
  else if (strip_suffix(rest, kNoPrefixCacheSuffix)) setup.prefix_caching = "off";
  if (strip_suffix(rest, kFp8KvSuffix)) setup.kv_cache_dtype = "fp8";
  const size_t marker = rest.rfind(kTensorParallelMarker);
  const size_t digits = marker == std::string::npos ? 0 : marker + std::strlen(kTensorParallelMarker);
  if (marker != std::string::npos && marker > 0 && digits < rest.size() && rest[digits] != '0' &&
      rest.find_first_not_of("0123456789", digits) == std::string::npos && rest.size() - digits <= 4) {
    setup.tensor_parallel_size = std::stoi(rest.substr(digits));
    rest.resize(marker);
  }
  setup.precision = rest;
  return setup;
}

std::string weight_precision_of(const std::string& label) { return served_setup_of(label).precision; }

std::string kv_cache_dtype_of(const std::string& label) { return served_setup_of(label).kv_cache_dtype; }

std::string prefix_caching_of(const std::string& label) { return served_setup_of(label).prefix_caching; }

int tensor_parallel_size_of(const std::string& label) { return served_setup_of(label).tensor_parallel_size; }

std::string quality_label_of(const std::string& label) {
  const ServedSetup s = served_setup_of(label);
  return served_label(s.precision, s.kv_cache_dtype);
}

std::vector<std::string> served_labels(const std::vector<std::string>& precisions,
                                       const std::vector<std::string>& kv_cache_dtypes,
                                       const std::vector<std::string>& prefix_caching,
                                       const std::vector<int>& tensor_parallel_sizes) {
  std::vector<std::string> labels;
  for (const std::string& caching : prefix_caching)
    for (const std::string& kv : kv_cache_dtypes)
      for (int tp : tensor_parallel_sizes)
        for (const std::string& p : precisions) labels.push_back(served_label(p, kv, caching, tp));
  return labels;
}

}  // namespace crosspoint::sweep
