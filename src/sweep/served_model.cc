#include "sweep/served_model.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

namespace crosspoint::sweep {
namespace {

// "http://127.0.0.1:8000" -> ("127.0.0.1", 8000); false when not of that form.
bool split_base_url(const std::string& base_url, std::string& host, int& port) {
  const std::string prefix = "http://";
  if (base_url.rfind(prefix, 0) != 0) return false;
  const std::string rest = base_url.substr(prefix.size());
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) return false;
  host = rest.substr(0, colon);
  try {
    port = std::stoi(rest.substr(colon + 1));
  } catch (...) { return false; }
  return port > 0 && port < 65536;
}

}  // namespace

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int http_get_status(const std::string& base_url, const std::string& path, double timeout_s) {
  std::string host;
  int port = 0;
  if (!split_base_url(base_url, host, port)) return -1;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n";
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return -1;
  }
  std::string reply;
  char buffer[512];
  pollfd pfd{fd, POLLIN, 0};
  while (reply.find("\r\n") == std::string::npos && ::poll(&pfd, 1, static_cast<int>(timeout_s * 1000)) > 0) {
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    reply.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  // "HTTP/1.1 200 OK"
  const size_t space = reply.find(' ');
  if (reply.rfind("HTTP/", 0) != 0 || space == std::string::npos) return -1;
  try {
    return std::stoi(reply.substr(space + 1, 3));
  } catch (...) { return -1; }
}

Result<ServedModel> ServedModel::start(std::vector<std::string> serve_argv, const std::string& log_path,
                                       double timeout_s) {
  serve_argv.insert(serve_argv.end(), {"--host", "127.0.0.1", "--port", "0"});
  { std::ofstream truncate(log_path, std::ios::trunc); }
  CROSSPOINT_ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::start(serve_argv, log_path));
  ServedModel served(std::move(child), log_path);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    if (!served.child_.running()) {
      return internal_error("crosspoint serve exited with code " + std::to_string(served.child_.exit_code()) +
                            " before it was ready (log " + log_path + "): " + log_tail(log_path, 4));
    }
    served.startup_ = parse_server_startup(read_text_file(log_path));
    if (!served.startup_.base_url.empty() && http_get_status(served.startup_.base_url, "/health", 2.0) == 200) {
      return served;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      served.child_.terminate(5);
      return internal_error("crosspoint serve was not healthy after " + std::to_string(static_cast<int>(timeout_s)) +
                            " s (log " + log_path + "): " + log_tail(log_path, 4));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Result<ServedModel> ServedModel::start_external(const std::vector<std::string>& argv, const std::string& base_url,
                                                const std::string& ready_path, const std::string& name,
                                                const std::string& log_path, double timeout_s) {
  { std::ofstream truncate(log_path, std::ios::trunc); }
  const auto started = std::chrono::steady_clock::now();
  CROSSPOINT_ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::start(argv, log_path));
  ServedModel served(std::move(child), log_path);
  served.name_ = name;
  served.external_ = true;
  served.startup_.base_url = base_url;
  const auto deadline = started + std::chrono::duration<double>(timeout_s);
  while (true) {
    if (!served.child_.running()) {
      return internal_error(name + " exited with code " + std::to_string(served.child_.exit_code()) +
                            " before it was ready (log " + log_path + "): " + log_tail(log_path, 4));
    }
    if (http_get_status(base_url, ready_path, 2.0) == 200) {
      // What the engine printed about its weights and KV cache (vLLM's and SGLang's lines).
      std::ifstream log(log_path, std::ios::binary);
      std::stringstream text;
      text << log.rdbuf();
      served.startup_ = parse_server_startup(text.str());
      served.startup_.base_url = base_url;
      served.startup_.startup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      return served;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      served.child_.terminate(5);
      return internal_error(name + " did not answer GET " + ready_path + " with 200 after " +
                            std::to_string(static_cast<int>(timeout_s)) + " s (log " + log_path +
                            "): " + log_tail(log_path, 4));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

Status ServedModel::stop() {
  const int code = child_.terminate(30);
  // Other servers may exit on SIGTERM with a code of their own (uvicorn, a shell): stopped is enough.
  if (code != 0 && !external_) {
    return internal_error("crosspoint serve exited with code " + std::to_string(code) + " on SIGTERM (log " +
                          log_path_ + "): " + log_tail(log_path_, 3));
  }
  return Status::ok();
}

}  // namespace crosspoint::sweep
