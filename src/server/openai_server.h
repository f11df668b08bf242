// The OpenAI-compatible HTTP front end of the engine: one event loop thread serves every
// connection through HttpServer (http_server.h: our HTTP/1.1 layer on libevent's bufferevents,
// which owns each socket and enforces the limits of a public endpoint; keep-alive, thousands of
// open SSE streams cost a socket and a small struct each, not a thread). Engine updates arrive
// from the engine thread through a locked queue and one event; the loop never waits on the
// engine. Parsing and tokenising run on a preparation thread. A request's HttpExchange stays
// valid after its client leaves (every call on it is then a no-op), so output that reaches the
// loop after a disconnect is dropped safely.
//
// Routes: POST /v1/completions, POST /v1/chat/completions, GET /v1/models, GET /health,
// GET /metrics, POST /tokenize, POST /detokenize.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "engine/engine.h"
#include "server/generation_defaults.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint {

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8000;                         // 0 = any free port (see OpenAiServer::port())
  std::string served_model_name;           // what clients put in "model"
  std::string model_root;                  // the model directory: /v1/models reports its base name only
  std::string api_key;                     // when set, every route but /health requires "Authorization: Bearer <key>"
  size_t max_body_bytes = 8u << 20;        // larger request bodies get 413 (before they are read)
  size_t max_header_bytes = 64u << 10;     // larger request heads get 431
  double header_timeout_s = 10;            // a request head must arrive within this (408)
  double body_timeout_s = 60;              // a request body must arrive within this (408)
  double idle_timeout_s = 60;              // a connection with no request in progress is closed after this
  int max_connections = 4096;              // more get 503 (one /health request each is still answered)
  double shutdown_timeout_s = 30;          // SIGTERM/SIGINT: how long requests in flight may finish (0 = none)
  GenerationDefaults generation_defaults;  // --generation-config: sampling defaults of requests that set none
  // --seed: requests without a seed get one derived from it and their arrival number; unset:
  // from the clock.
  std::optional<uint64_t> seed;
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
  // Serves until SIGINT/SIGTERM or request_shutdown(): then stops accepting (requests on open
  // connections get 503), lets what is in flight finish for up to shutdown_timeout_s, ends
  // the rest with a 503 error (streams: an error event), stops the engine and returns.
  Status run();
  // Thread-safe and async-signal-unsafe: asks run() to shut down.
  void request_shutdown();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace crosspoint
