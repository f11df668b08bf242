// `crosspoint serve --config FILE`: vLLM's YAML config file ("Server Arguments", docs.vllm.ai).
// Each top-level key is a flag's long name (dashes or underscores), each value its argument;
// the command line wins over the file, the file over the defaults. Values become arguments as
// vLLM turns them into them: true -> the bare flag, false -> nothing, a list -> the flag with
// every item, a mapping -> its JSON, anything else -> its text.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "common/status.h"

namespace crosspoint {

struct ExpandedConfig {
  std::vector<std::string> args;    // the command line with the file's flags in front of the user's
  std::string path;                 // the file read ("" without --config)
  std::set<std::string> from_file;  // the long flags ("--seed") that came from the file
};

// args: a subcommand's arguments after vLLM's short flags were spelt long (args[0] the
// subcommand). Removes --config FILE (or --config=FILE) and inserts the file's flags that the
// command line does not give itself. A missing or malformed file, a key that is not a mapping
// key, or a second --config is an error naming the file.
Result<ExpandedConfig> expand_vllm_config_file(const std::vector<std::string>& args);

}  // namespace crosspoint
