#include "bench/load_client.h"

#include <curl/curl.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>

#include "bench/sse_parser.h"
#include "bench/stream_accumulator.h"
#include "common/clock.h"
#include "common/mix64.h"

namespace crosspoint::bench {

namespace {

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string clip(const std::string& text, size_t max_bytes = 200) {
  return text.size() <= max_bytes ? text : text.substr(0, max_bytes) + "...";
}

// libcurl's process-wide state, set up once.
Status ensure_curl_global_init() {
  static const CURLcode code = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (code != CURLE_OK)
    return internal_error(std::string("libcurl initialisation failed: ") + curl_easy_strerror(code));
  return Status::ok();
}

// Everything one in-flight transfer owns.
struct Transfer {
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  char error_buffer[CURL_ERROR_SIZE] = {0};
  std::string status_line;  // "HTTP/1.1 500 Internal Server Error"
  std::string body;         // raw body when it is not a 200 stream (error text, /metrics)
  bool is_metrics = false;
  // Streamed completions only.
  RequestRecord* record = nullptr;
  SseParser sse;
  std::unique_ptr<StreamAccumulator> accumulator;
  Status stream_error;  // set by the write callback; aborts the transfer
  long http_status = 0;
  double origin_s = 0;  // monotonic time of the benchmark start
  ClientOverhead* overhead = nullptr;

  ~Transfer() {
    if (headers) curl_slist_free_all(headers);
    if (easy) curl_easy_cleanup(easy);
  }
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) {  // a new status line (also after redirects or 100)
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    t->status_line = line;
  }
  return size * count;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t num_bytes = size * count;
  if (t->is_metrics) {
    t->body.append(data, num_bytes);
    return num_bytes;
  }
  const double now_s = monotonic_seconds() - t->origin_s;  // one timestamp per network read
  if (t->http_status == 0) curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &t->http_status);
  if (t->http_status != 200) {
    if (t->body.size() < 4096) t->body.append(data, std::min<size_t>(num_bytes, 4096));
    return num_bytes;
  }
  for (const std::string& payload : t->sse.feed(std::string_view(data, num_bytes))) {
    Status status = t->accumulator->on_payload(payload, now_s);
    if (!status.is_ok()) {
      t->stream_error = status;
      return 0;  // makes libcurl abort this transfer with CURLE_WRITE_ERROR
    }
  }
  t->overhead->num_chunks += 1;
  t->overhead->parse_s += (monotonic_seconds() - t->origin_s) - now_s;
  return num_bytes;
}

// The error text of a non-200 answer: status line, then the server's message if any.
std::string http_error_text(const Transfer& t) {
  std::string reason = t.status_line.empty() ? "HTTP " + std::to_string(t.http_status) : t.status_line;
  if (reason.rfind("HTTP/", 0) == 0) {
    const size_t space = reason.find(' ');
    reason = "HTTP " + (space == std::string::npos ? reason : reason.substr(space + 1));
  }
  std::string detail = t.body;
  while (!detail.empty() && (detail.back() == '\n' || detail.back() == '\r')) detail.pop_back();
  return detail.empty() ? reason : reason + ": " + clip(detail);
}

// Decides success and the failure reason once libcurl is done with a completion request.
void finish_record(Transfer& t, CURLcode code) {
  RequestRecord& r = *t.record;
  curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &t.http_status);
  r.http_status = static_cast<int>(t.http_status);
  r.success = false;
  if (!t.stream_error.is_ok()) {
    r.error = t.stream_error.message();
  } else if (code != CURLE_OK) {
    r.error = std::string(curl_easy_strerror(code));
    if (t.error_buffer[0] != '\0') r.error += std::string(": ") + t.error_buffer;
    if (t.http_status != 0 && t.http_status != 200) r.error = http_error_text(t) + " (" + r.error + ")";
  } else if (t.http_status != 200) {
    r.error = http_error_text(t);
  } else if (!t.accumulator->saw_done()) {
    r.error = "stream ended before 'data: [DONE]' (truncated)";
    if (!t.sse.pending().empty()) r.error += "; unfinished message: " + clip(t.sse.pending(), 80);
  } else if (t.accumulator->num_token_events() == 0) {
    r.error = "stream finished without any token";
  } else {
    r.success = true;
  }
}

