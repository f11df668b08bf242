#include "quant/cuda/gpu_gptq_calibration.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "common/log.h"
#include "common/progress_bar.h"
#include "kernels/cuda/cuda_status.h"
#include "model/cuda/cuda_model.h"
#include "model/host_forward_batch.h"
#include "quant/cuda/gpu_gptq.h"
#include "quant/sequence_forward.h"

namespace crosspoint {
namespace {

constexpr int32_t kMaxBatchSequences = 256;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A checkpoint linear inside a fused one: its prefix leaf and its output columns.
struct FusedPart {
  std::string leaf;
  int64_t columns;
};

std::vector<FusedPart> parts_of(const ModelConfig& c, cuda::LayerLinear which) {
  const int64_t q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim;
  switch (which) {
    case cuda::LayerLinear::kQkv: return {{"self_attn.q_proj", q}, {"self_attn.k_proj", kv}, {"self_attn.v_proj", kv}};
    case cuda::LayerLinear::kOProj: return {{"self_attn.o_proj", c.hidden_size}};
    case cuda::LayerLinear::kGateUp:
      return {{"mlp.gate_proj", c.intermediate_size}, {"mlp.up_proj", c.intermediate_size}};
    case cuda::LayerLinear::kDownProj: break;
  }
  return {{"mlp.down_proj", c.hidden_size}};
}

// Output columns [n0, n0 + width) of a fused result.
Int4Quantized columns_of(const Int4Quantized& fused, int64_t n0, int64_t width, const std::vector<double>& loss) {
  const int64_t K = fused.in_features, N = fused.out_features, groups = K / fused.group_size;
  Int4Quantized out;
  out.in_features = K;
  out.out_features = width;
  out.group_size = fused.group_size;
  out.g_idx = fused.g_idx;
  out.q.resize(static_cast<size_t>(K * width));
  out.scales.resize(static_cast<size_t>(groups * width));
  out.zeros.resize(static_cast<size_t>(groups * width));
  for (int64_t k = 0; k < K; ++k) std::copy_n(&fused.q[k * N + n0], width, &out.q[k * width]);
  for (int64_t g = 0; g < groups; ++g) {
    std::copy_n(&fused.scales[g * N + n0], width, &out.scales[g * width]);
    std::copy_n(&fused.zeros[g * N + n0], width, &out.zeros[g * width]);
  }
  for (int64_t n = n0; n < n0 + width; ++n) out.loss += loss[n];
  return out;
}

class DevicePeak {
 public:
  void sample() {
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) == cudaSuccess) peak_ = std::max(peak_, total - free);
  }
  size_t peak() const { return peak_; }

 private:
  size_t peak_ = 0;
};

}  // namespace

