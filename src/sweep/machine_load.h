// Samples of what the machine was doing around one bench run, for the busy-machine guard
// (analysis/interference.h classifies them): /proc/loadavg, the non-idle CPU time of the cores
// this process may run on (/proc/stat), the sweep's own CPU time, its reaped children's (the
// bench client) and the server's (/proc/<pid>/stat), and, where nvidia-smi exists, the GPU's
// compute processes and clock-throttle reasons. Everything is best effort: a figure that
// cannot be read stays at its "unknown" value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include "analysis/interference.h"

namespace crosspoint::sweep {

struct MachineSample {
  double wall_s = 0;          // monotonic clock
  double loadavg1 = -1;       // /proc/loadavg first field; -1 unknown
  double busy_cpu_s = -1;     // non-idle time of the allowed cores; -1 unknown
  double self_cpu_s = 0;      // this process (utime + stime)
  double children_cpu_s = 0;  // reaped children (getrusage RUSAGE_CHILDREN)
  double server_cpu_s = 0;    // the server child's utime + stime (0 when unreadable)
  int num_cores = 0;          // the affinity mask's size
  bool gpu_checked = false;
  int gpu_other_processes = 0;
  uint64_t gpu_throttle_reasons = 0;
};

// Takes a sample now; server_pid < 0 skips the server, gpu false skips nvidia-smi.
MachineSample sample_machine(pid_t server_pid, bool gpu);

// The record of a run from its start and end samples (pure).
analysis::InterferenceRecord interference_between(const MachineSample& start, const MachineSample& end);

// Parsers of the /proc files, exposed for tests: the non-idle seconds of the given CPUs from
// /proc/stat's text (user + nice + system + irq + softirq + steal, in USER_HZ ticks); utime +
// stime of a /proc/<pid>/stat line in seconds; the first field of /proc/loadavg.
std::optional<double> busy_seconds_from_proc_stat(const std::string& text, const std::vector<int>& cpus,
                                                  double ticks_per_second);
std::optional<double> cpu_seconds_from_pid_stat(const std::string& text, double ticks_per_second);
std::optional<double> loadavg_from_text(const std::string& text);

// nvidia-smi's csv answers: the compute processes' pids other than `own_pid`, and the throttle
// reasons bit mask ("0x0000000000000004"), OR-ed over GPUs.
int other_gpu_processes(const std::string& compute_apps_csv, pid_t own_pid);
uint64_t throttle_reasons_from_csv(const std::string& csv);

}  // namespace crosspoint::sweep
