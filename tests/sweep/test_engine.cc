// The per-engine command lines, the --serve-cmd template and the report's engine lines.
#include "sweep/engine.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "sweep/sweep_options.h"

namespace crosspoint::sweep {
namespace {

TEST(Engine, ParsesKnownEnginesAndNamesTheOption) {
  EXPECT_EQ(parse_engine("crosspoint").value(), Engine::kCrosspoint);
  EXPECT_EQ(parse_engine("llama.cpp").value(), Engine::kLlamaCpp);
  EXPECT_EQ(parse_engine("vllm").value(), Engine::kVllm);
  EXPECT_EQ(parse_engine("sglang").value(), Engine::kSglang);
  EXPECT_EQ(engine_of("sglang", ""), Engine::kSglang);
  const auto bad = parse_engine("tgi");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("--engine"), std::string::npos);
  EXPECT_EQ(engine_of("crosspoint", ""), Engine::kCrosspoint);
  EXPECT_EQ(engine_of("llama.cpp", ""), Engine::kLlamaCpp);
  EXPECT_EQ(engine_of("crosspoint", "my-server {port}"), Engine::kCommand);
}

TEST(Engine, PrecisionsMapToLlamaCppFormatsByWhatTheyAre) {
  EXPECT_EQ(llama_cpp_format_of("fp16"), "F16");
  EXPECT_EQ(llama_cpp_format_of("w8a8-fp8"), "Q8_0");
  EXPECT_EQ(llama_cpp_format_of("w4a16"), "Q4_0");
  EXPECT_EQ(llama_cpp_format_of("int3"), "");
  EXPECT_EQ(llama_cpp_ftype_of("F16"), 1);
  EXPECT_EQ(llama_cpp_ftype_of("Q4_0"), 2);
  EXPECT_EQ(llama_cpp_ftype_of("Q8_0"), 7);
  EXPECT_EQ(llama_cpp_ftype_of("Q5_K"), -1);
}

TEST(Engine, LlamaCppServerCommandLine) {
  const std::vector<std::string> argv =
      llama_cpp_server_command("/venv/bin/python", "/cache/m-Q8_0.gguf", "127.0.0.1", 4321, 2048, 2);
  const std::vector<std::string> expected = {"/venv/bin/python",
                                             "-m",
                                             "llama_cpp.server",
                                             "--model",
                                             "/cache/m-Q8_0.gguf",
                                             "--model_alias",
                                             "sweep",
                                             "--host",
                                             "127.0.0.1",
                                             "--port",
                                             "4321",
                                             "--n_ctx",
                                             "2048",
                                             "--chat_format",
                                             "chatml",
                                             "--n_threads",
                                             "2"};
  EXPECT_EQ(argv, expected);
  // threads 0: llama.cpp's own default.
  const std::vector<std::string> no_threads = llama_cpp_server_command("py", "m.gguf", "127.0.0.1", 1, 512, 0);
  EXPECT_EQ(std::count(no_threads.begin(), no_threads.end(), "--n_threads"), 0);
}

TEST(Engine, SubstitutesEveryPlaceholder) {
  const auto command = substitute_serve_template("srv --model {model} --port {port} --host {host} # {precision} {port}",
                                                 "/m/q4", 8123, "127.0.0.1", "w4a16");
  ASSERT_TRUE(command.is_ok()) << command.status().message();
  EXPECT_EQ(command.value(), "srv --model /m/q4 --port 8123 --host 127.0.0.1 # w4a16 8123");
}

TEST(Engine, KeepsOtherBracesAndRejectsUnknownPlaceholders) {
  const auto shell = substitute_serve_template("srv ${HOME:-/x} --json '{}' --p {port}", "m", 1, "h", "fp16");
  ASSERT_TRUE(shell.is_ok()) << shell.status().message();
  EXPECT_EQ(shell.value(), "srv ${HOME:-/x} --json '{}' --p 1");
  const auto unknown = substitute_serve_template("srv --gpu {gpu}", "m", 1, "h", "fp16");
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_NE(unknown.status().message().find("{gpu}"), std::string::npos);
  const auto unclosed = substitute_serve_template("srv {port", "m", 1, "h", "fp16");
  ASSERT_TRUE(unclosed.is_ok());
  EXPECT_EQ(unclosed.value(), "srv {port");
}

TEST(Engine, ShellCommandExecsTheServer) {
  EXPECT_EQ(shell_command("srv --port 1"), (std::vector<std::string>{"/bin/sh", "-c", "exec srv --port 1"}));
}

TEST(Engine, PicksAFreePort) {
  const int port = pick_free_port();
  EXPECT_GT(port, 0);
  EXPECT_LT(port, 65536);
}

TEST(Engine, ReportLinesNameTheFormatsAndWhatIsNotMeasured) {
  EXPECT_TRUE(engine_report_lines(Engine::kCrosspoint, {"fp16"}).empty());
  std::string text;
  for (const std::string& line : engine_report_lines(Engine::kLlamaCpp, {"fp16", "w8a8-fp8", "w4a16"})) text += line;
  EXPECT_NE(text.find("fp16 is llama.cpp F16"), std::string::npos);
  EXPECT_NE(text.find("w8a8-fp8 is llama.cpp Q8_0"), std::string::npos);
  EXPECT_NE(text.find("not FP8"), std::string::npos);
  EXPECT_NE(text.find("w4a16 is llama.cpp Q4_0"), std::string::npos);
  EXPECT_NE(text.find("Q4_1"), std::string::npos);
  EXPECT_NE(text.find("/metrics"), std::string::npos);
  EXPECT_NE(text.find("quality"), std::string::npos);
  text.clear();
  for (const std::string& line : engine_report_lines(Engine::kLlamaCpp, {"fp16"}, "/models/mine-F16.gguf"))
    text += line;
  EXPECT_NE(text.find("from mine-F16.gguf (--gguf"), std::string::npos) << text;
  EXPECT_EQ(text.find("Q4_1"), std::string::npos) << text;
}

// The flag names are vLLM's and SGLang's own (the stand-ins in engine_standins/ parse them with
// argparse, as the engines do, in the sweep_engine_standins test).
TEST(Engine, VllmAndSglangCommandLinesUseTheirFlags) {
  const EngineServeLimits limits{1024, 0.5, 32, true};
  const auto vllm = vllm_server_command("vllm", "/m", "127.0.0.1", 8123, limits);
  const std::vector<std::string> want_vllm = {"vllm",      "serve",           "/m",   "--host",
                                              "127.0.0.1", "--port",          "8123", "--served-model-name",
                                              "sweep",     "--max-model-len", "1024", "--gpu-memory-utilization",
                                              "0.500000",  "--seed",          "0",    "--max-num-seqs",
                                              "32",        "--enforce-eager"};
  EXPECT_EQ(vllm, want_vllm);
  const auto sglang = sglang_server_command("python3", "/m", "127.0.0.1", 8123, EngineServeLimits{});
  const std::vector<std::string> want_sglang = {"python3",
                                                "-m",
                                                "sglang.launch_server",
                                                "--model-path",
                                                "/m",
                                                "--host",
                                                "127.0.0.1",
                                                "--port",
                                                "8123",
                                                "--served-model-name",
                                                "sweep",
                                                "--context-length",
                                                "2048",
                                                "--mem-fraction-static",
                                                "0.900000",
                                                "--random-seed",
                                                "0",
                                                "--enable-metrics"};
  EXPECT_EQ(sglang, want_sglang);
}

TEST(Engine, OptionsCheckTheEngineAndTheTemplatesModels) {
  SweepOptions o;
  o.crosspoint_exe = "/bin/sh";
  o.precisions = {"fp16", "w4a16"};
  o.concurrency = {1};
  o.engine = "tgi";
  EXPECT_NE(validate_sweep_options(o).message().find("--engine"), std::string::npos);
  o.engine = "crosspoint";
  o.engine_exe = "/usr/bin/vllm";
  EXPECT_NE(validate_sweep_options(o).message().find("--engine-exe applies to --engine vllm and sglang"),
            std::string::npos);
  o.engine_exe.clear();
  o.gguf = "/no/such.gguf";
  EXPECT_NE(validate_sweep_options(o).message().find("--gguf applies to --engine llama.cpp"), std::string::npos);
  o.engine = "llama.cpp";
  EXPECT_NE(validate_sweep_options(o).message().find("--gguf /no/such.gguf: no such file"), std::string::npos);
  o.engine = "crosspoint";
  o.gguf.clear();
  o.serve_cmd = "srv --port {port}";
  EXPECT_NE(validate_sweep_options(o).message().find("--precision-model w4a16"), std::string::npos);
  o.serve_cmd.clear();
  o.engine = "llama.cpp";
  o.kv_cache_dtypes = {"auto", "fp8"};
  EXPECT_NE(validate_sweep_options(o).message().find("--engine crosspoint only"), std::string::npos);
  o.kv_cache_dtypes = {"auto"};
  o.precision_models["w4a16"] = "/no/such/model-Q4_0.gguf";
  EXPECT_NE(validate_sweep_options(o).message().find("no such GGUF file"), std::string::npos);
}

}  // namespace
}  // namespace crosspoint::sweep
