#include "server/api_error.h"

#include <nlohmann/json.hpp>

namespace crosspoint {

std::string ApiError::type() const {
  switch (http_status) {
    case 400: return "BadRequestError";
    case 401: return "AuthenticationError";
    case 404: return "NotFoundError";
    case 405: return "MethodNotAllowedError";
    case 408: return "RequestTimeoutError";
    case 411: return "LengthRequiredError";
    case 417: return "ExpectationFailedError";
    case 431: return "RequestHeaderFieldsTooLargeError";
    case 413: return "RequestEntityTooLargeError";
    case 503: return "ServiceUnavailableError";
    default: return http_status >= 500 ? "InternalServerError" : "BadRequestError";
  }
}

std::string ApiError::to_json() const {
  nlohmann::json body;
  body["error"] = {{"message", message},
                   {"type", type()},
                   {"param", param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param)},
                   {"code", http_status}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace crosspoint
