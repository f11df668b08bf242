// The roofline of one measured cell: what a decode step must read and compute, the fastest
// it could possibly run on the device, and how close the measurement came.
#pragma once

#include <string>
#include <vector>

#include "analysis/cell_measurement.h"
#include "analysis/decode_cost.h"
#include "analysis/hardware_table.h"
#include "analysis/precision.h"

namespace crosspoint::analysis {

struct RooflineCell {
  std::string precision;        // label of the cell
  double concurrency = 0;       // client-side cap
  double batch = 0;             // sequences per decode step used below, B
  bool batch_measured = false;  // false: B assumed = concurrency (no server samples)
  // B is the whole-run mean (no decode-step samples) raised to 1: requests ran, so every
  // decode step had at least one sequence.
  bool batch_raised_to_one = false;
  double mean_context_tokens = 0;  // per running sequence; 0 = unknown, KV left out

  // Ranks the model is split over: the bytes and FLOPs here are one rank's, run on its own
  // device beside the others, and the step's all-reduces move all_reduce_bytes_per_step.
  int tensor_parallel_size = 1;
  double all_reduce_bytes_per_step = 0;  // per rank, B * DecodeCost::all_reduce_bytes_per_token

  double weight_bytes_per_step = 0;  // streamed once per step
  double kv_bytes_per_step = 0;      // B * context * KV bytes per token
  double bytes_per_step = 0;         // weights + KV
  double flops_per_token = 0;        // weights + attention at the mean context
  double flops_per_step = 0;         // B * flops_per_token
  double arithmetic_intensity = 0;   // flops_per_step / bytes_per_step, FLOP/byte

  double bandwidth_gb_s = 0;            // ceiling used
  double peak_tflops = 0;               // math peak of this precision on the device
  bool peak_fell_back_to_fp16 = false;  // device lacks this precision's math
  double critical_intensity = 0;        // peak / bandwidth, FLOP/byte

  double memory_bound_tpot_ms = 0;   // bytes_per_step / bandwidth
  double compute_bound_tpot_ms = 0;  // flops_per_step / peak
  double bound_tpot_ms = 0;          // the larger of the two: no step can be faster
  bool compute_bound = false;        // arithmetic_intensity >= critical_intensity

  double measured_tpot_ms = 0;          // median TPOT of the cell; 0 when not measured
  double effective_bandwidth_gb_s = 0;  // bytes_per_step / measured TPOT
  double bandwidth_utilisation = 0;     // memory_bound_tpot_ms / measured, fraction
  double achieved_tflops = 0;           // flops_per_step / measured TPOT: the decode math rate
  double compute_utilisation = 0;       // output tok/s * flops_per_token / peak, fraction
  double overhead_ms = 0;               // measured - bound: dequantisation, launch, scheduling
};

// The roofline of one cell. B is the measured mean running batch when the cell has it, else
// the concurrency (the study's assumption; flagged by batch_measured). KV is counted at the
// measured mean context when the cell has it.
RooflineCell analyze_cell(const CellMeasurement& cell, Precision precision, const DecodeCost& cost,
                          const HardwareCeilings& hardware);

}  // namespace crosspoint::analysis
