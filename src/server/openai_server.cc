#include "server/openai_server.h"

#include <event2/event.h>
#include <event2/thread.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <ctime>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <limits>
#include <mutex>
#include <set>
#include <span>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/log.h"
#include "server/api_error.h"
#include "server/http_exchange.h"
#include "server/http_request_head.h"
#include "server/http_server.h"
#include "server/http_response_counts.h"
#include "server/input_processor.h"
#include "server/logprobs_json.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/output_processor.h"
#include "server/prometheus_metrics.h"
#include "server/prompt_logprobs_json.h"
#include "server/stop_string_matcher.h"

namespace crosspoint {

namespace {

int64_t unix_now_s() { return static_cast<int64_t>(std::time(nullptr)); }

struct Stream {
  OpenAiServer::Impl* server = nullptr;
  std::shared_ptr<HttpExchange> exchange;  // null once answered or once the client went away
  Route route = Route::kCompletions;
  bool reply_started = false;  // a stream's 200 and headers are out
  bool roles_sent = false;     // chat: the role chunks are out (with the first output)
  bool streaming = false;
  bool include_usage = false;
  bool done = false;  // final response or [DONE] sent (or client gone)
  ResponseHeader header;
  int64_t prompt_tokens = 0;
  int32_t num_logprobs = -1;
  std::vector<Choice> choices;  // [n]; empty until the request is prepared
  int32_t num_finished_choices = 0;

  // Usage of the whole request: the prompt once, the completion tokens of every choice.
  TokenUsage usage() const {
    TokenUsage u{prompt_tokens, 0};
    for (const Choice& c : choices) u.completion_tokens += c.completion_tokens;
    return u;
  }
};

struct QueuedOutput {
  std::shared_ptr<Stream> stream;
  int32_t choice = 0;
  RequestOutput output;
};

struct PrepareJob {
  std::shared_ptr<Stream> stream;
  std::string body;
  PreparedRequest result;
};

}  // namespace

struct OpenAiServer::Impl {
  ServerConfig config;
  Engine& engine;
  const Tokenizer& tokenizer;
  InputProcessor input;  // request bodies -> engine requests, on the preparation thread
  int64_t started_unix_s = unix_now_s();

  event_base* base = nullptr;
  std::unique_ptr<HttpServer> http;  // the listener and every connection
  event* notify_event = nullptr;     // woken by the engine thread
  event* shutdown_event = nullptr;   // woken by request_shutdown()
  event* timeout_timer = nullptr;    // the HTTP layer's timeouts
  event* sigint_event = nullptr;
  event* sigterm_event = nullptr;
  event* prepared_event = nullptr;  // woken by the preparation thread
  event* drain_timer = nullptr;     // --shutdown-timeout
  bool bound = false;               // the listener is open (bind())
  bool shutting_down = false;
  bool shutdown_finished = false;
  double shutdown_started_s = 0;
  HttpResponseCounts response_counts;  // every response sent, for /metrics (loop thread)

  // Parsing, chat templating and tokenising run on this thread, off the event loop, so a
  // large /tokenize never stalls /health or the streams.
  std::thread prepare_thread;
  std::mutex prepare_mutex;
  std::condition_variable prepare_wake;
  std::deque<std::unique_ptr<PrepareJob>> prepare_queue;  // loop -> preparation thread
  std::deque<std::unique_ptr<PrepareJob>> prepared;       // preparation thread -> loop
  bool prepare_stop = false;

  std::mutex queue_mutex;
  std::deque<QueuedOutput> queue;  // engine thread -> loop thread

  // Streams with an open client, keyed by address (for the connection close callback).
  std::unordered_map<Stream*, std::shared_ptr<Stream>> live;
  // Request fields no table defines, logged once each (at most this many names, so hostile
  // clients cannot grow it).
  static constexpr size_t kMaxLoggedUnknownFields = 256;
  std::set<std::string> logged_unknown_fields;

  Impl(const ServerConfig& c, Engine& e, const Tokenizer& t, ChatTemplate ct)
      : config(c),
        engine(e),
        tokenizer(t),
        input({c.served_model_name, e.config().scheduler.max_model_len, e.config().vocab_size, c.generation_defaults,
               c.seed},
              t, std::move(ct)) {}

