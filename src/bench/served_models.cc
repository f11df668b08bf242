#include "bench/served_models.h"

#include <curl/curl.h>

#include <nlohmann/json.hpp>

namespace crosspoint::bench {

namespace {

size_t append_body(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

}  // namespace

Result<ServedModel> parse_first_model(const std::string& json_text) {
  const auto answer = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (answer.is_discarded() || !answer.is_object() || !answer.contains("data") || !answer["data"].is_array())
    return invalid_argument("/v1/models: the answer is not a model list");
  if (answer["data"].empty() || !answer["data"][0].is_object() || !answer["data"][0].contains("id") ||
      !answer["data"][0]["id"].is_string())
    return invalid_argument("/v1/models: the server lists no model");
  const auto& first = answer["data"][0];
  ServedModel model;
  model.id = first["id"].get<std::string>();
  model.root = first.contains("root") && first["root"].is_string() ? first["root"].get<std::string>() : model.id;
  return model;
}

Result<ServedModel> first_served_model(const std::string& base_url, const std::vector<std::string>& headers) {
  const std::string url = base_url + "/v1/models";
  CURL* easy = curl_easy_init();
  if (easy == nullptr) return internal_error("libcurl: cannot create a handle");
  std::string body;
  curl_slist* list = nullptr;
  for (const std::string& h : headers) list = curl_slist_append(list, h.c_str());
  curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 30000L);
  const CURLcode code = curl_easy_perform(easy);
  long status = 0;
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(list);
  curl_easy_cleanup(easy);
  if (code != CURLE_OK)
    return unavailable("no --model, and " + url + " did not answer (" + curl_easy_strerror(code) +
                       "): start the server or pass --model");
  if (status != 200)
    return unavailable("no --model, and " + url + " answered HTTP " + std::to_string(status) + ": pass --model");
  auto model = parse_first_model(body);
  if (!model) return invalid_argument("no --model, and " + model.status().message() + ": pass --model");
  return model;
}

}  // namespace crosspoint::bench
