// Where crosspoint keeps assets that are not in the repository: the converted default
// model, the ShareGPT file, quantised checkpoints. Nothing here downloads anything; the
// setup script fills the cache.
#pragma once

#include <string>

#include "common/status.h"

namespace crosspoint {

// $CROSSPOINT_CACHE, else $XDG_CACHE_HOME/crosspoint, else ~/.cache/crosspoint.
std::string cache_dir();

// The embedded default model (SmolLM2-135M-Instruct converted from its GGUF).
std::string default_model_dir();

// "default" or "" -> default_model_dir(), with a clear error if the setup script has not
// put it there; anything else is a directory that must exist.
Result<std::string> resolve_model_dir(const std::string& model_arg);

}  // namespace crosspoint