  // ---- replies (the HTTP layer counts each response for /metrics) -----------------------------
  static void send_json(HttpExchange& exchange, int status, const std::string& body) {
    exchange.respond(status, body, "application/json");
  }
  static void send_error(HttpExchange& exchange, const ApiError& error) {
    send_json(exchange, error.http_status, error.to_json());
  }
  static void send_event(HttpExchange& exchange, const std::string& payload) {
    exchange.send_chunk("data: " + payload + "\n\n");
  }

  // ---- request dispatch ------------------------------------------------------------------
  void handle(const std::shared_ptr<HttpExchange>& exchange) {
    HttpExchange& req = *exchange;
    const std::string& path = req.request().path;
    const std::string& method = req.request().method;
    if (shutting_down) return send_error(req, {503, "the server is shutting down", ""});
    if (path == "/health") return req.respond(engine.is_running() ? 200 : 503, "");
    // With --api-key every route but /health needs the key (check_request_head checked it
    // before the body was read; this is the same check for requests that reach here by another way).
    if (!config.api_key.empty()) {
      const std::optional<std::string_view> auth = req.request().header("Authorization");
      if (!auth || !bearer_matches(*auth, config.api_key)) {
        return send_error(req, {401, "invalid or missing API key", ""});
      }
    }
    if (path == "/metrics") {
      return req.respond(
          200, prometheus_text(engine.metrics(), config.served_model_name) + response_counts.prometheus_text(),
          "text/plain; version=0.0.4; charset=utf-8");
    }
    const std::optional<Route> route = post_route(path);
    const bool known_post = route.has_value();
    const bool known_get = path == "/v1/models";
    if (!known_post && !known_get) return send_error(req, {404, "route " + path + " not found", ""});
    if (known_get) {
      if (method != "GET") return send_error(req, {405, "use GET for " + path, ""});
      return send_json(req, 200,
                       models_json(config.served_model_name, model_root_name(), engine.config().scheduler.max_model_len,
                                   started_unix_s));
    }
    if (method != "POST") return send_error(req, {405, "use POST for " + path, ""});
    const size_t length = req.request().body.size();
    if (length > config.max_body_bytes) {
      return send_error(req, {413,
                              "the request body has " + std::to_string(length) + " bytes; the limit is " +
                                  std::to_string(config.max_body_bytes),
                              ""});
    }
    auto job = std::make_unique<PrepareJob>();
    job->body = req.take_body();
    auto stream = std::make_shared<Stream>();
    stream->server = this;
    stream->exchange = exchange;
    stream->route = *route;
    live[stream.get()] = stream;
    Stream* raw = stream.get();
    exchange->on_disconnect([this, raw] { on_close(raw); });
    job->stream = std::move(stream);
    {
      std::lock_guard<std::mutex> lock(prepare_mutex);
      prepare_queue.push_back(std::move(job));
    }
    prepare_wake.notify_one();
  }

  // /v1/models names the model by its directory's base name, never by an absolute path.
  std::string model_root_name() const {
    std::filesystem::path root(config.model_root);
    if (!root.has_filename()) root = root.parent_path();
    const std::string name = root.filename().string();
    return name.empty() ? config.served_model_name : name;
  }

  // ---- preparation thread -----------------------------------------------------------------------
  void prepare_loop() {
    while (true) {
      std::unique_ptr<PrepareJob> job;
      {
        std::unique_lock<std::mutex> lock(prepare_mutex);
        prepare_wake.wait(lock, [this] { return prepare_stop || !prepare_queue.empty(); });
        if (prepare_stop) return;
        job = std::move(prepare_queue.front());
        prepare_queue.pop_front();
      }
      job->result = input.prepare(job->stream->route, job->body);
      job->body.clear();
      {
        std::lock_guard<std::mutex> lock(prepare_mutex);
        prepared.push_back(std::move(job));
      }
      event_active(prepared_event, 0, 0);
    }
  }

  static void on_prepared(evutil_socket_t, short, void* arg) { static_cast<Impl*>(arg)->take_prepared(); }

  void take_prepared() {
    std::deque<std::unique_ptr<PrepareJob>> jobs;
    {
      std::lock_guard<std::mutex> lock(prepare_mutex);
      jobs.swap(prepared);
    }
    for (auto& job : jobs) finish_preparation(job->stream, job->result);
    maybe_finish_shutdown();
  }

