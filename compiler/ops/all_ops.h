// compiler/ops/all_ops.h — the op families; RegisterAllOps adds every one of
// them to a registry (called once by Registry::Get). Adding a family: one
// Register*Ops function in its own file, one line here and in all_ops.cc.
#pragma once

namespace keel::ops {

class Registry;

void RegisterAllOps(Registry& r);
void RegisterRefusedOps(Registry& r);

void RegisterElementwiseMathOps(Registry& r);
void RegisterElementwiseBinaryOps(Registry& r);
void RegisterShapeOps(Registry& r);
void RegisterMovementOps(Registry& r);
void RegisterGemmOps(Registry& r);
void RegisterConvOps(Registry& r);
void RegisterConvTransposeOps(Registry& r);
void RegisterDeformConvOps(Registry& r);
void RegisterPoolOps(Registry& r);
void RegisterReduceOps(Registry& r);
void RegisterNormalizationOps(Registry& r);
void RegisterAttentionOps(Registry& r);
void RegisterFusedAttentionOps(Registry& r);
void RegisterSoftmaxOps(Registry& r);
void RegisterScanOps(Registry& r);
void RegisterMovementPadTileOps(Registry& r);
void RegisterMovementGenerateOps(Registry& r);
void RegisterMovementGatherScatterOps(Registry& r);
void RegisterMovementSplitOps(Registry& r);
void RegisterEinsumOps(Registry& r);
void RegisterRecurrentOps(Registry& r);
void RegisterResizeOps(Registry& r);
void RegisterGridSampleOps(Registry& r);
void RegisterLossOps(Registry& r);
void RegisterQuantizeOps(Registry& r);
void RegisterQuantizeMatMulOps(Registry& r);
void RegisterQuantizeConvOps(Registry& r);
void RegisterDecoderOps(Registry& r);
void RegisterCropCol2ImOps(Registry& r);
void RegisterRoiAlignOps(Registry& r);
void RegisterLinearAttentionOps(Registry& r);
void RegisterControlFlowOps(Registry& r);
void RegisterSignalWindowOps(Registry& r);
void RegisterSignalDftOps(Registry& r);
void RegisterLinalgOps(Registry& r);
void RegisterBitCastOps(Registry& r);
void RegisterIm2ColOps(Registry& r);

}  // namespace keel::ops
