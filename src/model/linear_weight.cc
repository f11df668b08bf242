#include "model/linear_weight.h"

#include "kernels/linear.h"

namespace crosspoint {

DenseLinearWeight::DenseLinearWeight(const void* weight, DType dtype, int64_t out_features, int64_t in_features,
                                     std::vector<float> bias)
    : weight_(weight), dtype_(dtype), out_features_(out_features), in_features_(in_features), bias_(std::move(bias)) {
  CROSSPOINT_CHECK(bias_.empty() || static_cast<int64_t>(bias_.size()) == out_features_,
                   "DenseLinearWeight: bias length must equal out_features");
}

Status DenseLinearWeight::forward(const float* x, int64_t num_rows, int64_t x_row_stride, float* y) const {
  LinearArgs args;
  args.x = x;
  args.x_row_stride = x_row_stride;
  args.weight = weight_;
  args.weight_dtype = dtype_;
  args.bias = bias_.empty() ? nullptr : bias_.data();
  args.y = y;
  args.num_rows = num_rows;
  args.in_features = in_features_;
  args.out_features = out_features_;
  return linear(args);
}

size_t DenseLinearWeight::weight_bytes() const {
  return static_cast<size_t>(out_features_) * in_features_ * dtype_size(dtype_) + bias_.size() * sizeof(float);
}

std::string DenseLinearWeight::format_name() const { return std::string(dtype_name(dtype_)); }

}  // namespace crosspoint
