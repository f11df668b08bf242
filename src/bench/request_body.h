// The JSON body of one streamed request, as vLLM's openai / openai-chat request functions
// build it: always streaming with stream_options.include_usage so the server reports exact
// token counts; temperature only when given; ignore_eos only when enabled.
#pragma once

#include <optional>
#include <string>

#include "bench/sample_request.h"

namespace crosspoint::bench {

struct RequestBodyOptions {
  std::string endpoint;  // /v1/completions or /v1/chat/completions
  std::string model;
  std::optional<double> temperature;
  bool ignore_eos = false;
};

std::string build_request_body(const RequestBodyOptions& options, const SampleRequest& sample);

}  // namespace crosspoint::bench
