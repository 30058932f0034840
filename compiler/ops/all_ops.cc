// compiler/ops/all_ops.cc — see all_ops.h.
#include "compiler/ops/all_ops.h"

namespace keel::ops {

void RegisterAllOps(Registry& r) {
  RegisterRefusedOps(r);
  RegisterElementwiseMathOps(r);
  RegisterElementwiseBinaryOps(r);
  RegisterShapeOps(r);
  RegisterMovementOps(r);
  RegisterGemmOps(r);
  RegisterConvOps(r);
  RegisterConvTransposeOps(r);
  RegisterDeformConvOps(r);
  RegisterPoolOps(r);
  RegisterReduceOps(r);
  RegisterNormalizationOps(r);
  RegisterAttentionOps(r);
  RegisterFusedAttentionOps(r);
  RegisterSoftmaxOps(r);
  RegisterScanOps(r);
  RegisterMovementPadTileOps(r);
  RegisterMovementGenerateOps(r);
  RegisterMovementGatherScatterOps(r);
  RegisterMovementSplitOps(r);
  RegisterEinsumOps(r);
  RegisterRecurrentOps(r);
  RegisterResizeOps(r);
  RegisterGridSampleOps(r);
  RegisterLossOps(r);
  RegisterQuantizeOps(r);
  RegisterQuantizeMatMulOps(r);
  RegisterQuantizeConvOps(r);
  RegisterDecoderOps(r);
  RegisterCropCol2ImOps(r);
  RegisterRoiAlignOps(r);
  RegisterLinearAttentionOps(r);
  RegisterControlFlowOps(r);
  RegisterSignalWindowOps(r);
  RegisterSignalDftOps(r);
  RegisterLinalgOps(r);
  RegisterBitCastOps(r);
  RegisterIm2ColOps(r);
}

}  // namespace keel::ops
