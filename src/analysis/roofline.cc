#include "analysis/roofline.h"

#include <algorithm>

namespace crosspoint::analysis {

RooflineCell analyze_cell(const CellMeasurement& cell, Precision precision, const DecodeCost& cost,
                          const HardwareCeilings& hardware) {
  RooflineCell out;
  out.precision = cell.precision;
  out.concurrency = cell.concurrency;
  // The decode steps' batch: the server's samples while a request ran; else the whole-run
  // mean, which counts idle gaps, never below 1 when requests completed.
  out.batch_measured = cell.busy_running_batch.has_value() || cell.mean_running_batch.has_value();
  if (cell.busy_running_batch) {
    out.batch = *cell.busy_running_batch;
  } else if (cell.mean_running_batch) {
    out.batch = *cell.mean_running_batch;
    if (out.batch < 1 && cell.num_completed > 0) {
      out.batch = 1;
      out.batch_raised_to_one = true;
    }
  } else {
    out.batch = std::max(1.0, cell.concurrency);
  }
  out.mean_context_tokens = cell.mean_context_tokens.value_or(0);

  out.tensor_parallel_size = cost.tensor_parallel_size;
  out.all_reduce_bytes_per_step = out.batch * cost.all_reduce_bytes_per_token;
  out.weight_bytes_per_step = cost.weight_bytes_per_step;
  out.kv_bytes_per_step = out.batch * out.mean_context_tokens * cost.kv_bytes_per_context_token;
  out.bytes_per_step = out.weight_bytes_per_step + out.kv_bytes_per_step;
  out.flops_per_token = cost.flops_per_token + out.mean_context_tokens * cost.attention_flops_per_context_token;
  out.flops_per_step = out.batch * out.flops_per_token;
  out.arithmetic_intensity = out.bytes_per_step > 0 ? out.flops_per_step / out.bytes_per_step : 0;

  out.bandwidth_gb_s = hardware.bandwidth_gb_s;
  out.peak_tflops = math_peak_tflops(precision, hardware, &out.peak_fell_back_to_fp16);
  out.critical_intensity = critical_intensity(out.peak_tflops, out.bandwidth_gb_s);

  if (out.bandwidth_gb_s > 0) out.memory_bound_tpot_ms = out.bytes_per_step / (out.bandwidth_gb_s * 1e9) * 1e3;
  if (out.peak_tflops > 0) out.compute_bound_tpot_ms = out.flops_per_step / (out.peak_tflops * 1e12) * 1e3;
  out.bound_tpot_ms = std::max(out.memory_bound_tpot_ms, out.compute_bound_tpot_ms);
  out.compute_bound = out.compute_bound_tpot_ms > out.memory_bound_tpot_ms;

  if (cell.median_tpot_ms && *cell.median_tpot_ms > 0) {
    out.measured_tpot_ms = *cell.median_tpot_ms;
    out.effective_bandwidth_gb_s = out.bytes_per_step / (out.measured_tpot_ms * 1e-3) / 1e9;
    out.bandwidth_utilisation = out.memory_bound_tpot_ms / out.measured_tpot_ms;
    out.overhead_ms = out.measured_tpot_ms - out.bound_tpot_ms;
    out.achieved_tflops = out.flops_per_step / (out.measured_tpot_ms * 1e-3) / 1e12;
  }
  if (cell.output_throughput_tok_s && out.peak_tflops > 0)
    out.compute_utilisation = *cell.output_throughput_tok_s * out.flops_per_token / (out.peak_tflops * 1e12);
  return out;
}

}  // namespace crosspoint::analysis
