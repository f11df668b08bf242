// The CUTLASS kernel type behind cutlass_fp8_gemm (cutlass_fp8_gemm.h) and, with int8 operands
// and int32 sums, cutlass_int8_gemm (cutlass_int8_gemm.h): one instantiation per tile in its own
// cutlass_{fp8,int8}_gemm_<tile>.cu so that they compile in parallel. Only those files include
// this header: each instantiation takes about a minute of nvcc.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "common/status.h"
#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "kernels/cuda/cutlass_fp8_kernels.h"
#include "kernels/cuda/cutlass_launch.cuh"

namespace crosspoint::cuda::cutlass_fp8 {

// CUTLASS's D[n, m] = w_scale[n] * (x_scale[m] * acc[n, m]): n is GEMM-M (channels), m GEMM-N.
// How CUTLASS schedules the tiles: one consumer warpgroup per CTA, a CTA per tile (kSingle);
// persistent CTAs whose two consumer warpgroups take turns on tiles, one's epilogue under the
// other's mainloop (kPingpong); persistent CTAs whose two consumer warpgroups split each
// 128-channel tile between them (kCooperative). None splits K.
enum class Schedule { kSingle, kPingpong, kCooperative };

template <Schedule kSchedule>
struct ScheduleTypes {
  using Mainloop = cutlass::gemm::KernelTmaWarpSpecialized;
  using Epilogue = cutlass::epilogue::TmaWarpSpecialized;
};
template <>
struct ScheduleTypes<Schedule::kPingpong> {
  using Mainloop = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
  using Epilogue = cutlass::epilogue::TmaWarpSpecialized;
};
template <>
struct ScheduleTypes<Schedule::kCooperative> {
  using Mainloop = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
  using Epilogue = cutlass::epilogue::TmaWarpSpecializedCooperative;
};

// ElementT: cutlass::float_e4m3_t (fp32 sums) or int8_t (int32 sums, exact; the epilogue turns
// each into the nearest float before the scales, as kernels/int8.h's reference does).
template <int kTileChannels, int kTileTokens, int kTileK, Schedule kSchedule = Schedule::kSingle,
          typename ElementT = cutlass::float_e4m3_t>
struct SwappedGemm {
  static constexpr Schedule kScheduleKind = kSchedule;
  using Out = cutlass::half_t;
  using Element = ElementT;
  using Accumulator = std::conditional_t<std::is_same_v<ElementT, int8_t>, int32_t, float>;
  using TileShape = cute::Shape<cute::Int<kTileChannels>, cute::Int<kTileTokens>, cute::Int<kTileK>>;
  using ClusterShape = cute::Shape<cute::_1, cute::_1, cute::_1>;
  using WScale = cutlass::epilogue::fusion::Sm90ColBroadcast<0, TileShape, float>;  // one per channel (GEMM row)
  using XScale = cutlass::epilogue::fusion::Sm90RowBroadcast<0, TileShape, float>;  // one per token (GEMM column)
  using TimesXScale = cutlass::epilogue::fusion::Sm90EVT<
      cutlass::epilogue::fusion::Sm90Compute<cutlass::multiplies, float, float,
                                             cutlass::FloatRoundStyle::round_to_nearest>,
      XScale, cutlass::epilogue::fusion::Sm90AccFetch>;
  using Fusion = cutlass::epilogue::fusion::Sm90EVT<
      cutlass::epilogue::fusion::Sm90Compute<cutlass::multiplies, Out, float,
                                             cutlass::FloatRoundStyle::round_to_nearest>,
      WScale, TimesXScale>;
  // D[n, m] column-major: channel n contiguous, i.e. y[m][n] row-major.
  using LayoutD = cutlass::layout::ColumnMajor;
  static constexpr int kAlignD = 128 / cutlass::sizeof_bits<Out>::value;
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, Accumulator, float, void, LayoutD, kAlignD, Out, LayoutD,
      kAlignD, typename ScheduleTypes<kSchedule>::Epilogue, Fusion>::CollectiveOp;
  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Element, cutlass::layout::RowMajor, 16, Element,
      cutlass::layout::ColumnMajor, 16, Accumulator, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
      typename ScheduleTypes<kSchedule>::Mainloop>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, Mainloop, Epilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

template <typename G>
Status run(const Args& a, cudaStream_t stream) {
  using Kernel = typename G::Kernel;
  constexpr const char* kName = std::is_same_v<typename G::Element, int8_t> ? "cutlass_int8_gemm" : "cutlass_fp8_gemm";
  typename Kernel::StrideA stride_w{};
  cute::get<0>(stride_w) = a.w_stride;
  typename Kernel::StrideB stride_x{};
  cute::get<0>(stride_x) = a.xq_stride;
  typename Kernel::StrideD stride_y{};
  cute::get<1>(stride_y) = a.y_stride;
  cute::get<2>(stride_y) = a.y_stride * (a.m > 0 ? a.m : 1);  // one batch; TMA wants 16-byte multiples anyway
  typename G::Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                   {a.n, a.m, a.k, 1},
                                   {reinterpret_cast<const typename G::Element*>(a.wq), stride_w,
                                    reinterpret_cast<const typename G::Element*>(a.xq), stride_x},
                                   {{}, nullptr, stride_y, reinterpret_cast<typename G::Out*>(a.y), stride_y}};
  args.epilogue.thread = {{a.w_scale}, {{a.x_scale}, {}, {}}, {}};
  // FP8: sums leave the tensor cores for fp32 registers once per k-block, the fewest promotions
  // the mainloop allows (a whole number of its 32-deep MMAs per k-block). int8 sums are exact.
  if constexpr (std::is_same_v<typename G::Accumulator, float>)
    args.mainloop.mma_promotion_interval = cute::size<2>(typename G::TileShape{}) / 32;
  if constexpr (G::kScheduleKind != Schedule::kSingle) args.hw_info.sm_count = a.num_sms;
  typename G::Gemm gemm;
  if (gemm.can_implement(args) != cutlass::Status::kSuccess) {
    return unsupported(std::string(kName) + ": CUTLASS cannot run m = " + std::to_string(a.m) +
                       ", n = " + std::to_string(a.n) + ", k = " + std::to_string(a.k) + " (strides or alignment)");
  }
  if (G::Gemm::get_workspace_size(args) != 0) {  // neither schedule splits K, so neither needs one
    return internal_error(std::string(kName) + ": the kernel asks for a workspace this launcher does not give");
  }
  if (a.check_only) return Status::ok();
  return launch_cutlass_gemm(gemm, args, stream, kName);
}

}  // namespace crosspoint::cuda::cutlass_fp8