  // Back on the loop: answer, or hand the request to the engine.
  void finish_preparation(const std::shared_ptr<Stream>& stream, PreparedRequest& p) {
    if (stream->exchange == nullptr || stream->done) return;  // the client left, or shutdown ended it
    const std::shared_ptr<HttpExchange> exchange = stream->exchange;
    HttpExchange& req = *exchange;
    if (p.error || stream->route == Route::kTokenize || stream->route == Route::kDetokenize) {
      stream->done = true;
      release(*stream);
      stream->exchange = nullptr;
      if (p.error) return send_error(req, *p.error);
      return send_json(req, 200, p.reply);
    }
    const ApiEndpoint endpoint =
        stream->route == Route::kCompletions ? ApiEndpoint::kCompletions : ApiEndpoint::kChatCompletions;
    const OpenAiRequest& request = p.request;
    for (const std::string& name : request.unknown_fields) {
      if (logged_unknown_fields.size() >= kMaxLoggedUnknownFields || !logged_unknown_fields.insert(name).second)
        continue;
      log_warning(
          "ignoring the request field '{}', which neither the OpenAI API nor vLLM defines{}", name.substr(0, 64),
          logged_unknown_fields.size() == kMaxLoggedUnknownFields ? " (further unknown fields are not logged)" : "");
    }
    stream->streaming = request.stream;
    stream->include_usage = request.include_usage;
    stream->header = {make_response_id(endpoint), unix_now_s(), config.served_model_name, endpoint};
    stream->prompt_tokens = static_cast<int64_t>(p.engine_request.prompt_token_ids.size());
    stream->num_logprobs = request.sampling.num_logprobs;
    stream->choices.resize(static_cast<size_t>(request.n));
    for (int32_t i = 0; i < request.n; ++i) {
      Choice& choice = stream->choices[i];
      choice.index = i;
      choice.decoder = std::make_unique<IncrementalDecoder>(tokenizer, request.skip_special_tokens);
      choice.stop = std::make_unique<StopStringMatcher>(request.stop, request.include_stop_str_in_output);
      choice.echo = request.echo;
      choice.echo_only = request.echo && request.max_tokens && *request.max_tokens == 0;
      choice.echo_text = p.echo_text;
      choice.first_prompt_token = p.engine_request.prompt_token_ids.front();
      choice.num_prompt_logprobs = request.sampling.num_prompt_logprobs;
      choice.report_prompt_logprobs = request.sampling.num_prompt_logprobs >= 0 && !request.stream;
    }

    // A request that can never run is the client's (400), named by its field; worded once here.
    if (auto refusal = engine.validate(p.engine_request)) {
      const bool chat = endpoint == ApiEndpoint::kChatCompletions;
      const char* param = "max_tokens";
      switch (refusal->field) {
        case RefusedField::kPrompt: param = chat ? "messages" : "prompt"; break;
        case RefusedField::kMaxTokens: param = "max_tokens"; break;
        case RefusedField::kLogprobs: param = chat ? "top_logprobs" : "logprobs"; break;
        case RefusedField::kPromptLogprobs: param = "prompt_logprobs"; break;
      }
      stream->done = true;
      release(*stream);
      stream->exchange = nullptr;
      return send_error(req, {400, refusal->status.message(), param});
    }
    // Each choice is its own engine sequence, drawn with the seed choice_seed(seed, i).
    for (int32_t i = 0; i < request.n; ++i) {
      EngineRequest engine_request = p.engine_request;
      engine_request.sampling.seed = choice_seed(p.engine_request.sampling.seed, i);
      std::shared_ptr<Stream> captured = stream;
      auto submitted = engine.submit(std::move(engine_request), [this, captured, i](const RequestOutput& out) {
        {
          std::lock_guard<std::mutex> lock(queue_mutex);
          queue.push_back({captured, i, out});
        }
        event_active(notify_event, 0, 0);
      });
      if (!submitted.is_ok()) {
        const Status& s = submitted.status();
        // validate() passed above, so this is the server's state: busy or stopping (503).
        abort_choices(*stream);  // the choices already submitted
        stream->done = true;
        release(*stream);
        stream->exchange = nullptr;
        const bool busy = s.code() == StatusCode::kUnavailable;
        return send_error(req, {busy ? 503 : 500, s.message(), ""});
      }
      stream->choices[i].engine_id = submitted.value();
    }
    if (stream->streaming) {
      req.start_stream(200, {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}});
      stream->reply_started = true;
    }
  }

