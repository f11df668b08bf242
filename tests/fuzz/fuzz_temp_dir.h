// Loaders that take a path or a directory get the fuzz input as a file in one temporary
// directory per process (made on first use, removed at exit), rewritten for every input.
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

namespace crosspoint::fuzz {

inline const std::string& fuzz_temp_dir() {
  // Never destroyed: the exit handler that removes the directory runs after static destructors.
  static const std::string* dir = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "crosspoint-fuzz-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    std::atexit([] { std::filesystem::remove_all(fuzz_temp_dir()); });
    return new std::string(pattern);
  }();
  return *dir;
}

// Writes bytes to fuzz_temp_dir()/name and returns the path.
inline std::string write_fuzz_file(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = fuzz_temp_dir() + "/" + name;
  FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr || (size > 0 && std::fwrite(data, 1, size, file) != size) || std::fclose(file) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
  return path;
}

inline std::string write_fuzz_file(const std::string& name, const std::string& text) {
  return write_fuzz_file(name, reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

}  // namespace crosspoint::fuzz
