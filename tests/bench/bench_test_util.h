// Shared helpers of the bench tests: fixture paths and JSON loading.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace crosspoint::bench::testing {

inline std::string fixture_path(const std::string& name) {
  return std::string(CROSSPOINT_FIXTURES_DIR) + "/bench/" + name;
}

inline nlohmann::json load_fixture_json(const std::string& name) {
  std::ifstream in(fixture_path(name));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return nlohmann::json::parse(buffer.str());
}

}  // namespace crosspoint::bench::testing