  // Ends every choice of a request that the engine still runs (finished ones are ignored by it).
  void abort_choices(const Stream& stream, FinishReason reason = FinishReason::kAbort) {
    for (const Choice& choice : stream.choices) {
      if (choice.engine_id >= 0) engine.abort(choice.engine_id, reason);
    }
  }

  // ---- client went away ---------------------------------------------------------------------
  // The HTTP layer reads each socket while its request runs: a client that leaves (mid-stream,
  // or while its non-streaming request runs) is seen at once, and its choices are aborted.
  void on_close(Stream* raw) {
    auto it = live.find(raw);
    if (it == live.end()) return;
    std::shared_ptr<Stream> stream = it->second;
    live.erase(it);
    stream->exchange = nullptr;
    stream->done = true;
    abort_choices(*stream);
    log_debug("client of request {} disconnected: aborted", stream->header.id);
    maybe_finish_shutdown();
  }

  static void on_timeout_timer(evutil_socket_t, short, void* arg) { static_cast<Impl*>(arg)->http->check_timeouts(); }

  // Detach a stream from its connection before its last reply is sent.
  void release(Stream& stream) {
    if (stream.exchange != nullptr) stream.exchange->on_disconnect(nullptr);
    live.erase(&stream);
  }

  // ---- engine updates -------------------------------------------------------------------------
  static void on_notify(evutil_socket_t, short, void* arg) { static_cast<Impl*>(arg)->drain_queue(); }

  void drain_queue() {
    std::deque<QueuedOutput> batch;
    {
      std::lock_guard<std::mutex> lock(queue_mutex);
      batch.swap(queue);
    }
    for (QueuedOutput& q : batch) apply_output(*q.stream, q.stream->choices[q.choice], q.output);
    if (!shutdown_finished) maybe_finish_shutdown();
  }

  // The "logprobs" value of a response or chunk carrying `tokens`; null when not asked for.
  nlohmann::json logprobs_json(const Stream& stream, std::span<const TokenLogprobs> tokens,
                               int64_t initial_text_offset) const {
    if (stream.num_logprobs < 0) return nullptr;
    if (stream.header.endpoint == ApiEndpoint::kChatCompletions) return chat_logprobs_json(tokenizer, tokens);
    return completion_logprobs_json(tokenizer, tokens, initial_text_offset);
  }

  void apply_output(Stream& stream, Choice& choice, const RequestOutput& out) {
    if (stream.done || choice.finished) return;  // after a stop string, or after the client left
    ChoiceDelta d = process_output(choice, out, stream.num_logprobs);
    if (d.stop_string_matched) engine.abort(choice.engine_id, FinishReason::kStop);  // nothing more is wanted
    if (d.error && stream.exchange != nullptr) {
      abort_choices(stream);
      return finish_with_error(stream, *d.error);
    }
    if (d.finished) ++stream.num_finished_choices;
    const bool all_finished = stream.num_finished_choices == static_cast<int32_t>(stream.choices.size());
    if (stream.exchange == nullptr) return;
    const std::shared_ptr<HttpExchange> exchange = stream.exchange;
    HttpExchange& req = *exchange;
    if (stream.streaming) {
      const nlohmann::json logprobs = logprobs_json(stream, d.logprobs, choice.emitted_chars);
      if (stream.num_logprobs >= 0) choice.emitted_chars += utf8_length(d.text);
      // Chat: one role chunk per choice, with the request's first output (after the prefill), as
      // vLLM sends them: clients that time the first chunk (vLLM's benchmark) measure TTFT.
      if (!stream.roles_sent && stream.header.endpoint == ApiEndpoint::kChatCompletions) {
        for (const Choice& c : stream.choices) send_event(req, chat_role_chunk_json(stream.header, c.index));
        stream.roles_sent = true;
      }
      if (!d.text.empty() && !d.finished)
        send_event(req, chunk_json(stream.header, choice.index, d.text, nullptr, logprobs));
      if (d.finished) send_event(req, chunk_json(stream.header, choice.index, d.text, &choice.end, logprobs));
      if (all_finished) {
        if (stream.include_usage) send_event(req, usage_chunk_json(stream.header, stream.usage()));
        send_event(req, "[DONE]");
        stream.done = true;
        release(stream);
        stream.exchange = nullptr;
        req.end_stream();
      }
      return;
    }
    choice.text += d.text;
    for (TokenLogprobs& lp : d.logprobs) choice.logprobs.push_back(std::move(lp));
    if (all_finished) {
      stream.done = true;
      release(stream);
      stream.exchange = nullptr;
      std::vector<ChoiceResult> results;
      for (const Choice& c : stream.choices) {
        const nlohmann::json prompt_logprobs =
            c.report_prompt_logprobs ? prompt_logprobs_json(tokenizer, c.prompt_logprobs, c.num_prompt_logprobs)
                                     : nlohmann::json();
        results.push_back(
            {c.text, c.end, logprobs_json(stream, c.logprobs, /*initial_text_offset=*/0), prompt_logprobs});
      }
      send_json(req, 200, full_response_json(stream.header, results, stream.usage()));
    }
  }

