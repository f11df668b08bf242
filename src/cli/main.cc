// crosspoint: which precision to serve, when. Dispatches to one subcommand per file.
#include <cstdio>
#include <cstring>
#include <string_view>

#include "cli/commands.h"

namespace {

struct Subcommand {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

constexpr Subcommand kSubcommands[] = {
    {"generate", "generate text from a prompt on the CPU, streaming it as it is produced",
     crosspoint::cli::run_generate},
    {"serve", "OpenAI-compatible streaming server with continuous batching", crosspoint::cli::run_serve},
    {"bench", "'bench serve': load generator with vLLM-compatible metrics for any OpenAI server",
     crosspoint::cli::run_bench},
    {"sweep", "the whole study: precisions x concurrency, roofline, crossover, report", crosspoint::cli::run_sweep},
    {"quantize", "write W8A8-FP8 (compressed-tensors) or W4A16 (GPTQ) checkpoints", crosspoint::cli::run_quantize},
    {"eval", "perplexity and greedy agreement against a reference model", crosspoint::cli::run_eval},
    {"roofline", "roofline analysis of benchmark results (ours or another engine's)", crosspoint::cli::run_roofline},
    {"hwinfo", "measure memory bandwidth and matmul rates of this machine", crosspoint::cli::run_hwinfo},
    {"convert", "convert a GGUF file into a Hugging Face style directory", crosspoint::cli::run_convert},
    {"tokenize", "print token ids of a text (or decode ids) as JSON", crosspoint::cli::run_tokenize},
};

void print_usage(std::FILE* out) {
  std::fprintf(out,
               "crosspoint: an LLM inference engine that finds which precision to serve, when.\n\n"
               "Usage: crosspoint <command> [options]   (crosspoint <command> --help for its options)\n\n"
               "Commands:\n");
  for (const auto& sub : kSubcommands) std::fprintf(out, "  %-10s %s\n", sub.name, sub.summary);
  std::fprintf(out, "\nModels: --model DIR (a Hugging Face directory) or 'default' (SmolLM2-135M-Instruct).\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    print_usage(stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string_view name = argv[1];
  for (const auto& sub : kSubcommands) {
    if (name == sub.name) return sub.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "crosspoint: unknown command '%s'\n\n", argv[1]);
  print_usage(stderr);
  return 2;
}
