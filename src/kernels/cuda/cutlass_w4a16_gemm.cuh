// The CUTLASS kernel type behind cutlass_w4a16_gemm (cutlass_w4a16_gemm.h), instantiated per
// tile in cutlass_w4a16_gemm_<tile>.cu; the reordered weight layout, shared with the packing.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "common/status.h"
#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/mixed_dtype_utils.hpp"
#include "kernels/cuda/cutlass_w4a16_kernels.h"
#include "kernels/cuda/programmatic_launch.cuh"

namespace crosspoint::cuda::cutlass_w4a16 {

// Each thread's 8 int4 values of a wgmma A fragment contiguous, in the order [0,2,4,6,1,3,5,7]
// that CUTLASS's int4 -> fp16 conversion takes two values per instruction from.
using ValueShuffle = cute::Layout<cute::Shape<cute::_2, cute::_4>, cute::Stride<cute::_4, cute::_1>>;
using ReorderAtom = decltype(cutlass::compute_memory_reordering_atom<cutlass::half_t,
                                                                     cute::Layout<cute::Shape<cute::_1, cute::_1>>,
                                                                     ValueShuffle>());
using StrideW = cutlass::detail::TagToStrideA_t<cutlass::layout::RowMajor>;
using LayoutW = decltype(cute::tile_to_shape(ReorderAtom{}, cute::Layout<cute::Shape<int, int, int>, StrideW>{}));

// (n, k, slice) -> element offset of an [N, K] weight cut into `slices` K slices. The tiles of
// the reordering atom run channel-fastest, so the slices of one layout are its K ranges.
inline LayoutW weight_layout(int n, int k_slice, int slices) {
  return cute::tile_to_shape(ReorderAtom{}, cute::make_shape(n, k_slice, slices));
}

// Non-persistent (64-channel tiles, one consumer warpgroup) or cooperative (128-channel tiles)
// kernels, scale-only dequantisation in the mainloop, fp16 or fp32 out.
template <int kTileChannels, int kTileTokens, typename Out>
struct SwappedGemm {
  using TileShape = cute::Shape<cute::Int<kTileChannels>, cute::Int<kTileTokens>, cute::_64>;
  using ClusterShape = cute::Shape<cute::_1, cute::_1, cute::_1>;
  static constexpr bool kCooperative = kTileChannels >= 128;
  using Schedule = cute::conditional_t<kCooperative, cutlass::gemm::KernelTmaWarpSpecializedCooperative,
                                       cutlass::gemm::KernelTmaWarpSpecialized>;
  using EpilogueSchedule = cute::conditional_t<kCooperative, cutlass::epilogue::TmaWarpSpecializedCooperative,
                                               cutlass::epilogue::TmaWarpSpecialized>;
  using LayoutD = cutlass::layout::ColumnMajor;  // D[n, m], channel contiguous: y[m][n]
  static constexpr int kAlignD = 128 / cutlass::sizeof_bits<Out>::value;
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, LayoutD, kAlignD, Out, LayoutD, kAlignD,
      EpilogueSchedule>::CollectiveOp;
  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, cute::tuple<cutlass::int4b_t, cutlass::half_t>, LayoutW,
      32, cutlass::half_t, cutlass::layout::ColumnMajor, 8, float, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
      Schedule>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, Mainloop, Epilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

template <typename G>
Status run(const Args& a, cudaStream_t stream) {
  using Kernel = typename G::Kernel;
  using Out = typename Kernel::ElementD;
  const int k_slice = a.k / a.k_splits;
  typename Kernel::StrideB stride_x{};
  cute::get<0>(stride_x) = a.x_stride;
  cute::get<2>(stride_x) = k_slice;
  typename G::Mainloop::StrideScale stride_s{};
  cute::get<1>(stride_s) = a.n;
  cute::get<2>(stride_s) = static_cast<int64_t>(a.n) * (k_slice / a.group_size);
  typename Kernel::StrideD stride_y{};
  cute::get<1>(stride_y) = a.out_stride;
  cute::get<2>(stride_y) = a.out_split_stride;
  typename G::Gemm::Arguments args{
      cutlass::gemm::GemmUniversalMode::kGemm,
      {a.n, a.m, k_slice, a.k_splits},
      {reinterpret_cast<const cutlass::int4b_t*>(a.weight), weight_layout(a.n, k_slice, a.k_splits),
       reinterpret_cast<const cutlass::half_t*>(a.x), stride_x, reinterpret_cast<const cutlass::half_t*>(a.scales),
       stride_s, a.group_size},
      {{1.0f, 0.0f}, nullptr, stride_y, static_cast<Out*>(a.out), stride_y}};
  typename G::Gemm gemm;
  if (gemm.can_implement(args) != cutlass::Status::kSuccess) {
    return unsupported("cutlass_w4a16_gemm: CUTLASS cannot run m = " + std::to_string(a.m) + ", n = " +
                       std::to_string(a.n) + ", k = " + std::to_string(a.k) + ", group " +
                       std::to_string(a.group_size) + " with " + std::to_string(a.k_splits) + " K slices");
  }
  if (a.check_only) return Status::ok();
  if (gemm.initialize(args, nullptr, stream) != cutlass::Status::kSuccess) {
    return internal_error("cutlass_w4a16_gemm: CUTLASS initialize failed");
  }
  const cutlass::Status status = gemm.run(stream, nullptr, programmatic_launch_enabled());
  if (status != cutlass::Status::kSuccess) {
    return internal_error(std::string("cutlass_w4a16_gemm: launch failed: ") + cutlassGetStatusString(status) + ", " +
                          cudaGetErrorString(cudaGetLastError()));
  }
  return Status::ok();
}

}  // namespace crosspoint::cuda::cutlass_w4a16
