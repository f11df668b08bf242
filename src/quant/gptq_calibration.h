// GPTQ calibration inside one Model::forward. The model is loaded with the format this
// session hands out: every transformer linear is a dense weight wrapped so that the first
// time a layer's input arrives (all calibration tokens at once), its Hessian H = X^T X is
// formed, GPTQ quantises every linear sharing that input (q/k/v, gate/up), and the layer
// continues with its quantised weights. Later layers therefore see the outputs of the
// already-quantised earlier ones, as in AutoGPTQ's layer-by-layer loop with true_sequential
// (order: q/k/v, o, gate/up, down).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/linear_weight_format.h"
#include "quant/int4_quantizer.h"

namespace crosspoint {

class GptqCalibrationSession {
 public:
  // method_gptq false gives RTN through the same path (the calibration run is then only a
  // check that the quantised model runs).
  GptqCalibrationSession(Int4QuantOptions options, bool method_gptq, int64_t num_layers);

  // The format to put in ModelLoadOptions::linear_formats; valid while the session lives.
  std::shared_ptr<const LinearWeightFormat> format();

  // Quantised layers by tensor prefix ("model.layers.0.self_attn.q_proj").
  const std::map<std::string, Int4Quantized>& results() const { return results_; }
  // The first error met inside a forward (forward itself then returns it too).
  const Status& status() const { return status_; }

  // Called by the wrapped layers.
  struct Member;
  void register_member(const std::string& group_key, Member* member);
  Status quantize_group(const std::string& group_key, const float* x, int64_t num_rows, int64_t x_row_stride);

 private:
  Int4QuantOptions options_;
  bool method_gptq_;
  int64_t num_layers_;
  std::map<std::string, std::vector<Member*>> groups_;
  std::map<std::string, Int4Quantized> results_;
  Status status_;
  size_t num_groups_done_ = 0;
};

// X^T X of x [num_rows, K] (rows x_row_stride apart) added into h [K, K] (double).
void accumulate_hessian(const float* x, int64_t num_rows, int64_t x_row_stride, int64_t K, std::vector<double>& h);

}  // namespace crosspoint
