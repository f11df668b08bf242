#include "cli/vllm_config_file.h"

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include "common/mapped_file.h"

namespace crosspoint {
namespace {

// PyYAML's (YAML 1.1) booleans, which vLLM's loader sees; quoted scalars stay strings.
bool yaml11_bool(const YAML::Node& node, bool* value) {
  if (node.Tag() != "?") return false;
  static const std::set<std::string> kTrue = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
  static const std::set<std::string> kFalse = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
  const std::string& text = node.Scalar();
  if (kTrue.count(text) != 0) return *value = true, true;
  if (kFalse.count(text) != 0) return *value = false, true;
  return false;
}

nlohmann::json to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json object = nlohmann::json::object();
      for (const auto& item : node) object[item.first.as<std::string>()] = to_json(item.second);
      return object;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json array = nlohmann::json::array();
      for (const auto& item : node) array.push_back(to_json(item));
      return array;
    }
    case YAML::NodeType::Scalar: {
      bool flag = false;
      if (yaml11_bool(node, &flag)) return flag;
      if (node.Tag() == "?") {  // plain numbers as numbers
        try {
          size_t used = 0;
          const long long integer = std::stoll(node.Scalar(), &used);
          if (used == node.Scalar().size()) return integer;
          const double real = std::stod(node.Scalar(), &used);
          if (used == node.Scalar().size()) return real;
        } catch (const std::exception&) {}
      }
      return node.Scalar();
    }
    default: return nullptr;
  }
}

// "--max_num_seqs=8" -> "--max-num-seqs"; "" for what is not a long flag.
std::string long_flag_name(const std::string& arg) {
  if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) return "";
  std::string name = arg.substr(0, arg.find('='));
  for (char& c : name) c = c == '_' ? '-' : c;
  return name;
}

}  // namespace

Result<ExpandedConfig> expand_vllm_config_file(const std::vector<std::string>& args) {
  ExpandedConfig out;
  std::vector<std::string> rest;
  std::set<std::string> given;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string path;
    if (a == "--config") {
      if (i + 1 >= args.size()) return invalid_argument("--config needs a file");
      path = args[++i];
    } else if (a.rfind("--config=", 0) == 0) {
      path = a.substr(9);
    } else {
      if (i > 0) given.insert(long_flag_name(a));
      rest.push_back(a);
      continue;
    }
    if (!out.path.empty()) return invalid_argument("--config is given twice (" + out.path + " and " + path + ")");
    if (path.empty()) return invalid_argument("--config needs a file");
    out.path = path;
  }
  if (out.path.empty()) {
    out.args = args;
    return out;
  }
  Result<std::string> text = read_text_file(out.path);
  if (!text.is_ok()) return Status(text.status().code(), "--config " + text.status().message());
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) { return invalid_argument("--config " + out.path + ": not YAML: " + e.what()); }
  if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);  // an empty file sets nothing
  if (!root.IsMap()) return invalid_argument("--config " + out.path + ": the file must be a mapping of flag: value");
  std::vector<std::string> inserted;
  for (const auto& item : root) {
    if (!item.first.IsScalar()) return invalid_argument("--config " + out.path + ": a key that is not a flag's name");
    const std::string key = item.first.Scalar();
    const std::string flag = long_flag_name("--" + key);
    if (flag == "--config") return invalid_argument("--config " + out.path + ": a config file cannot name another");
    if (given.count(flag) != 0) continue;  // the command line wins
    const YAML::Node& value = item.second;
    bool switch_value = false;
    if (value.IsNull()) continue;
    if (value.IsScalar() && yaml11_bool(value, &switch_value)) {
      if (!switch_value) continue;  // vLLM leaves a false switch out
      inserted.push_back(flag);
    } else if (value.IsSequence()) {
      inserted.push_back(flag);
      for (const auto& element : value) {
        if (!element.IsScalar())
          return invalid_argument("--config " + out.path + ": " + key + ": list items must be plain values");
        inserted.push_back(element.Scalar());
      }
    } else if (value.IsMap()) {
      inserted.push_back(flag);
      inserted.push_back(to_json(value).dump());
    } else {
      inserted.push_back(flag);
      inserted.push_back(value.Scalar());
    }
    out.from_file.insert(flag);
  }
  out.args.clear();
  if (!rest.empty()) out.args.push_back(rest.front());
  out.args.insert(out.args.end(), inserted.begin(), inserted.end());
  if (rest.size() > 1) out.args.insert(out.args.end(), rest.begin() + 1, rest.end());
  return out;
}

}  // namespace crosspoint