class EventLoop {
 public:
  EventLoop(const LoadClientConfig& config, const std::vector<std::string>& bodies,
            const std::vector<double>& arrivals_s, std::vector<RequestRecord>& records)
      : config_(config), bodies_(bodies), arrivals_s_(arrivals_s), records_(records) {
    successor_.assign(records.size(), -1);
    for (size_t i = 0; i < records.size(); ++i) {
      const long previous = config.follows.empty() ? -1 : config.follows[i];
      if (previous < 0) {
        independent_.push_back(i);
      } else {
        CROSSPOINT_CHECK(successor_[static_cast<size_t>(previous)] < 0, "one request follows each request at most");
        successor_[static_cast<size_t>(previous)] = static_cast<long>(i);
      }
    }
  }

  ~EventLoop() {
    if (multi_) curl_multi_cleanup(multi_);
  }

  Result<LoadRunResult> run();

 private:
  double now_s() const { return monotonic_seconds() - origin_s_; }
  void release_arrivals(double now);
  void start_queued();
  void start_request(size_t idx);
  void start_metrics_scrape();
  void collect_finished();
  void release_successor(size_t finished_idx, double now);
  void note_in_flight_change(double now);
  // Request idx is sent after an earlier one (its body is made at release).
  bool follows_a_turn(size_t idx) const { return !config_.follows.empty() && config_.follows[idx] >= 0; }
  long poll_timeout_ms(double now) const;

  const LoadClientConfig& config_;
  const std::vector<std::string>& bodies_;
  const std::vector<double>& arrivals_s_;
  std::vector<RequestRecord>& records_;
  std::vector<size_t> independent_;       // requests released by their arrival time, in order
  std::vector<long> successor_;           // request chained after request i, or -1
  std::vector<std::string> made_bodies_;  // bodies of chained requests, made at release (by index)

  CURLM* multi_ = nullptr;
  double origin_s_ = 0;
  size_t next_arrival_ = 0;
  std::deque<size_t> waiting_;  // released, held by the concurrency limit (FIFO)
  int in_flight_ = 0;
  int num_done_ = 0;
  int num_failed_ = 0;
  double in_flight_area_ = 0;  // integral of in_flight over time, request*s
  double last_change_s_ = 0;
  double lag_sum_s_ = 0;
  bool metrics_enabled_ = false;
  bool metrics_in_flight_ = false;
  double next_metrics_s_ = 0;
  LoadRunResult result_;
};

void EventLoop::note_in_flight_change(double now) {
  in_flight_area_ += in_flight_ * (now - last_change_s_);
  last_change_s_ = now;
}

void EventLoop::release_arrivals(double now) {
  while (next_arrival_ < independent_.size() && arrivals_s_[independent_[next_arrival_]] <= now) {
    const size_t idx = independent_[next_arrival_];
    RequestRecord& r = records_[idx];
    r.scheduled_s = arrivals_s_[idx];
    r.arrival_s = now;  // as vLLM: the moment the request task exists
    const double lag = now - arrivals_s_[idx];
    lag_sum_s_ += lag;
    result_.overhead.max_dispatch_lag_ms = std::max(result_.overhead.max_dispatch_lag_ms, lag * 1e3);
    waiting_.push_back(idx);
    ++next_arrival_;
  }
}

void EventLoop::release_successor(size_t finished_idx, double now) {
  for (long next = successor_[finished_idx]; next >= 0;) {
    const size_t idx = static_cast<size_t>(next);
    RequestRecord& r = records_[idx];
    r.scheduled_s = now;
    r.arrival_s = now;
    if (records_[finished_idx].success) {
      if (made_bodies_.empty()) made_bodies_.resize(records_.size());
      made_bodies_[idx] = config_.make_body(idx);
      waiting_.push_front(idx);
      return;
    }
    // The conversation broke: this turn and every later one fail unsent.
    r.success = false;
    r.error = "not sent: the previous turn of its conversation failed";
    ++num_done_;
    ++num_failed_;
    if (config_.on_progress) config_.on_progress(num_done_, num_failed_);
    finished_idx = idx;
    next = successor_[idx];
  }
}

