#include "quant/quantize_model.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/log.h"
#include "common/progress_bar.h"
#include "common/thread_pool.h"
#include "formats/model_config.h"
#include "formats/safetensors.h"
#include "kernels/weight_dtype.h"
#include "model/model.h"
#include "quant/fp8_quantizer.h"
#include "quant/int8_quantizer.h"
#include "quant/gptq_calibration.h"
#include "quant/quant_config.h"
#include "quant/sequence_forward.h"
#ifdef CROSSPOINT_HAVE_CUDA
#include <cuda_runtime.h>

#include "quant/cuda/gpu_gptq_calibration.h"
#include "quant/cuda/gpu_weight_quantizer.h"
#endif

namespace crosspoint {
namespace fs = std::filesystem;

const std::vector<std::string>& tokenizer_file_names() {
  static const std::vector<std::string> names = {
      "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json", "vocab.json",
      "merges.txt",     "chat_template.jinja",   "added_tokens.json"};
  return names;
}

namespace {

std::vector<std::string> linear_prefixes(const ModelConfig& c) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    for (const char* leaf : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                             "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"})
      out.push_back(p + leaf);
  }
  return out;
}

Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return io_error(path + ": cannot write");
  out << text;
  return out ? Status::ok() : io_error(path + ": write failed");
}

TensorToWrite copy_tensor(const TensorInfo& t) {
  return {t.name, t.dtype, t.shape, std::vector<uint8_t>(t.data, t.data + t.num_bytes)};
}

// W [N, K] of a float tensor as f32.
std::vector<float> read_weight(const TensorInfo& t) {
  std::vector<float> w(static_cast<size_t>(t.num_elements()));
  for (size_t i = 0; i < w.size(); ++i) w[i] = load_weight(t.data, t.dtype, static_cast<int64_t>(i));
  return w;
}

template <typename T>
std::vector<uint8_t> to_bytes(const std::vector<T>& v) {
  std::vector<uint8_t> bytes(v.size() * sizeof(T));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

// The checkpoint is written into <out>.partial and only moved into --out once every file is
// complete: a failed or cancelled run leaves --out as it was (and a .partial the next run
// replaces).
std::string partial_dir(const QuantizeModelOptions& o) { return o.out_dir + ".partial"; }

Status check_out_dir(const QuantizeModelOptions& o) {
  std::error_code ec;
  if (fs::exists(o.out_dir, ec)) {
    if (!fs::is_directory(o.out_dir, ec))
      return invalid_argument("--out " + o.out_dir + " exists and is not a directory");
    if (!fs::is_empty(o.out_dir, ec) && !o.overwrite)
      return invalid_argument("--out " + o.out_dir + " already exists and is not empty; pass --force to overwrite it");
  }
  fs::remove_all(partial_dir(o), ec);
  fs::create_directories(partial_dir(o), ec);
  if (ec) return io_error("--out " + o.out_dir + ": cannot create " + partial_dir(o) + ": " + ec.message());
  return Status::ok();
}

// Moves the finished files of <out>.partial into --out: the old weights there (model*.safetensors,
// the shard index) go first, other files of the same name are replaced, the rest stay.
Status publish_out_dir(const QuantizeModelOptions& o) {
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) return io_error("--out " + o.out_dir + ": " + ec.message());
  for (const auto& entry : fs::directory_iterator(o.out_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("model", 0) == 0 && (name.ends_with(".safetensors") || name.ends_with(".index.json")))
      fs::remove(entry.path(), ec);
  }
  for (const auto& entry : fs::directory_iterator(partial_dir(o), ec)) {
    fs::rename(entry.path(), fs::path(o.out_dir) / entry.path().filename(), ec);
    if (ec) return io_error("--out " + o.out_dir + ": moving " + entry.path().string() + " in: " + ec.message());
  }
  fs::remove_all(partial_dir(o), ec);
  return Status::ok();
}

