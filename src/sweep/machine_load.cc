#include "sweep/machine_load.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace crosspoint::sweep {

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int i = 0; i < CPU_SETSIZE; ++i) {
    if (CPU_ISSET(i, &set)) cpus.push_back(i);
  }
  return cpus;
}

double timeval_s(const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; }

bool have_nvidia_smi() {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && access((dir + "/nvidia-smi").c_str(), X_OK) == 0) return true;
  }
  return false;
}

// stdout of a shell command, or nullopt when it fails.
std::optional<std::string> command_output(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string out;
  char buffer[512];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) out.append(buffer, n);
  const int status = pclose(pipe);
  if (status != 0) return std::nullopt;
  return out;
}

}  // namespace

std::optional<double> busy_seconds_from_proc_stat(const std::string& text, const std::vector<int>& cpus,
                                                  double ticks_per_second) {
  std::istringstream lines(text);
  std::string line;
  double busy_ticks = 0;
  int found = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || !std::isdigit(static_cast<unsigned char>(line[3]))) continue;
    std::istringstream fields(line);
    std::string name;
    fields >> name;
    const int cpu = std::atoi(name.c_str() + 3);
    if (std::find(cpus.begin(), cpus.end(), cpu) == cpus.end()) continue;
    // user nice system idle iowait irq softirq steal (guest time is already inside user).
    double v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (double& value : v) fields >> value;
    busy_ticks += v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    ++found;
  }
  if (found == 0 || ticks_per_second <= 0) return std::nullopt;
  return busy_ticks / ticks_per_second;
}

std::optional<double> cpu_seconds_from_pid_stat(const std::string& text, double ticks_per_second) {
  // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
  const size_t close = text.rfind(')');
  if (close == std::string::npos || ticks_per_second <= 0) return std::nullopt;
  std::istringstream fields(text.substr(close + 1));
  std::string field;
  // After ')': state(3) ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime(14) stime(15).
  double utime = 0, stime = 0;
  for (int index = 3; index <= 15 && fields >> field; ++index) {
    if (index == 14) utime = std::atof(field.c_str());
    if (index == 15) {
      stime = std::atof(field.c_str());
      return (utime + stime) / ticks_per_second;
    }
  }
  return std::nullopt;
}

std::optional<double> loadavg_from_text(const std::string& text) {
  std::istringstream fields(text);
  double value = 0;
  if (!(fields >> value)) return std::nullopt;
  return value;
}

int other_gpu_processes(const std::string& csv, pid_t own_pid) {
  std::istringstream lines(csv);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos) continue;
    const long pid = std::atol(line.c_str() + start);
    if (pid > 0 && pid != own_pid) ++count;
  }
  return count;
}

uint64_t throttle_reasons_from_csv(const std::string& csv) {
  std::istringstream lines(csv);
  std::string line;
  uint64_t mask = 0;
  while (std::getline(lines, line)) {
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos) continue;
    mask |= std::strtoull(line.c_str() + start, nullptr, 0);
  }
  return mask;
}

MachineSample sample_machine(pid_t server_pid, bool gpu) {
  MachineSample s;
  s.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  if (auto load = loadavg_from_text(read_file("/proc/loadavg"))) s.loadavg1 = *load;
  const std::vector<int> cpus = allowed_cpus();
  s.num_cores = static_cast<int>(cpus.size());
  if (auto busy = busy_seconds_from_proc_stat(read_file("/proc/stat"), cpus, ticks)) s.busy_cpu_s = *busy;
  rusage self{}, children{};
  if (getrusage(RUSAGE_SELF, &self) == 0) s.self_cpu_s = timeval_s(self.ru_utime) + timeval_s(self.ru_stime);
  if (getrusage(RUSAGE_CHILDREN, &children) == 0)
    s.children_cpu_s = timeval_s(children.ru_utime) + timeval_s(children.ru_stime);
  if (server_pid > 0) {
    if (auto server = cpu_seconds_from_pid_stat(read_file("/proc/" + std::to_string(server_pid) + "/stat"), ticks))
      s.server_cpu_s = *server;
  }
  if (gpu && have_nvidia_smi()) {
    auto apps = command_output("nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null");
    // Newer drivers call the field clocks_event_reasons; older ones clocks_throttle_reasons.
    auto reasons = command_output(
        "nvidia-smi --query-gpu=clocks_throttle_reasons.active --format=csv,noheader "
        "2>/dev/null || nvidia-smi --query-gpu=clocks_event_reasons.active "
        "--format=csv,noheader 2>/dev/null");
    if (apps) {
      s.gpu_checked = true;
      s.gpu_other_processes = other_gpu_processes(*apps, server_pid);
      if (reasons) s.gpu_throttle_reasons = throttle_reasons_from_csv(*reasons);
    }
  }
  return s;
}

analysis::InterferenceRecord interference_between(const MachineSample& start, const MachineSample& end) {
  analysis::InterferenceRecord r;
  r.wall_s = std::max(0.0, end.wall_s - start.wall_s);
  r.num_cores = end.num_cores;
  r.own_cpu_s = std::max(0.0, (end.self_cpu_s - start.self_cpu_s) + (end.children_cpu_s - start.children_cpu_s) +
                                  (end.server_cpu_s - start.server_cpu_s));
  // Unknown busy time: count everything as the run's own, so the guard does not fire on a
  // machine it cannot see.
  r.busy_cpu_s =
      start.busy_cpu_s >= 0 && end.busy_cpu_s >= 0 ? std::max(0.0, end.busy_cpu_s - start.busy_cpu_s) : r.own_cpu_s;
  r.loadavg_start = start.loadavg1;
  r.loadavg_end = end.loadavg1;
  r.gpu_checked = start.gpu_checked && end.gpu_checked;
  r.gpu_other_processes = std::max(start.gpu_other_processes, end.gpu_other_processes);
  r.gpu_throttle_reasons = start.gpu_throttle_reasons | end.gpu_throttle_reasons;
  return r;
}

}  // namespace crosspoint::sweep
