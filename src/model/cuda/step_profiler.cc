#include "model/cuda/step_profiler.h"

#include "kernels/cuda/cuda_status.h"

namespace crosspoint::cuda {

const char* step_op_name(StepOp op) {
  switch (op) {
    case StepOp::kEmbedding: return "embedding";
    case StepOp::kInputNorm: return "input_norm";
    case StepOp::kQkvProj: return "qkv_proj";
    case StepOp::kRopeKvWrite: return "rope_kv_write";
    case StepOp::kAttention: return "attention";
    case StepOp::kOProj: return "o_proj";
    case StepOp::kPostAttentionNorm: return "post_attention_norm";
    case StepOp::kGateUpProj: return "gate_up_proj";
    case StepOp::kSiluMul: return "silu_mul";
    case StepOp::kDownProj: return "down_proj";
    case StepOp::kFinalNormGather: return "final_norm_gather";
    case StepOp::kLmHead: return "lm_head";
    case StepOp::kArgmax: return "argmax";
  }
  return "?";
}

const StepOpTime* StepProfile::find(StepOp op) const {
  for (const StepOpTime& t : ops)
    if (t.op == op) return &t;
  return nullptr;
}

StepProfile summarize_step(const std::vector<StepOp>& marks, const std::vector<float>& gaps_ms) {
  CROSSPOINT_CHECK(marks.size() == gaps_ms.size(), "summarize_step: one gap per mark");
  double total_ms[kNumStepOps] = {};
  int32_t num_calls[kNumStepOps] = {};
  StepProfile profile;
  for (size_t i = 0; i < marks.size(); ++i) {
    const auto idx = static_cast<int32_t>(marks[i]);
    CROSSPOINT_CHECK(idx >= 0 && idx < kNumStepOps, "summarize_step: unknown StepOp");
    total_ms[idx] += gaps_ms[i];
    num_calls[idx] += 1;
    profile.total_ms += gaps_ms[i];
  }
  for (int32_t idx = 0; idx < kNumStepOps; ++idx) {
    if (num_calls[idx] == 0) continue;
    profile.ops.push_back({static_cast<StepOp>(idx), total_ms[idx], num_calls[idx]});
  }
  profile.num_marks = static_cast<int32_t>(marks.size());
  return profile;
}

StepProfiler::~StepProfiler() {
  for (cudaEvent_t e : events_) (void)cudaEventDestroy(e);
}

Status StepProfiler::record_next_event() {
  if (num_recorded_ == events_.size()) {
    cudaEvent_t e = nullptr;
    CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaEventCreate(&e), "step profiler: cudaEventCreate");
    events_.push_back(e);
  }
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaEventRecord(events_[num_recorded_], stream_), "step profiler: cudaEventRecord");
  ++num_recorded_;
  return Status::ok();
}

Status StepProfiler::begin_step(cudaStream_t stream) {
  if (open_) {
    if (stream == stream_) return Status::ok();
    return invalid_argument("step profiler: a step is already open on another stream");
  }
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(stream, &capture), "step profiler: cudaStreamIsCapturing");
  if (capture != cudaStreamCaptureStatusNone)
    return invalid_argument(
        "step profiler: the stream is being captured into a CUDA graph; only eager steps can be profiled "
        "(unset the profiler before capturing)");
  stream_ = stream;
  error_ = Status::ok();
  num_recorded_ = 0;
  marks_.clear();
  CROSSPOINT_RETURN_IF_ERROR(record_next_event());
  open_ = true;
  return Status::ok();
}

void StepProfiler::mark(StepOp op) {
  if (!open_) {
    if (error_.is_ok())
      error_ = invalid_argument(std::string("step profiler: mark(") + step_op_name(op) +
                                ") with no open step (call begin_step first)");
    return;
  }
  if (!error_.is_ok()) return;
  error_ = record_next_event();
  if (error_.is_ok()) marks_.push_back(op);
}

Result<StepProfile> StepProfiler::finish() {
  const bool was_open = open_;
  open_ = false;
  if (!error_.is_ok()) {
    Status error = error_;
    error_ = Status::ok();
    return error;
  }
  if (!was_open) return invalid_argument("step profiler: finish() with no open step");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(events_[num_recorded_ - 1]),
                                  "step profiler: cudaEventSynchronize");
  std::vector<float> gaps_ms(marks_.size());
  for (size_t i = 0; i < marks_.size(); ++i) {
    CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&gaps_ms[i], events_[i], events_[i + 1]),
                                    "step profiler: cudaEventElapsedTime");
  }
  return summarize_step(marks_, gaps_ms);
}

}  // namespace crosspoint::cuda