  // Ends a request with an error: a stream already under way gets it as an event (then
  // [DONE]); any other request gets it as the HTTP response.
  void finish_with_error(Stream& stream, const ApiError& error) {
    stream.done = true;
    const std::shared_ptr<HttpExchange> exchange = stream.exchange;
    release(stream);
    stream.exchange = nullptr;
    if (exchange == nullptr) return;
    if (stream.reply_started) {
      send_event(*exchange, error.to_json());
      send_event(*exchange, "[DONE]");
      exchange->end_stream();
    } else {
      send_error(*exchange, error);
    }
  }

  // ---- shutdown -------------------------------------------------------------------------------
  // SIGINT/SIGTERM: stop accepting (the listener closes; requests on open connections get
  // 503), let the requests in flight finish for up to --shutdown-timeout seconds, end the
  // rest with a 503 error, stop the engine and leave the loop.
  static void on_signal(evutil_socket_t signal_number, short, void* arg) {
    log_info("received signal {}: shutting down", static_cast<int>(signal_number));
    static_cast<Impl*>(arg)->begin_shutdown();
  }
  static void on_shutdown_request(evutil_socket_t, short, void* arg) { static_cast<Impl*>(arg)->begin_shutdown(); }
  static void on_drain_timeout(evutil_socket_t, short, void* arg) { static_cast<Impl*>(arg)->end_remaining(); }

  static double monotonic_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  void begin_shutdown() {
    if (shutting_down) return;
    shutting_down = true;
    shutdown_started_s = monotonic_s();
    http->stop_listening();
    if (const size_t n = http->open_connections(); n > 0) {
      log_info("shutdown: {} connections open; the oldest:", n);
      for (const std::string& line : http->describe_open_connections(8)) log_info("  {}", line);
    }
    http->close_idle();
    const double timeout = config.shutdown_timeout_s;
    if (live.empty()) {
      log_info("shutdown: no requests in flight");
      return finish_shutdown();
    }
    if (timeout <= 0) {
      log_info("shutdown: ending {} requests in flight now (--shutdown-timeout 0)", live.size());
      return end_remaining();
    }
    log_info("shutdown: no new connections; waiting up to {:g} s for {} requests in flight (--shutdown-timeout)",
             timeout, live.size());
    const timeval tv{static_cast<time_t>(timeout), static_cast<suseconds_t>((timeout - std::floor(timeout)) * 1e6)};
    event_add(drain_timer, &tv);
  }

  // During the drain: once nothing is in flight, finish.
  void maybe_finish_shutdown() {
    if (shutting_down && !shutdown_finished && live.empty()) {
      log_info("shutdown: every request in flight finished after {:.1f} s", monotonic_s() - shutdown_started_s);
      finish_shutdown();
    }
  }

  // The timeout passed: what is still in flight ends with an error.
  void end_remaining() {
    if (shutdown_finished) return;
    std::vector<std::shared_ptr<Stream>> remaining;
    for (const auto& [raw, stream] : live) remaining.push_back(stream);
    size_t streams = 0;
    for (const auto& stream : remaining) {
      abort_choices(*stream);
      streams += stream->reply_started ? 1 : 0;
      finish_with_error(*stream, {503,
                                  "the server is shutting down: the request was ended after " +
                                      fmt::format("{:g}", config.shutdown_timeout_s) + " s (--shutdown-timeout)",
                                  ""});
    }
    if (!remaining.empty()) {
      log_warning(
          "shutdown: ended {} requests still in flight after {:.1f} s ({} streams got an error event, {} an "
          "HTTP 503)",
          remaining.size(), monotonic_s() - shutdown_started_s, streams, remaining.size() - streams);
    }
    finish_shutdown();
  }

