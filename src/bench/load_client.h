// The HTTP side of the benchmark: releases requests at their arrival times, holds them
// behind the concurrency limit (FIFO, like vLLM's asyncio.Semaphore), streams every
// response through libcurl's multi interface on this one thread, timestamps every SSE
// chunk on the monotonic clock, and samples the server's /metrics meanwhile.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/request_record.h"
#include "bench/server_metrics.h"
#include "common/status.h"

namespace crosspoint::bench {

// A version-4-shaped UUID ("8-4-4-4-12" lowercase hex) for request idx of the run keyed by key:
// distinct per (key, idx), the same for the same pair.
std::string request_uuid(uint64_t key, size_t idx);

struct LoadClientConfig {
  std::string url;                   // endpoint URL, e.g. http://127.0.0.1:8000/v1/completions
  std::vector<std::string> headers;  // extra request headers, "Name: value"
  // x-request-id of request i: request_uuid(request_id_key, i), a UUID (servers such as
  // llama-cpp-python's refuse other ids); 0 = no header.
  uint64_t request_id_key = 0;
  size_t first_request_index = 0;  // request i of a run gets the id of index first_request_index + i
  // vLLM's --request-id-prefix: when set, request i's x-request-id is this prefix followed by i
  // (in place of the UUID).
  std::optional<std::string> request_id_prefix;
  std::optional<int> max_concurrency;  // unset = no limit
  double request_timeout_s = 6 * 3600.0;
  std::string metrics_url;  // Prometheus endpoint; empty = no sampling
  double metrics_interval_s = 0.5;
  // Called on this thread after each request finishes (done includes failed).
  std::function<void(int num_done, int num_failed)> on_progress;
  // Chained requests (multi-turn conversations), or empty: follows[i] is the request that must
  // finish before request i is sent (its previous turn), or -1. A chained request is released
  // the moment its predecessor finishes, ahead of the requests waiting for the concurrency
  // limit (a conversation keeps its slot), with the body make_body(i) returns then (it may read
  // the records of earlier turns); its arrival time is ignored. When the predecessor failed it
  // fails too, unsent.
  std::vector<long> follows;
  std::function<std::string(size_t idx)> make_body;
};

// What the client cost, so a reader can tell whether the client was the bottleneck.
struct ClientOverhead {
  double cpu_s = 0;          // CPU time of the event-loop thread during the run
  double cpu_fraction = 0;   // cpu_s / duration: 1.0 means the client was saturated
  double parse_s = 0;        // wall time inside the response callbacks (SSE + JSON)
  long long num_chunks = 0;  // response callbacks (network reads) handled
  double mean_parse_us_per_chunk = 0;
  double mean_dispatch_lag_ms = 0;  // release time - scheduled arrival time
  double max_dispatch_lag_ms = 0;
};

struct LoadRunResult {
  double duration_s = 0;      // first dispatch opportunity -> last request finished
  int max_in_flight = 0;      // concurrency actually reached, counted by the client
  double mean_in_flight = 0;  // time-weighted over the run
  ClientOverhead overhead;
  std::vector<ServerMetricsSample> server_samples;
  std::string metrics_error;  // why /metrics sampling stopped, if it did
};

// bodies[i] is the JSON body of records[i] (ignored for chained requests); arrivals_s[i] its
// scheduled release time (s after start). records must have request_idx, prompt_len, expected_output_len set; the
// rest is filled in. Network failures become failed records, never an error; the Status is
// only for a client that cannot start (libcurl initialisation).
Result<LoadRunResult> run_load(const LoadClientConfig& config, const std::vector<std::string>& bodies,
                               const std::vector<double>& arrivals_s, std::vector<RequestRecord>& records);

}  // namespace crosspoint::bench
