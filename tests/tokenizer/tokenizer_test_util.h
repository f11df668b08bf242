// Shared by the tokenizer tests: fixture files, the cached real tokenizers, hex bytes.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "common/paths.h"
#include "formats/gguf.h"
#include "test_assets.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint::testing {

inline nlohmann::json load_fixture(const std::string& name) {
  const std::string path = std::string(CROSSPOINT_FIXTURES_DIR) + "/tokenizer/" + name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return nlohmann::json::parse(buffer.str());
}

inline std::string qwen_tokenizer_dir() { return cache_dir() + "/tokenizers/qwen2.5"; }
inline std::string smollm2_gguf_path() { return cache_dir() + "/gguf/SmolLM2-135M-Instruct.Q4_1.gguf"; }

inline std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// The text a fixture case encodes: "text", or raw "bytes_hex" (possibly invalid UTF-8).
inline std::string case_input(const nlohmann::json& c) {
  return c.contains("bytes_hex") ? from_hex(c["bytes_hex"].get<std::string>()) : c["text"].get<std::string>();
}

// Loaded once per test binary (parsing the 7 MB tokenizer.json is the slow part).
inline const Tokenizer* load_qwen() {
  static std::unique_ptr<Tokenizer> tokenizer = [] {
    auto result = Tokenizer::from_model_dir(qwen_tokenizer_dir());
    EXPECT_TRUE(result.is_ok()) << result.status().to_string();
    return result.is_ok() ? std::move(result).value() : nullptr;
  }();
  return tokenizer.get();
}

inline std::unique_ptr<Tokenizer> load_smollm2_from_gguf() {
  auto gguf = GgufFile::open(smollm2_gguf_path());
  EXPECT_TRUE(gguf.is_ok()) << gguf.status().to_string();
  if (!gguf.is_ok()) return nullptr;
  auto result = Tokenizer::from_gguf(*gguf);
  EXPECT_TRUE(result.is_ok()) << result.status().to_string();
  return result.is_ok() ? std::move(result).value() : nullptr;
}

}  // namespace crosspoint::testing