// GPTQ: one forward over all calibration samples with the calibrating format.
Result<std::map<std::string, Int4Quantized>> run_gptq(const QuantizeModelOptions& o, const ModelConfig& config) {
  if (o.calibration.empty()) return invalid_argument("gptq: no calibration samples");
  GptqCalibrationSession session(o.int4, /*method_gptq=*/true, config.num_hidden_layers);
  ModelLoadOptions load_options;
  load_options.linear_formats.push_back(session.format());
  CROSSPOINT_ASSIGN_OR_RETURN(auto model, Model::load(o.model_dir, load_options));
  size_t num_tokens = 0;
  for (const auto& s : o.calibration) num_tokens += s.size();
  log_info("quantize: GPTQ calibration over {} samples, {} tokens", o.calibration.size(), num_tokens);
  std::vector<float> logits;
  const Status forward = forward_sequences(*model, o.calibration, /*all_positions=*/false, logits);
  if (!session.status().is_ok()) return session.status();
  CROSSPOINT_RETURN_IF_ERROR(forward);
  return session.results();
}

#ifdef CROSSPOINT_HAVE_CUDA
// GPTQ on the GPU: the dense checkpoint through the CUDA model a layer at a time.
Result<std::map<std::string, Int4Quantized>> run_gptq_on_gpu(const QuantizeModelOptions& o) {
  if (o.calibration.empty()) return invalid_argument("gptq: no calibration samples");
  CROSSPOINT_ASSIGN_OR_RETURN(auto model, Model::load(o.model_dir));
  GpuGptqReport report;
  CROSSPOINT_ASSIGN_OR_RETURN(auto results, gptq_quantize_on_gpu(*model, o.calibration, o.int4, &report));
  log_info(
      "quantize: GPTQ on the GPU took {:.1f} s ({:.1f} s upload, {:.1f} s calibration and quantisation of {} tokens in "
      "{} batches); GPU memory at most {:.2f} GiB (residual streams {:.2f} GiB, quantiser buffers {:.2f} GiB)",
      report.upload_s + report.calibrate_s, report.upload_s, report.calibrate_s, report.num_tokens, report.num_batches,
      static_cast<double>(report.peak_device_bytes) / (1ull << 30),
      static_cast<double>(report.residual_stream_bytes) / (1ull << 30),
      static_cast<double>(report.gptq_buffer_bytes) / (1ull << 30));
  return results;
}
#endif

Status write_quantized(const QuantizeModelOptions& o, const ModelConfig& config, const std::string& dir);

}  // namespace

Status quantize_model(const QuantizeModelOptions& o) {
  if (o.device != "cpu" && o.device != "cuda")
    return invalid_argument("quantize: device '" + o.device + "' is not cpu or cuda");
#ifndef CROSSPOINT_HAVE_CUDA
  if (o.device == "cuda") return unsupported("quantize --device cuda: this build has no CUDA backend");
#else
  if (o.device == "cuda") {
    int gpus = 0;
    if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
      (void)cudaGetLastError();
      return unsupported("quantize --device cuda: no CUDA GPU is visible");
    }
  }
#endif
  CROSSPOINT_ASSIGN_OR_RETURN(ModelConfig config, load_model_config(o.model_dir));
  if (!config.quantization_config_json.empty())
    return unsupported(o.model_dir + "/config.json already has a quantization_config; quantize a dense checkpoint");
  if (o.scheme == QuantizeScheme::kW4A16 && o.int4.group_size != -1) {
    // Every linear's in_features (hidden and intermediate size) must be a multiple of the group.
    const int64_t g = o.int4.group_size;
    for (int64_t k : {config.hidden_size, config.intermediate_size, config.num_attention_heads * config.head_dim}) {
      if (g <= 0 || k % g != 0) {
        int64_t hint = 128;
        while (hint > 8 && (config.hidden_size % hint || config.intermediate_size % hint)) hint /= 2;
        return invalid_argument("--group-size " + std::to_string(g) + " does not divide in_features " +
                                std::to_string(k) + " of " + o.model_dir + " (try --group-size " +
                                std::to_string(hint) + ")");
      }
    }
  }
  CROSSPOINT_RETURN_IF_ERROR(check_out_dir(o));
  const Status written = write_quantized(o, config, partial_dir(o));
  if (!written.is_ok()) {
    std::error_code ec;
    fs::remove_all(partial_dir(o), ec);
    return written;
  }
  CROSSPOINT_RETURN_IF_ERROR(publish_out_dir(o));
  log_info("quantize: wrote {}", o.out_dir);
  return Status::ok();
}