  void finish_shutdown() {
    if (shutdown_finished) return;
    shutdown_finished = true;
    event_del(drain_timer);
    event_del(timeout_timer);
    engine.stop();  // anything left gets its final (abort) update
    drain_queue();  // ... which is sent now
    timeval flush_time{0, 200 * 1000};
    event_base_loopexit(base, &flush_time);
  }
};

OpenAiServer::OpenAiServer(const ServerConfig& config, Engine& engine, const Tokenizer& tokenizer,
                           ChatTemplate chat_template)
    : impl_(std::make_unique<Impl>(config, engine, tokenizer, std::move(chat_template))) {
  evthread_use_pthreads();  // event_active() from the engine thread
  impl_->base = event_base_new();
  CROSSPOINT_CHECK(impl_->base != nullptr, "event_base_new failed");
  HttpLimits limits;
  limits.max_body_bytes = config.max_body_bytes;
  limits.max_header_bytes = config.max_header_bytes;
  limits.header_timeout_s = config.header_timeout_s;
  limits.body_timeout_s = config.body_timeout_s;
  limits.idle_timeout_s = config.idle_timeout_s;
  limits.max_connections = config.max_connections;
  limits.api_key = config.api_key;
  Impl* impl = impl_.get();
  impl_->http = std::make_unique<HttpServer>(
      impl_->base, limits, [impl](const std::shared_ptr<HttpExchange>& exchange) { impl->handle(exchange); },
      [impl] { return impl->engine.is_running() && !impl->shutting_down; },
      [impl](std::string_view path, int status) { impl->response_counts.add(path, status); });
  impl_->notify_event = event_new(impl_->base, -1, 0, &Impl::on_notify, impl_.get());
  impl_->prepared_event = event_new(impl_->base, -1, 0, &Impl::on_prepared, impl_.get());
  impl_->shutdown_event = event_new(impl_->base, -1, 0, &Impl::on_shutdown_request, impl_.get());
  impl_->drain_timer = event_new(impl_->base, -1, 0, &Impl::on_drain_timeout, impl_.get());
  impl_->timeout_timer = event_new(impl_->base, -1, EV_PERSIST, &Impl::on_timeout_timer, impl_.get());
  impl_->sigint_event = evsignal_new(impl_->base, SIGINT, &Impl::on_signal, impl_.get());
  impl_->sigterm_event = evsignal_new(impl_->base, SIGTERM, &Impl::on_signal, impl_.get());
  impl_->prepare_thread = std::thread([impl] { impl->prepare_loop(); });
}

OpenAiServer::~OpenAiServer() {
  {
    std::lock_guard<std::mutex> lock(impl_->prepare_mutex);
    impl_->prepare_stop = true;
  }
  impl_->prepare_wake.notify_all();
  if (impl_->prepare_thread.joinable()) impl_->prepare_thread.join();
  impl_->prepare_queue.clear();
  impl_->prepared.clear();
  impl_->engine.stop();
  impl_->drain_queue();
  // Closing the connections runs on_close for the streams still open, which must be alive.
  impl_->http.reset();
  impl_->live.clear();
  for (event* e : {impl_->notify_event, impl_->prepared_event, impl_->shutdown_event, impl_->drain_timer,
                   impl_->timeout_timer, impl_->sigint_event, impl_->sigterm_event}) {
    if (e != nullptr) event_free(e);
  }
  if (impl_->base != nullptr) event_base_free(impl_->base);
}

Status OpenAiServer::bind() {
  if (impl_->bound) return Status::ok();
  CROSSPOINT_RETURN_IF_ERROR(impl_->http->listen(impl_->config.host, impl_->config.port));
  impl_->bound = true;
  return Status::ok();
}

int OpenAiServer::port() const { return impl_->http->port(); }

Status OpenAiServer::run() {
  CROSSPOINT_RETURN_IF_ERROR(bind());
  std::signal(SIGPIPE, SIG_IGN);  // a vanished client must not kill the server
  event_add(impl_->sigint_event, nullptr);
  event_add(impl_->sigterm_event, nullptr);
  const timeval timeout_period{0, 250 * 1000};
  event_add(impl_->timeout_timer, &timeout_period);
  impl_->engine.start();
  if (event_base_dispatch(impl_->base) != 0) return internal_error("the event loop failed");
  return Status::ok();
}

void OpenAiServer::request_shutdown() { event_active(impl_->shutdown_event, 0, 0); }

}  // namespace crosspoint