Result<std::map<std::string, Int4Quantized>> gptq_quantize_on_gpu(const Model& model,
                                                                  const std::vector<std::vector<int32_t>>& calibration,
                                                                  const Int4QuantOptions& options,
                                                                  GpuGptqReport* report) {
  if (calibration.empty()) return invalid_argument("gptq: no calibration samples");
  const ModelConfig& c = model.config();
  int64_t total = 0;
  int32_t longest = 0;
  for (const auto& s : calibration) {
    if (s.empty()) return invalid_argument("gptq: an empty calibration sample");
    total += static_cast<int64_t>(s.size());
    longest = std::max(longest, static_cast<int32_t>(s.size()));
  }
  const auto t0 = std::chrono::steady_clock::now();
  DevicePeak peak;
  peak.sample();

  // Batches of whole samples, in order.
  const int32_t batch_tokens = std::max(longest, static_cast<int32_t>(std::min<int64_t>(total, kGpuGptqBatchTokens)));
  std::vector<std::vector<std::vector<int32_t>>> batches(1);
  int32_t in_batch = 0;
  for (const auto& s : calibration) {
    if (!batches.back().empty() && (in_batch + static_cast<int32_t>(s.size()) > batch_tokens ||
                                    static_cast<int32_t>(batches.back().size()) == kMaxBatchSequences)) {
      batches.emplace_back();
      in_batch = 0;
    }
    batches.back().push_back(s);
    in_batch += static_cast<int32_t>(s.size());
  }
  int32_t most_seqs = 0;
  for (const auto& b : batches) most_seqs = std::max(most_seqs, static_cast<int32_t>(b.size()));

  cuda::CudaModelOptions o;
  o.max_num_tokens = batch_tokens;
  o.max_num_seqs = most_seqs;
  o.max_num_logits = most_seqs;
  o.max_model_len = (longest + o.block_size - 1) / o.block_size * o.block_size;
  CROSSPOINT_ASSIGN_OR_RETURN(auto gpu, cuda::CudaModel::create(model, o));
  for (int32_t i = 0; i < gpu->num_layers(); ++i)
    for (auto which :
         {cuda::LayerLinear::kQkv, cuda::LayerLinear::kOProj, cuda::LayerLinear::kGateUp, cuda::LayerLinear::kDownProj})
      if (gpu->layer_linear(i, which).format != cuda::CudaLinearFormat::kFp16)
        return invalid_argument("gptq on the GPU: " + gpu->layer_linear(i, which).name +
                                " is not dense; quantise a dense (f32, f16 or bf16) checkpoint");
  const double upload_s = seconds_since(t0);
  const cudaStream_t stream = gpu->stream();

  std::vector<HostForwardBatch> hosts(batches.size());
  int32_t most_blocks = 0;
  for (size_t b = 0; b < batches.size(); ++b) {
    int32_t blocks = 0;
    CROSSPOINT_RETURN_IF_ERROR(
        build_sequence_batch(batches[b], /*all_positions=*/false, o.block_size, hosts[b], &blocks));
    most_blocks = std::max(most_blocks, blocks);
  }
  CROSSPOINT_ASSIGN_OR_RETURN(cuda::CudaKvCache kv, gpu->make_kv_cache(most_blocks));
  CROSSPOINT_ASSIGN_OR_RETURN(cuda::StepInputStaging inputs, gpu->make_step_inputs());
  std::vector<cuda::DeviceBuffer> streams(batches.size());
  size_t stream_bytes = 0;
  for (size_t b = 0; b < batches.size(); ++b) {
    const size_t bytes = gpu->residual_stream_bytes(hosts[b].num_tokens());
    CROSSPOINT_ASSIGN_OR_RETURN(streams[b], cuda::DeviceBuffer::allocate(bytes, "GPTQ calibration residual stream"));
    stream_bytes += bytes;
  }
  log_info(
      "quantize: GPTQ on the GPU over {} samples, {} tokens in {} batches of up to {} tokens; residual streams {:.1f} "
      "MiB",
      calibration.size(), total, batches.size(), batch_tokens, static_cast<double>(stream_bytes) / (1 << 20));

  // Runs layer `layer` (or the part of it the probe asks for) over every batch.
  auto over_batches = [&](int32_t layer, const cuda::LayerProbe* probe, bool save) -> Status {
    for (size_t b = 0; b < batches.size(); ++b) {
      const ForwardBatch view = hosts[b].view();
      CROSSPOINT_ASSIGN_OR_RETURN(cuda::CudaForwardBatch device,
                                  inputs.upload(view, kv, view.max_blocks_per_seq, view.num_tokens(), stream));
      if (layer < 0) {
        CROSSPOINT_RETURN_IF_ERROR(gpu->embed(device));
      } else {
        CROSSPOINT_RETURN_IF_ERROR(gpu->load_residual_stream(streams[b].as(), view.num_tokens()));
        CROSSPOINT_RETURN_IF_ERROR(gpu->run_layer(layer, device, kv, probe));
      }
      if (save) CROSSPOINT_RETURN_IF_ERROR(gpu->save_residual_stream(streams[b].as(), view.num_tokens()));
      // The staging is reused by the next batch.
      CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "GPTQ calibration pass");
    }
    return Status::ok();
  };

  CROSSPOINT_ASSIGN_OR_RETURN(auto gptq, GpuGptq::create(stream));
  CROSSPOINT_RETURN_IF_ERROR(over_batches(-1, nullptr, /*save=*/true));
  std::map<std::string, Int4Quantized> results;
  const cuda::LayerLinear order[] = {cuda::LayerLinear::kQkv, cuda::LayerLinear::kOProj, cuda::LayerLinear::kGateUp,
                                     cuda::LayerLinear::kDownProj};
  ProgressBar progress("quantize (GPTQ on the GPU)", static_cast<size_t>(gpu->num_layers()) * 4);
  size_t done = 0;
  for (int32_t layer = 0; layer < gpu->num_layers(); ++layer) {
    for (cuda::LayerLinear which : order) {
      cuda::CudaLinear& linear = gpu->layer_linear(layer, which);
      CROSSPOINT_RETURN_IF_ERROR(gptq->begin_hessian(linear.in_features));
      cuda::LayerProbe probe;
      probe.stop_before = which;
      probe.observe = [&](const uint16_t* x, int32_t rows) { return gptq->add_rows(x, rows); };
      CROSSPOINT_RETURN_IF_ERROR(over_batches(layer, &probe, /*save=*/false));
      peak.sample();
      const Status factored = gptq->factor(options);
      if (!factored.is_ok()) return Status(factored.code(), linear.name + ": " + factored.message());
      std::vector<double> column_loss;
      auto fused = gptq->quantize(linear.weight.as<uint16_t>(), linear.out_features, linear.in_features, options,
                                  /*gptq=*/true, /*write_back=*/true, &column_loss);
      if (!fused.is_ok()) return Status(fused.status().code(), linear.name + ": " + fused.status().message());
      peak.sample();
      int64_t n0 = 0;
      for (const FusedPart& part : parts_of(c, which)) {
        const std::string prefix = "model.layers." + std::to_string(layer) + "." + part.leaf;
        Int4Quantized q = columns_of(fused.value(), n0, part.columns, column_loss);
        log_debug("quantize: {} ({} x {}) gptq loss {:.4g}", prefix, part.columns, linear.in_features, q.loss);
        results[prefix] = std::move(q);
        n0 += part.columns;
      }
      if (n0 != linear.out_features)
        return internal_error(linear.name + ": the fused parts do not add up to its outputs");
      progress.update(++done);
    }
    CROSSPOINT_RETURN_IF_ERROR(over_batches(layer, nullptr, /*save=*/true));
  }
  progress.finish();
  if (report != nullptr) {
    report->num_tokens = total;
    report->num_batches = static_cast<int64_t>(batches.size());
    report->upload_s = upload_s;
    report->calibrate_s = seconds_since(t0) - upload_s;
    report->peak_device_bytes = peak.peak();
    report->residual_stream_bytes = stream_bytes;
    report->gptq_buffer_bytes = gptq->peak_device_bytes();
  }
  return results;
}

}  // namespace crosspoint
