// The busy-machine guard: what else used the machine while a cell was measured, and whether
// that is enough to distrust the cell. The sweep records the raw figures (load average, CPU
// time of everything on the cores it runs on vs its own processes', the GPU's other processes
// and clock-throttle reasons); the classification here is a pure function of them, so the
// report and the re-run decision apply the same documented thresholds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"

namespace crosspoint::analysis {

// What one bench run of a cell shared the machine with.
struct InterferenceRecord {
  double wall_s = 0;                  // the run's wall-clock time
  double num_cores = 0;               // cores the sweep may run on (its affinity mask)
  double busy_cpu_s = 0;              // CPU time spent on those cores by anything (/proc/stat, non-idle)
  double own_cpu_s = 0;               // of which the bench client, the server and the sweep itself
  double loadavg_start = -1;          // /proc/loadavg 1-minute figure at the start (-1: unknown)
  double loadavg_end = -1;            // ... and at the end
  bool gpu_checked = false;           // nvidia-smi answered
  int gpu_other_processes = 0;        // compute processes on the GPU other than the server
  uint64_t gpu_throttle_reasons = 0;  // nvidia-smi clocks_throttle_reasons.active bit mask (OR of both samples)
};

// Thresholds (docs/sweep.md, "Busy-machine guard").
struct InterferenceThresholds {
  // Others' CPU time averaged over the run, in cores: above this the cell is marked.
  double max_other_cores = 0.25;
  // The 1-minute load average (at start or end) minus the cores the run itself kept busy:
  // above this many runnable tasks of others the cell is marked.
  double max_other_load = 1.0;
  // Throttle reasons that mark a cell: HW slowdown 0x8, SW thermal 0x20, HW thermal 0x40,
  // HW power brake 0x80 (not idle 0x1, application clocks 0x2 or the software power cap 0x4).
  uint64_t throttle_mask = 0x8 | 0x20 | 0x40 | 0x80;
};

struct InterferenceVerdict {
  bool interfered = false;
  double other_cores = 0;  // others' average CPU use over the run, in cores
  double own_cores = 0;    // the run's own average CPU use, in cores
  std::string reason;      // "others used 0.61 cores on average", ...; empty when clean
};

InterferenceVerdict classify_interference(const InterferenceRecord& record,
                                          const InterferenceThresholds& thresholds = {});

nlohmann::json interference_record_to_json(const InterferenceRecord& record);
// Missing keys keep their defaults; a known key with a wrong type is an error naming it.
Result<InterferenceRecord> interference_record_from_json(const nlohmann::json& j, const std::string& source);

}  // namespace crosspoint::analysis