void EventLoop::start_queued() {
  while (!waiting_.empty() && (!config_.max_concurrency || in_flight_ < *config_.max_concurrency)) {
    const size_t idx = waiting_.front();
    waiting_.pop_front();
    start_request(idx);
  }
}

}  // namespace

std::string request_uuid(uint64_t key, size_t idx) {
  // Two splitmix64 outputs of (key, idx) give the 122 random bits.
  const uint64_t hi = mix64(key + 0x9E3779B97F4A7C15ull * (2 * static_cast<uint64_t>(idx) + 1));
  const uint64_t lo = mix64(hi ^ key);
  char buffer[37];
  std::snprintf(buffer, sizeof(buffer), "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xFFFF), static_cast<unsigned>(hi & 0xFFF),
                static_cast<unsigned>(0x8000 | ((lo >> 48) & 0x3FFF)),
                static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFull));
  return buffer;
}

namespace {

void EventLoop::start_request(size_t idx) {
  auto t = std::make_unique<Transfer>();
  t->record = &records_[idx];
  t->accumulator = std::make_unique<StreamAccumulator>(*t->record);
  t->origin_s = origin_s_;
  t->overhead = &result_.overhead;
  t->easy = curl_easy_init();
  CURL* e = t->easy;
  t->headers = curl_slist_append(t->headers, "Content-Type: application/json");
  t->headers = curl_slist_append(t->headers, "Accept: text/event-stream");
  t->headers = curl_slist_append(t->headers, "Expect:");  // no 100-continue round trip
  for (const std::string& h : config_.headers) t->headers = curl_slist_append(t->headers, h.c_str());
  if (config_.request_id_prefix) {
    const std::string id_header = "x-request-id: " + *config_.request_id_prefix + std::to_string(idx);
    t->headers = curl_slist_append(t->headers, id_header.c_str());
  } else if (config_.request_id_key != 0) {
    const std::string id_header =
        "x-request-id: " + request_uuid(config_.request_id_key, config_.first_request_index + idx);
    t->headers = curl_slist_append(t->headers, id_header.c_str());
  }
  curl_easy_setopt(e, CURLOPT_URL, config_.url.c_str());
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
  const std::string& body = follows_a_turn(idx) ? made_bodies_[idx] : bodies_[idx];
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, t.get());
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->error_buffer);
  curl_easy_setopt(e, CURLOPT_PRIVATE, t.get());
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(config_.request_timeout_s * 1000.0));
  const double now = now_s();
  t->record->start_s = now;  // just before the POST, as vLLM's st
  note_in_flight_change(now);
  ++in_flight_;
  result_.max_in_flight = std::max(result_.max_in_flight, in_flight_);
  curl_multi_add_handle(multi_, e);
  t.release();  // owned by the multi handle until collect_finished
}

void EventLoop::start_metrics_scrape() {
  auto t = std::make_unique<Transfer>();
  t->is_metrics = true;
  t->easy = curl_easy_init();
  CURL* e = t->easy;
  curl_easy_setopt(e, CURLOPT_URL, config_.metrics_url.c_str());
  // The request's extra headers (the API key among them: a server with --api-key guards
  // /metrics too).
  for (const std::string& h : config_.headers) t->headers = curl_slist_append(t->headers, h.c_str());
  if (t->headers != nullptr) curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->error_buffer);
  curl_easy_setopt(e, CURLOPT_PRIVATE, t.get());
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 5000L);
  curl_multi_add_handle(multi_, e);
  t.release();
  metrics_in_flight_ = true;
}

void EventLoop::collect_finished() {
  int num_messages = 0;
  while (CURLMsg* message = curl_multi_info_read(multi_, &num_messages)) {
    if (message->msg != CURLMSG_DONE) continue;
    CURL* e = message->easy_handle;
    const CURLcode code = message->data.result;
    Transfer* raw = nullptr;
    curl_easy_getinfo(e, CURLINFO_PRIVATE, &raw);
    std::unique_ptr<Transfer> t(raw);
    curl_multi_remove_handle(multi_, e);
    const double now = now_s();
    if (t->is_metrics) {
      metrics_in_flight_ = false;
      long status = 0;
      curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
      if (code != CURLE_OK || status != 200) {
        metrics_enabled_ = false;  // a server without /metrics: stop asking
        result_.metrics_error = code != CURLE_OK ? std::string("/metrics: ") + curl_easy_strerror(code)
                                                 : "/metrics: HTTP " + std::to_string(status);
      } else {
        result_.server_samples.push_back(reduce_sample(parse_prometheus_text(t->body), now));
      }
      continue;
    }
    finish_record(*t, code);
    note_in_flight_change(now);
    --in_flight_;
    ++num_done_;
    if (!t->record->success) ++num_failed_;
    if (config_.on_progress) config_.on_progress(num_done_, num_failed_);
    release_successor(static_cast<size_t>(t->record - records_.data()), now);
  }
}

