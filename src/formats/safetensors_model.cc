// A Hugging Face model directory: model.safetensors, or the shards that
// model.safetensors.index.json lists in its "weight_map".
#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>

#include "common/mapped_file.h"
#include "formats/safetensors.h"

namespace crosspoint {

namespace {

// A shard name from the index must be a plain file name inside the directory.
bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name != "." && name != "..";
}

}  // namespace

Result<std::unique_ptr<SafetensorsModel>> SafetensorsModel::open_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return not_found(dir + ": not a directory");

  auto model = std::make_unique<SafetensorsModel>();
  model->dir_ = dir;
  const std::string index_path = (fs::path(dir) / "model.safetensors.index.json").string();
  const std::string single_path = (fs::path(dir) / "model.safetensors").string();

  // Shard file name -> tensor names the index assigns to it (empty for a single file).
  std::map<std::string, std::vector<std::string>> shard_tensors;
  if (fs::exists(index_path, ec)) {
    CROSSPOINT_ASSIGN_OR_RETURN(std::string text, read_text_file(index_path));
    nlohmann::json index = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (index.is_discarded() || !index.is_object()) return corrupt(index_path + ": not a JSON object");
    auto map_it = index.find("weight_map");
    if (map_it == index.end() || !map_it->is_object() || map_it->empty()) {
      return corrupt(index_path + ": missing or empty \"weight_map\" object");
    }
    for (const auto& [tensor_name, shard_json] : map_it->items()) {
      if (!shard_json.is_string() || !is_plain_file_name(shard_json.get<std::string>())) {
        return corrupt(index_path + ": weight_map entry '" + tensor_name + "' is not a plain shard file name");
      }
      shard_tensors[shard_json.get<std::string>()].push_back(tensor_name);
    }
  } else if (fs::exists(single_path, ec)) {
    shard_tensors["model.safetensors"] = {};
  } else {
    return not_found(dir + ": neither model.safetensors nor model.safetensors.index.json exists");
  }

  for (const auto& [shard_name, listed] : shard_tensors) {
    const std::string shard_path = (fs::path(dir) / shard_name).string();
    CROSSPOINT_ASSIGN_OR_RETURN(SafetensorsFile shard, SafetensorsFile::open(shard_path));
    auto owned = std::make_unique<SafetensorsFile>(std::move(shard));
    for (const std::string& tensor_name : listed) {
      if (owned->find(tensor_name) == nullptr) {
        return corrupt(index_path + ": tensor '" + tensor_name + "' is mapped to " + shard_name +
                       " but that shard does not contain it");
      }
    }
    for (const auto& [tensor_name, info] : owned->tensors()) {
      auto [it, inserted] = model->index_.emplace(tensor_name, &info);
      if (!inserted) {
        return corrupt(dir + ": tensor '" + tensor_name + "' appears in both " + it->second->file + " and " +
                       shard_path);
      }
    }
    model->files_.push_back(std::move(owned));
  }
  return model;
}

const TensorInfo* SafetensorsModel::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second;
}

Result<const TensorInfo*> SafetensorsModel::require(const std::string& name) const {
  const TensorInfo* info = find(name);
  if (info == nullptr) return not_found(dir_ + ": tensor '" + name + "' is missing from the checkpoint");
  return info;
}

std::vector<std::string> SafetensorsModel::tensor_names() const {
  std::vector<std::string> names;
  names.reserve(index_.size());
  for (const auto& [name, info] : index_) names.push_back(name);
  return names;
}

size_t SafetensorsModel::total_bytes() const {
  size_t total = 0;
  for (const auto& [name, info] : index_) total += info->num_bytes;
  return total;
}

}  // namespace crosspoint