namespace {

// The checkpoint into `dir`.
Status write_quantized(const QuantizeModelOptions& o, const ModelConfig& config, const std::string& dir) {
#ifdef CROSSPOINT_HAVE_CUDA
  std::unique_ptr<GpuWeightQuantizer> gpu;
  if (o.device == "cuda" && o.scheme != QuantizeScheme::kW4A16) {
    CROSSPOINT_ASSIGN_OR_RETURN(gpu, GpuWeightQuantizer::create());
  }
#endif
  CROSSPOINT_ASSIGN_OR_RETURN(auto tensors, SafetensorsModel::open_dir(o.model_dir));
  const std::vector<std::string> prefixes = linear_prefixes(config);

  std::map<std::string, Int4Quantized> int4;
  if (o.scheme == QuantizeScheme::kW4A16 && o.int4_method == Int4Method::kGptq) {
#ifdef CROSSPOINT_HAVE_CUDA
    if (o.device == "cuda") {
      CROSSPOINT_ASSIGN_OR_RETURN(int4, run_gptq_on_gpu(o));
    } else {
      CROSSPOINT_ASSIGN_OR_RETURN(int4, run_gptq(o, config));
    }
#else
    CROSSPOINT_ASSIGN_OR_RETURN(int4, run_gptq(o, config));
#endif
  }
  if (o.scheme == QuantizeScheme::kW4A16 && o.int4_method == Int4Method::kRtn && o.device == "cuda")
    log_info("quantize: RTN needs no calibration and runs on the CPU");

  std::map<std::string, std::vector<TensorToWrite>> replaced;  // "<prefix>.weight" -> new tensors
  ProgressBar progress("quantize", prefixes.size());
  size_t done = 0;
  for (const std::string& prefix : prefixes) {
    CROSSPOINT_ASSIGN_OR_RETURN(const TensorInfo* w, tensors->require(prefix + ".weight"));
    if (!is_float_weight_dtype(w->dtype) || w->shape.size() != 2)
      return corrupt(w->file + ": tensor " + w->name + " is not a 2-D float weight");
    const int64_t N = w->shape[0], K = w->shape[1];
    std::vector<TensorToWrite>& out = replaced[w->name];
#ifdef CROSSPOINT_HAVE_CUDA
    if (gpu != nullptr) {
      const bool fp8 = o.scheme == QuantizeScheme::kW8A8Fp8;
      CROSSPOINT_ASSIGN_OR_RETURN(GpuQuantizedWeight q, gpu->quantize(*w, fp8 ? cuda::WeightQuantScheme::kFp8E4M3
                                                                              : cuda::WeightQuantScheme::kInt8));
      out.push_back({prefix + ".weight", fp8 ? DType::kF8E4M3 : DType::kI8, {N, K}, std::move(q.weight)});
      out.push_back({prefix + ".weight_scale", DType::kF32, {N, 1}, to_bytes(q.scale)});
      progress.update(++done);
      continue;
    }
#endif
    if (o.scheme == QuantizeScheme::kW8A8Fp8) {
      const Fp8Quantized q = quantize_fp8_per_channel(read_weight(*w).data(), N, K);
      out.push_back({prefix + ".weight", DType::kF8E4M3, {N, K}, q.weight});
      out.push_back({prefix + ".weight_scale", DType::kF32, {N, 1}, to_bytes(q.scale)});
    } else if (o.scheme == QuantizeScheme::kW8A8Int8) {
      const Int8Quantized q = quantize_int8_per_channel(read_weight(*w).data(), N, K);
      out.push_back({prefix + ".weight", DType::kI8, {N, K}, to_bytes(q.weight)});
      out.push_back({prefix + ".weight_scale", DType::kF32, {N, 1}, to_bytes(q.scale)});
    } else {
      if (o.int4_method == Int4Method::kRtn) {
        const std::vector<float> w_nk = read_weight(*w);
        std::vector<float> w_t(static_cast<size_t>(K * N));  // [K, N]
        global_thread_pool().parallel_for(static_cast<size_t>(K), [&](size_t begin, size_t end) {
          for (int64_t k = static_cast<int64_t>(begin); k < static_cast<int64_t>(end); ++k)
            for (int64_t n = 0; n < N; ++n) w_t[k * N + n] = w_nk[n * K + k];
        });
        auto q = rtn_quantize_int4(w_t.data(), K, N, o.int4);
        if (!q.is_ok()) return Status(q.status().code(), w->name + ": " + q.status().message());
        int4[prefix] = std::move(q).value();
      }
      auto it = int4.find(prefix);
      if (it == int4.end()) return internal_error("quantize: no int4 result for " + prefix);
      out = pack_gptq_tensors(it->second, prefix);
    }
    progress.update(++done);
  }
  progress.finish();
#ifdef CROSSPOINT_HAVE_CUDA
  if (gpu != nullptr)
    log_info("quantize: weights quantised on the GPU, {:.1f} MiB of GPU memory at most",
             static_cast<double>(gpu->peak_device_bytes()) / (1 << 20));
#endif

  std::vector<TensorToWrite> all;
  for (const std::string& name : tensors->tensor_names()) {
    auto it = replaced.find(name);
    if (it != replaced.end()) {
      for (auto& t : it->second) all.push_back(std::move(t));
    } else {
      all.push_back(copy_tensor(*tensors->find(name)));
    }
  }
  CROSSPOINT_RETURN_IF_ERROR(write_safetensors(dir + "/model.safetensors", all));

  CROSSPOINT_ASSIGN_OR_RETURN(std::string config_text, read_text(o.model_dir + "/config.json"));
  nlohmann::json config_json = nlohmann::json::parse(config_text, nullptr, false);
  if (!config_json.is_object()) return corrupt(o.model_dir + "/config.json is not a JSON object");
  std::string quant_json;
  if (o.scheme == QuantizeScheme::kW8A8Fp8) {
    quant_json = fp8_dynamic_quantization_config_json(Fp8Config{}, {"lm_head"});  // tied or not, the head stays dense
  } else if (o.scheme == QuantizeScheme::kW8A8Int8) {
    quant_json = int8_dynamic_quantization_config_json({"lm_head"});
  } else {
    GptqConfig gptq;
    gptq.group_size = o.int4.group_size;
    gptq.desc_act = o.int4.act_order;
    gptq.sym = o.int4.sym;
    gptq.static_groups = o.int4.static_groups && o.int4_method == Int4Method::kGptq;
    quant_json = gptq_quantization_config_json(gptq, o.int4.damp_percent, true);
  }
  config_json["quantization_config"] = nlohmann::json::parse(quant_json);
  CROSSPOINT_RETURN_IF_ERROR(write_text(dir + "/config.json", config_json.dump(2) + "\n"));
  for (const std::string& name : tokenizer_file_names()) {
    std::error_code ec;
    const fs::path src = fs::path(o.model_dir) / name;
    if (fs::exists(src, ec)) fs::copy_file(src, fs::path(dir) / name, fs::copy_options::overwrite_existing, ec);
    if (ec) return io_error("copying " + src.string() + ": " + ec.message());
  }
  return Status::ok();
}

}  // namespace
}  // namespace crosspoint
