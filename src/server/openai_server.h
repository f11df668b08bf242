// The OpenAI-compatible HTTP front end of the engine, on libevent's evhttp: one event loop
// thread serves every connection (keep-alive HTTP/1.1, thousands of open SSE streams cost
// a socket and a small struct each, not a thread). Engine updates arrive from the engine
// thread through a locked queue and one event; the loop never waits on the engine.
//
// Routes: POST /v1/completions, POST /v1/chat/completions, GET /v1/models, GET /health,
// GET /metrics, POST /tokenize, POST /detokenize.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "engine/engine.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint {

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8000;                   // 0 = any free port (see OpenAiServer::port())
  std::string served_model_name;     // what clients put in "model"
  std::string model_root;            // the model directory, reported by /v1/models
  std::string api_key;               // when set, /v1/* requires "Authorization: Bearer <key>"
  size_t max_body_bytes = 8u << 20;  // larger request bodies get 413
};

class OpenAiServer {
 public:
  OpenAiServer(const ServerConfig& config, Engine& engine, const Tokenizer& tokenizer, ChatTemplate chat_template);
  ~OpenAiServer();
  OpenAiServer(const OpenAiServer&) = delete;
  OpenAiServer& operator=(const OpenAiServer&) = delete;

  // Binds the listening socket (io_error naming host:port when it cannot).
  Status bind();
  // The bound port (useful with port 0).
  int port() const;
  // Serves until SIGINT/SIGTERM or request_shutdown(): then stops accepting, aborts what is
  // in flight (streams get their final chunk and [DONE]), stops the engine and returns.
  Status run();
  // Thread-safe and async-signal-unsafe: asks run() to shut down.
  void request_shutdown();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace crosspoint
