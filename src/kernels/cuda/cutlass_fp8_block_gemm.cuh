// The CUTLASS kernel type behind cutlass_fp8_block_gemm, included only by its per-tile .cu files.
// Swapped operands as in cutlass_fp8_gemm.cuh: GEMM-M is the weight's channels (64 a tile, one
// weight scale each K block), GEMM-N the tokens (one activation scale each per K block).
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "common/status.h"
#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/detail/blockwise_scale_layout.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "kernels/cuda/cutlass_fp8_block_kernels.h"
#include "kernels/cuda/cutlass_launch.cuh"

namespace crosspoint::cuda::cutlass_fp8_block {

template <int kTileTokens>
struct BlockScaledGemm {
  using Out = cutlass::half_t;
  using Element = cutlass::float_e4m3_t;
  using TileShape = cute::Shape<cute::_64, cute::Int<kTileTokens>, cute::_128>;
  using ClusterShape = cute::Shape<cute::_1, cute::_1, cute::_1>;
  // Weight scales per 64 channels x 128 inputs, activation scales per token x 128 inputs, both
  // with the M/N blocks of one K block contiguous.
  using ScaleConfig =
      cutlass::detail::Sm90BlockwiseScaleConfig<64, 1, 128, cute::GMMA::Major::MN, cute::GMMA::Major::MN>;
  using LayoutSFA = decltype(ScaleConfig::deduce_layoutSFA());
  using LayoutSFB = decltype(ScaleConfig::deduce_layoutSFB());
  using LayoutD = cutlass::layout::ColumnMajor;  // D[n, t]: y[t][n] row-major
  static constexpr int kAlignD = 128 / cutlass::sizeof_bits<Out>::value;
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, LayoutD, kAlignD, Out, LayoutD, kAlignD,
      cutlass::epilogue::TmaWarpSpecialized>::CollectiveOp;
  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Element, cute::tuple<cutlass::layout::RowMajor, LayoutSFA>,
      16, Element, cute::tuple<cutlass::layout::ColumnMajor, LayoutSFB>, 16, float, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
      cutlass::gemm::KernelTmaWarpSpecializedPingpongFP8Blockwise>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, Mainloop, Epilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

template <typename G>
Status run(const CutlassFp8BlockArgs& a, int num_sms, cudaStream_t stream) {
  using Kernel = typename G::Kernel;
  typename Kernel::StrideA stride_w{};  // dense rows of K bytes
  cute::get<0>(stride_w) = a.k;
  typename Kernel::StrideB stride_x{};
  cute::get<0>(stride_x) = a.k;
  typename Kernel::StrideD stride_y{};  // dense rows of N outputs
  cute::get<1>(stride_y) = a.n;
  cute::get<2>(stride_y) = static_cast<int64_t>(a.n) * a.m;
  const auto problem = cute::make_shape(a.n, a.m, a.k, 1);
  typename G::Gemm::Arguments args{
      cutlass::gemm::GemmUniversalMode::kGemm,
      problem,
      {reinterpret_cast<const typename G::Element*>(a.wq), stride_w, reinterpret_cast<const typename G::Element*>(a.xq),
       stride_x, a.w_scale_m64, G::ScaleConfig::tile_atom_to_shape_SFA(problem), a.x_scale,
       G::ScaleConfig::tile_atom_to_shape_SFB(problem)},
      {{}, nullptr, stride_y, reinterpret_cast<typename G::Out*>(a.y), stride_y}};
  args.epilogue.thread.alpha = 1.0f;
  args.epilogue.thread.beta = 0.0f;
  args.hw_info.sm_count = num_sms;
  typename G::Gemm gemm;
  if (gemm.can_implement(args) != cutlass::Status::kSuccess) {
    return unsupported("cutlass_fp8_block_gemm: CUTLASS cannot run m = " + std::to_string(a.m) +
                       ", n = " + std::to_string(a.n) + ", k = " + std::to_string(a.k));
  }
  if (G::Gemm::get_workspace_size(args) != 0)
    return internal_error("cutlass_fp8_block_gemm: the kernel asks for a workspace this launcher does not give");
  if (a.check_only) return Status::ok();
  return launch_cutlass_gemm(gemm, args, stream, "cutlass_fp8_block_gemm");
}

}  // namespace crosspoint::cuda::cutlass_fp8_block
