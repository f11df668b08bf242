// crosspoint quantize: writes a W8A8-FP8 or W8A8-INT8 (compressed-tensors) or W4A16 (GPTQ int4)
// copy of a dense checkpoint; W8A8 weights and GPTQ are quantised on the GPU when one is visible.
//   crosspoint quantize --model DIR|default --scheme w8a8-fp8|w8a8-int8|w4a16 [--method gptq|rtn]
//       [--group-size 128] [--desc-act] [--static-groups] [--damp 0.01] [--calib-dataset sharegpt|FILE]
//       [--calib-samples 128] [--calib-max-tokens 256] [--calib-pack] [--out DIR] [--force] [--threads N]
//       [--device auto]
// --out defaults to CROSSPOINT_CACHE/models/<model name>-<scheme>[-<method>].
#include <cstdio>
#include <filesystem>
#include <string>

#include "cli/calibration_text.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "common/clock.h"
#include "common/paths.h"
#include "common/log.h"
#include "common/thread_pool.h"
#include "analysis/gpu_ceilings.h"
#include "quant/quantize_model.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint::cli {

int run_quantize(int argc, char** argv) {
  CLI::App app("Quantise a dense checkpoint to W8A8-FP8, W8A8-INT8 or W4A16 (GPTQ int4)", "crosspoint quantize");
  std::string model = "default", scheme, method = "gptq", calib_dataset = "sharegpt", out, device = "auto";
  int64_t group_size = 128;
  bool desc_act = false, static_groups = false, force = false, calib_pack = false;
  double damp = 0.01;
  int calib_samples = 128, calib_max_tokens = 256, threads = 0;
  app.add_option("--model", model, "dense model directory or 'default'");
  app.add_option("--scheme", scheme,
                 "w8a8-fp8 (FP8 weights per channel, dynamic per-token FP8 activations), w8a8-int8 (the same in "
                 "int8, compressed-tensors' W8A8) or w4a16 (GPTQ int4)")
      ->required()
      ->check(CLI::IsMember({"w8a8-fp8", "w8a8-int8", "w4a16"}));
  app.add_option("--method", method, "w4a16 only: gptq or rtn")->check(CLI::IsMember({"gptq", "rtn"}));
  app.add_option("--group-size", group_size, "w4a16: input rows per scale (-1: one group)");
  app.add_flag("--desc-act", desc_act, "w4a16 gptq: act-order (columns by decreasing Hessian diagonal, g_idx)");
  app.add_flag("--static-groups", static_groups,
               "w4a16 gptq: group scales from the original weights, fixed before error compensation");
  app.add_option("--damp", damp, "gptq: dampening, fraction of the mean Hessian diagonal");
  app.add_option("--calib-dataset", calib_dataset, "gptq calibration text: sharegpt or a ShareGPT-format JSON file");
  app.add_option("--calib-samples", calib_samples, "gptq: number of calibration samples");
  app.add_option("--calib-max-tokens", calib_max_tokens, "gptq: tokens per calibration sample (cut)");
  app.add_flag("--calib-pack", calib_pack,
               "gptq: join the conversations and cut them into samples of exactly --calib-max-tokens tokens "
               "(long sequences, as GPTQ with a 2,048-token window wants), instead of one sample per conversation");
  app.add_option("--out", out, "output directory");
  app.add_flag("--force", force, "overwrite an existing output directory");
  app.add_option("--threads", threads, "worker threads (default: all cores)");
  app.add_option("--device", device,
                 "where the weights are quantised: auto (cuda when a GPU is visible, else cpu), cpu or cuda. W8A8: the "
                 "same bytes either way. GPTQ on cuda runs the calibration through the GPU model in fp16 (the CPU's in "
                 "f32), so a few codes differ; RTN needs no calibration and runs on the CPU")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  if (int code = parse_or_exit_code(app, argc, argv); code >= 0) return code;
  if (threads > 0) set_global_num_threads(threads);

  auto dir = resolve_model_dir(model);
  if (!dir.is_ok()) return report_error("quantize", dir.status());
  QuantizeModelOptions o;
  o.model_dir = dir.value();
  o.scheme = scheme == "w8a8-fp8"    ? QuantizeScheme::kW8A8Fp8
             : scheme == "w8a8-int8" ? QuantizeScheme::kW8A8Int8
                                     : QuantizeScheme::kW4A16;
  o.int4_method = method == "rtn" ? Int4Method::kRtn : Int4Method::kGptq;
  o.int4.group_size = group_size;
  o.int4.act_order = desc_act;
  o.int4.static_groups = static_groups;
  o.int4.damp_percent = damp;
  o.overwrite = force;
  const bool rtn = o.scheme == QuantizeScheme::kW4A16 && o.int4_method == Int4Method::kRtn;
  if (device == "auto") device = !rtn && analysis::gpu_device_count() > 0 ? "cuda" : "cpu";
  o.device = device;
  log_info("quantize: {} weights, quantised on {}", scheme, device);
  if (out.empty()) {
    const std::string name = std::filesystem::path(o.model_dir).filename().string();
    out = cache_dir() + "/models/" + name + "-" + scheme + (o.scheme == QuantizeScheme::kW4A16 ? "-" + method : "");
  }
  o.out_dir = out;
  const Stopwatch clock;
  if (o.scheme == QuantizeScheme::kW4A16 && o.int4_method == Int4Method::kGptq) {
    auto tokenizer = Tokenizer::from_model_dir(o.model_dir);
    if (!tokenizer.is_ok()) return report_error("quantize", tokenizer.status());
    auto samples =
        load_text_samples(calib_dataset, *tokenizer.value(), calib_samples, calib_max_tokens, 16, 0, calib_pack);
    if (!samples.is_ok()) return report_error("quantize", samples.status());
    o.calibration = std::move(samples).value();
  }
  const Status status = quantize_model(o);
  if (!status.is_ok()) return report_error("quantize", status);
  std::printf("wrote %s (%s%s) in %.1f s\n", out.c_str(), scheme.c_str(),
              o.scheme == QuantizeScheme::kW4A16 ? (", " + method).c_str() : "", clock.elapsed_seconds());
  return 0;
}

}  // namespace crosspoint::cli
