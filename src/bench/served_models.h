// What vLLM's bench does without --model: ask the server's /v1/models and take the first entry
// (its "id" is the name requests carry, its "root", when present, the model id the result
// stores).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace crosspoint::bench {

struct ServedModel {
  std::string id;    // data[0].id: the "model" field of the requests
  std::string root;  // data[0].root, else the id: the result's model_id
};

// Parses a /v1/models answer.
Result<ServedModel> parse_first_model(const std::string& json_text);

// GET base_url/v1/models with these "Name: value" headers, then parse_first_model. An
// unreachable server or an empty list is an error saying to pass --model.
Result<ServedModel> first_served_model(const std::string& base_url, const std::vector<std::string>& headers);

}  // namespace crosspoint::bench
