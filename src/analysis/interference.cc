#include "analysis/interference.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace crosspoint::analysis {

InterferenceVerdict classify_interference(const InterferenceRecord& r, const InterferenceThresholds& t) {
  InterferenceVerdict v;
  if (r.wall_s > 0) {
    v.other_cores = std::max(0.0, r.busy_cpu_s - r.own_cpu_s) / r.wall_s;
    v.own_cores = std::max(0.0, r.own_cpu_s) / r.wall_s;
  }
  std::string reasons;
  auto add = [&](const std::string& text) { reasons += (reasons.empty() ? "" : "; ") + text; };
  if (v.other_cores > t.max_other_cores) add(fmt::format("others used {:.2f} cores on average", v.other_cores));
  const double load = std::max(r.loadavg_start, r.loadavg_end);
  if (load >= 0 && load - v.own_cores > t.max_other_load) {
    add(fmt::format("load average {:.2f} with {:.2f} cores of its own", load, v.own_cores));
  }
  if (r.gpu_checked && r.gpu_other_processes > 0) add(fmt::format("{} other GPU processes", r.gpu_other_processes));
  if (r.gpu_checked && (r.gpu_throttle_reasons & t.throttle_mask) != 0) {
    add(fmt::format("GPU clocks throttled (reasons 0x{:x})", r.gpu_throttle_reasons & t.throttle_mask));
  }
  v.interfered = !reasons.empty();
  v.reason = reasons;
  return v;
}

nlohmann::json interference_record_to_json(const InterferenceRecord& r) {
  return {{"wall_s", r.wall_s},
          {"num_cores", r.num_cores},
          {"busy_cpu_s", r.busy_cpu_s},
          {"own_cpu_s", r.own_cpu_s},
          {"loadavg_start", r.loadavg_start},
          {"loadavg_end", r.loadavg_end},
          {"gpu_checked", r.gpu_checked},
          {"gpu_other_processes", r.gpu_other_processes},
          {"gpu_throttle_reasons", r.gpu_throttle_reasons}};
}

Result<InterferenceRecord> interference_record_from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) return invalid_argument(source + ": 'machine' must be an object");
  InterferenceRecord r;
  struct Field {
    const char* key;
    double* out;
  };
  const Field fields[] = {
      {"wall_s", &r.wall_s},       {"num_cores", &r.num_cores},         {"busy_cpu_s", &r.busy_cpu_s},
      {"own_cpu_s", &r.own_cpu_s}, {"loadavg_start", &r.loadavg_start}, {"loadavg_end", &r.loadavg_end}};
  for (const Field& f : fields) {
    auto it = j.find(f.key);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_number()) return invalid_argument(source + ": key 'machine." + f.key + "' must be a number");
    *f.out = it->get<double>();
  }
  if (auto it = j.find("gpu_checked"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) return invalid_argument(source + ": key 'machine.gpu_checked' must be true or false");
    r.gpu_checked = it->get<bool>();
  }
  if (auto it = j.find("gpu_other_processes"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer())
      return invalid_argument(source + ": key 'machine.gpu_other_processes' must be an integer");
    r.gpu_other_processes = it->get<int>();
  }
  if (auto it = j.find("gpu_throttle_reasons"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer())
      return invalid_argument(source + ": key 'machine.gpu_throttle_reasons' must be an integer");
    r.gpu_throttle_reasons = it->get<uint64_t>();
  }
  return r;
}

}  // namespace crosspoint::analysis
