// compiler/ops/all_ops.cc — see all_ops.h.
#include "compiler/ops/all_ops.h"

namespace keel::ops {

void RegisterAllOps(Registry& r) {
  RegisterElementwiseMathOps(r);
  RegisterElementwiseBinaryOps(r);
  RegisterShapeOps(r);
  RegisterMovementOps(r);
  RegisterGemmOps(r);
  RegisterConvOps(r);
  RegisterPoolOps(r);
  RegisterReduceOps(r);
  RegisterNormalizationOps(r);
  RegisterResizeOps(r);
  RegisterGridSampleOps(r);
}

}  // namespace keel::ops
