#include "analysis/hardware_table.h"

#include <cctype>

namespace crosspoint::analysis {

namespace {

// Dense (non-sparse) datasheet figures. Columns: name, memory GB, bandwidth GB/s,
// fp16/bf16 TFLOP/s, fp8 TFLOP/s, int8 TOP/s, fp32 TFLOP/s (non-tensor), source.
// GeForce cards (RTX 3090/4090) run fp16 and fp8 at half rate with fp32 accumulation;
// the fp32-accumulate figure is the one inference kernels get, so it is the one listed.
const std::vector<HardwareCeilings> kDatasheet = {
    {"L4", 24, 300, 121, 242, 242, 30.3, "datasheet: NVIDIA L4 (sparse figures halved)"},
    {"T4", 16, 320, 65, 0, 130, 8.1, "datasheet: NVIDIA T4 (unverified)"},
    {"A10", 24, 600, 125, 0, 250, 31.2, "datasheet: NVIDIA A10 (unverified)"},
    {"A10G", 24, 600, 70, 0, 140, 31.5, "AWS G5 documentation figures (unverified)"},
    {"A100 40GB", 40, 1555, 312, 0, 624, 19.5, "datasheet: NVIDIA A100 40GB SXM"},
    {"A100 80GB", 80, 2039, 312, 0, 624, 19.5, "datasheet: NVIDIA A100 80GB SXM"},
    {"L40S", 48, 864, 362, 733, 733, 91.6, "datasheet: NVIDIA L40S (unverified)"},
    {"H100 PCIe", 80, 2000, 756, 1513, 1513, 51, "datasheet: NVIDIA H100 PCIe"},
    {"H100 SXM", 80, 3350, 989, 1979, 1979, 67, "datasheet: NVIDIA H100 SXM5"},
    {"H200", 141, 4800, 989, 1979, 1979, 67, "datasheet: NVIDIA H200 SXM"},
    {"RTX 3090", 24, 936, 71, 0, 284, 35.6, "NVIDIA Ampere GA102 whitepaper (unverified)"},
    {"RTX 4090", 24, 1008, 165.2, 165.2, 660.6, 82.6, "NVIDIA Ada AD102 whitepaper (unverified)"},
};

// Lower case, without spaces, dashes and underscores: "H100-SXM" -> "h100sxm".
std::string normalise(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == ' ' || c == '-' || c == '_') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

struct Alias {
  const char* alias;
  const char* name;
};
constexpr Alias kAliases[] = {
    {"h100", "H100 SXM"},           {"h100sxm5", "H100 SXM"},       {"h200sxm", "H200"},  {"a100", "A100 80GB"},
    {"a10080", "A100 80GB"},        {"a10040", "A100 40GB"},        {"4090", "RTX 4090"}, {"3090", "RTX 3090"},
    {"geforcertx4090", "RTX 4090"}, {"geforcertx3090", "RTX 3090"},
};

}  // namespace

const std::vector<HardwareCeilings>& datasheet_table() { return kDatasheet; }

Result<HardwareCeilings> find_datasheet(std::string_view name) {
  std::string key = normalise(name);
  if (key.rfind("nvidia", 0) == 0) key = key.substr(6);
  for (const Alias& alias : kAliases) {
    if (key == alias.alias) key = normalise(alias.name);
  }
  std::string known;
  for (const HardwareCeilings& entry : kDatasheet) {
    if (normalise(entry.name) == key) return entry;
    known += (known.empty() ? "" : ", ") + entry.name;
  }
  return not_found("hardware '" + std::string(name) + "' is not in the datasheet table (known: " + known + ")");
}

double critical_intensity(double peak_tflops, double bandwidth_gb_s) {
  if (peak_tflops <= 0 || bandwidth_gb_s <= 0) return 0;
  return peak_tflops * 1e12 / (bandwidth_gb_s * 1e9);
}

}  // namespace crosspoint::analysis
