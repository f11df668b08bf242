// run_load against tests/bench/fake_openai_server.py in each of its failure modes: every
// request ends up completed or failed with a reason, timings are ordered, the concurrency
// limit holds. Exercises the libcurl event loop directly (so it also runs under ASan
// without the whole CLI).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <set>
#include <string>

#include "bench/load_client.h"

namespace crosspoint::bench {
namespace {

// The fake server as a child process; port read from its "PORT n" line.
class FakeServerProcess {
 public:
  explicit FakeServerProcess(const std::string& args) {
    const std::string script = std::string(CROSSPOINT_SOURCE_DIR) + "/tests/bench/fake_openai_server.py";
    int out[2];
    if (pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      close(out[0]);
      close(out[1]);
      const std::string command = "exec python3 " + script + " " + args;
      execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    std::FILE* stream = fdopen(out[0], "r");
    char line[64] = {0};
    if (stream && std::fgets(line, sizeof(line), stream) && std::sscanf(line, "PORT %d", &port_) == 1) {
      url_ = "http://127.0.0.1:" + std::to_string(port_);
    }
    if (stream) std::fclose(stream);
  }
  ~FakeServerProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  const std::string& url() const { return url_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string url_;
};

// 1,000 sockets need more than the usual soft limit of 1,024 descriptors.
void raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

std::vector<RequestRecord> run(const std::string& url, int num_requests, std::optional<int> max_concurrency,
                               LoadRunResult* out = nullptr, double timeout_s = 30) {
  raise_open_file_limit();
  LoadClientConfig config;
  config.url = url + "/v1/completions";
  config.max_concurrency = max_concurrency;
  config.request_timeout_s = timeout_s;
  config.metrics_url = url + "/metrics";
  config.metrics_interval_s = 0.01;
  std::vector<std::string> bodies(num_requests, R"({"model":"fake","prompt":"a b c","max_tokens":5,"stream":true})");
  std::vector<RequestRecord> records(num_requests);
  for (int i = 0; i < num_requests; ++i) records[i].request_idx = i;
  auto result = run_load(config, bodies, std::vector<double>(num_requests, 0.0), records);
  EXPECT_TRUE(result.is_ok());
  if (out && result.is_ok()) *out = *result;
  return records;
}

TEST(LoadClient, StreamsCompleteWithOrderedTimings) {
  FakeServerProcess server("--token-delay-ms 1");
  ASSERT_FALSE(server.url().empty()) << "fake server did not start (python3 missing?)";
  LoadRunResult load;
  const auto records = run(server.url(), 12, 3, &load);
  for (const auto& r : records) {
    ASSERT_TRUE(r.success) << r.error;
    EXPECT_EQ(r.http_status, 200);
    EXPECT_EQ(r.usage_completion_tokens, 5);
    EXPECT_EQ(r.prompt_len, 3);  // from usage.prompt_tokens
    EXPECT_EQ(r.itl_s.size(), 4u);
    EXPECT_GT(r.ttft_s, 0);
    EXPECT_GE(r.latency_s, r.ttft_s);
    EXPECT_GE(r.start_s, r.arrival_s);
    EXPECT_EQ(r.generated_text, " t0 t1 t2 t3 t4");
  }
  EXPECT_EQ(load.max_in_flight, 3);
  EXPECT_GT(load.duration_s, 0);
  EXPECT_FALSE(load.server_samples.empty());
  EXPECT_GT(load.overhead.num_chunks, 0);
}

TEST(LoadClient, ThousandConcurrentStreams) {
  // The server holds every stream until all 1,000 are open, then sends them instantly.
  FakeServerProcess server("--barrier 1000");
  ASSERT_FALSE(server.url().empty());
  LoadRunResult load;
  const auto records = run(server.url(), 1000, std::nullopt, &load, 120);
  int num_ok = 0;
  for (const auto& r : records) num_ok += r.success ? 1 : 0;
  EXPECT_EQ(num_ok, 1000) << records[0].error;
  EXPECT_EQ(load.max_in_flight, 1000);
}

TEST(LoadClient, EveryFailureModeIsAFailedRecordWithAReason) {
  const std::pair<const char*, const char*> modes[] = {
      {"http500", "HTTP 500 Internal Server Error"},
      {"truncate", "partial"},
      {"malformed", "malformed stream chunk"},
      {"stream-error", "server error in stream"},
  };
  for (const auto& [mode, needle] : modes) {
    FakeServerProcess server(std::string("--mode ") + mode + " --fail-every 2");
    ASSERT_FALSE(server.url().empty());
    const auto records = run(server.url(), 6, 1);
    int num_failed = 0;
    for (const auto& r : records) {
      if (r.success) continue;
      ++num_failed;
      EXPECT_NE(r.error.find(needle), std::string::npos) << mode << ": " << r.error;
    }
    EXPECT_EQ(num_failed, 3) << mode;
  }
}

TEST(LoadClient, TimeoutAndRefusedConnection) {
  {
    FakeServerProcess server("--mode slow --slow-delay-s 5");
    ASSERT_FALSE(server.url().empty());
    for (const auto& r : run(server.url(), 2, 2, nullptr, 0.3)) {
      EXPECT_FALSE(r.success);
      EXPECT_NE(r.error.find("Timeout"), std::string::npos) << r.error;
    }
  }
  // Port 9 (discard) on loopback: nothing listens there in a test environment.
  for (const auto& r : run("http://127.0.0.1:9", 3, std::nullopt)) {
    EXPECT_FALSE(r.success);
    EXPECT_EQ(r.http_status, 0);
    EXPECT_FALSE(r.error.empty());
  }
}

}  // namespace
}  // namespace crosspoint::bench

namespace crosspoint::bench {
namespace {

TEST(RequestUuid, VersionFourShapeDistinctPerRequestAndRun) {
  const std::regex uuid("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  std::set<std::string> seen;
  for (uint64_t key : {1ull, 2ull, 0xDEADBEEFull}) {
    for (size_t i = 0; i < 2000; ++i) {
      const std::string id = request_uuid(key, i);
      EXPECT_TRUE(std::regex_match(id, uuid)) << id;
      EXPECT_TRUE(seen.insert(id).second) << "repeated " << id;
    }
  }
  EXPECT_EQ(request_uuid(7, 3), request_uuid(7, 3));
}

}  // namespace
}  // namespace crosspoint::bench
