// Tests that read an asset the set-up script fetches (the default model, its GGUF, the Qwen
// tokenizer, the venv's Python). scripts/test.sh runs the set-up first, so a missing asset is a
// broken set-up and the test fails saying which file and why; a developer running a single
// binary without the cache can set CROSSPOINT_ASSETS_OPTIONAL=1 to skip those tests instead.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace crosspoint::testing {

inline bool assets_optional() {
  const char* value = std::getenv("CROSSPOINT_ASSETS_OPTIONAL");
  return value != nullptr && std::string(value) == "1";
}

inline std::string missing_asset_message(const std::string& path) {
  return path +
         " is missing: scripts/setup.sh fetches it into the asset cache ($CROSSPOINT_CACHE, default "
         "~/.cache/crosspoint); run it, or set CROSSPOINT_ASSETS_OPTIONAL=1 to skip the tests that need it";
}

}  // namespace crosspoint::testing

// Fails (or, with CROSSPOINT_ASSETS_OPTIONAL=1, skips) the current test when `path` is absent.
#define CROSSPOINT_REQUIRE_ASSET(path)                                                        \
  do {                                                                                        \
    const std::string crosspoint_asset_path_ = (path);                                        \
    if (!std::filesystem::exists(crosspoint_asset_path_)) {                                   \
      if (::crosspoint::testing::assets_optional())                                           \
        GTEST_SKIP() << ::crosspoint::testing::missing_asset_message(crosspoint_asset_path_); \
      FAIL() << ::crosspoint::testing::missing_asset_message(crosspoint_asset_path_);         \
    }                                                                                         \
  } while (0)
