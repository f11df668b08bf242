// An error as the OpenAI API reports it: an HTTP status and
// {"error":{"message":..,"type":..,"param":..,"code":<status>}}.
#pragma once

#include <string>

namespace crosspoint {

struct ApiError {
  int http_status = 400;
  std::string message;
  std::string param;  // the offending request field; empty = null

  // "BadRequestError", "AuthenticationError", "NotFoundError", ... from http_status.
  std::string type() const;
  std::string to_json() const;
};

inline ApiError bad_request(std::string message, std::string param = {}) {
  return {400, std::move(message), std::move(param)};
}

}  // namespace crosspoint