long EventLoop::poll_timeout_ms(double now) const {
  double wake_s = now + 0.1;
  if (next_arrival_ < independent_.size()) wake_s = std::min(wake_s, arrivals_s_[independent_[next_arrival_]]);
  if (metrics_enabled_ && !metrics_in_flight_) wake_s = std::min(wake_s, next_metrics_s_);
  const double wait_ms = (wake_s - now) * 1e3;
  return wait_ms <= 0 ? 0 : static_cast<long>(std::ceil(wait_ms));
}

Result<LoadRunResult> EventLoop::run() {
  CROSSPOINT_RETURN_IF_ERROR(ensure_curl_global_init());
  multi_ = curl_multi_init();
  if (!multi_) return internal_error("curl_multi_init failed");
  const long max_connections = config_.max_concurrency ? *config_.max_concurrency : static_cast<long>(records_.size());
  curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, max_connections + 1);  // + the /metrics one
  metrics_enabled_ = !config_.metrics_url.empty() && config_.metrics_interval_s > 0;

  const double cpu_start_s = thread_cpu_seconds();
  origin_s_ = monotonic_seconds();
  const size_t num_requests = records_.size();
  while (static_cast<size_t>(num_done_) < num_requests) {
    double now = now_s();
    release_arrivals(now);
    start_queued();
    if (metrics_enabled_ && !metrics_in_flight_ && now >= next_metrics_s_) {
      start_metrics_scrape();
      next_metrics_s_ = now + config_.metrics_interval_s;
    }
    int num_running = 0;
    curl_multi_perform(multi_, &num_running);
    collect_finished();
    if (static_cast<size_t>(num_done_) >= num_requests) break;
    curl_multi_poll(multi_, nullptr, 0, static_cast<int>(poll_timeout_ms(now_s())), nullptr);
  }
  result_.duration_s = now_s();
  // Let a scrape already under way finish (bounded by its own 5 s timeout).
  while (metrics_in_flight_) {
    int num_running = 0;
    curl_multi_perform(multi_, &num_running);
    collect_finished();
    if (metrics_in_flight_) curl_multi_poll(multi_, nullptr, 0, 50, nullptr);
  }
  note_in_flight_change(result_.duration_s);
  ClientOverhead& o = result_.overhead;
  o.cpu_s = thread_cpu_seconds() - cpu_start_s;
  o.cpu_fraction = result_.duration_s > 0 ? o.cpu_s / result_.duration_s : 0;
  o.mean_parse_us_per_chunk = o.num_chunks > 0 ? o.parse_s / o.num_chunks * 1e6 : 0;
  o.mean_dispatch_lag_ms = independent_.empty() ? 0 : lag_sum_s_ / static_cast<double>(independent_.size()) * 1e3;
  result_.mean_in_flight = result_.duration_s > 0 ? in_flight_area_ / result_.duration_s : 0;
  return std::move(result_);
}

}  // namespace

Result<LoadRunResult> run_load(const LoadClientConfig& config, const std::vector<std::string>& bodies,
                               const std::vector<double>& arrivals_s, std::vector<RequestRecord>& records) {
  CROSSPOINT_CHECK(bodies.size() == records.size() && arrivals_s.size() == records.size(),
                   "one body and one arrival time per record");
  CROSSPOINT_CHECK(config.follows.empty() || (config.follows.size() == records.size() && config.make_body),
                   "follows needs one entry per record and make_body");
  for (size_t i = 0; i < config.follows.size(); ++i) {
    CROSSPOINT_CHECK(config.follows[i] < static_cast<long>(i), "a chained request follows an earlier one");
  }
  EventLoop loop(config, bodies, arrivals_s, records);
  return loop.run();
}

}  // namespace crosspoint::bench
