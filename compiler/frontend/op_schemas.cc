// compiler/frontend/op_schemas.cc — the list of ONNX ops the importer accepts
// (their normalized forms are documented in op_schemas.h).
#include "compiler/frontend/op_schemas.h"

#include <algorithm>

namespace keel::frontend {
namespace {
const std::vector<std::string> kSupportedOps = {
    "Add",       "AveragePool", "BatchNormalization", "Cast",    "Clip",     "Concat",
    "Constant",  "Conv",        "Div",                "Dropout", "Erf",      "Flatten",
    "Gather",    "Gemm",        "GlobalAveragePool",  "Identity", "LayerNormalization",
    "MatMul",    "MaxPool",     "Mul",                "Pow",     "ReduceMean", "Relu",
    "Reshape",   "Shape",       "Sigmoid",            "Slice",   "Softmax",  "Sqrt",
    "Squeeze",   "Sub",         "Tanh",               "Transpose", "Unsqueeze"};

}  // namespace

const std::vector<std::string>& SupportedOnnxOps() {
  static const std::vector<std::string>* ops = [] {
    auto* v = new std::vector<std::string>(kSupportedOps);
    std::sort(v->begin(), v->end());
    return v;
  }();
  return *ops;
}

bool IsSupportedOnnxOp(const std::string& op_type) {
  const auto& ops = SupportedOnnxOps();
  return std::binary_search(ops.begin(), ops.end(), op_type);
}

}  // namespace keel::frontend
