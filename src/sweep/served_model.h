// One `crosspoint serve` child for one precision: started on a free loopback port (--port 0,
// the address read back from its start-up log), ready once GET /health answers 200, stopped
// with SIGTERM. A server that exits or never becomes healthy is an error carrying its log tail.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "sweep/child_process.h"
#include "sweep/startup_log.h"

namespace crosspoint::sweep {

class ServedModel {
 public:
  // serve_argv: the full command line (binary, "serve", flags) without --port/--host.
  static Result<ServedModel> start(std::vector<std::string> serve_argv, const std::string& log_path, double timeout_s);
  // Another engine's server, already told its address (base_url, a port picked beforehand):
  // ready once GET `ready_path` answers 200. `name` is what errors call it.
  static Result<ServedModel> start_external(const std::vector<std::string>& argv, const std::string& base_url,
                                            const std::string& ready_path, const std::string& name,
                                            const std::string& log_path, double timeout_s);
  const ServerStartup& startup() const { return startup_; }
  const std::string& base_url() const { return startup_.base_url; }
  pid_t pid() const { return child_.pid(); }
  // SIGTERM and wait (crosspoint serve exits 0 on SIGTERM); an error if it did not.
  Status stop();

 private:
  ServedModel(ChildProcess child, std::string log_path) : child_(std::move(child)), log_path_(std::move(log_path)) {}

  std::string name_ = "crosspoint serve";
  bool external_ = false;

  ChildProcess child_;
  std::string log_path_;
  ServerStartup startup_;
};

// GET http://host:port/health over loopback; the HTTP status, or -1 when nothing answered.
int http_get_status(const std::string& base_url, const std::string& path, double timeout_s);

// The whole file, or "" when it cannot be read.
std::string read_text_file(const std::string& path);

}  // namespace crosspoint::sweep
