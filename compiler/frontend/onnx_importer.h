// compiler/frontend/onnx_importer.h — ONNX model → Keel graph IR.
//
// Parses an ONNX ModelProto (the default domain at the opsets the op registry
// implements: compiler/ops/registry.h), turns initializers (raw_data, typed
// fields, external data files) and Constant nodes into constant Values, graph
// inputs into typed IR inputs (static shapes: dynamic dims must be overridden
// through ImportOptions) and every node into an IR node keeping its ONNX op_type
// and attributes. Each node's ONNX version (the newest since-version of the op
// at the model's opset) is checked against the registry, and the op's
// `normalize` hook turns that version's form into the one internal form.
// Trailing outputs that nothing reads are dropped.
//
// Errors (values, never exceptions or aborts) name the problem, the node and the
// model file: unsupported opset/op/attribute value/dtype (Unsupported), truncated or
// corrupt file (InvalidArgument), missing file (NotFound / IoError), undefined
// value or missing initializer (InvalidArgument).
//
// Ownership: the returned Graph is owned by the caller. Thread-safety: ImportOnnx
// may run concurrently on distinct inputs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "keel/status.h"

namespace keel::frontend {

struct ImportOptions {
  // Full static shapes for named graph inputs (replaces what the model declares).
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // Values for symbolic dims by dim_param name (e.g. {"batch_size", 1}).
  std::map<std::string, int64_t> dim_params;
  // When >= 1, every remaining dynamic dim gets this value (e.g. batch size 1).
  int64_t default_dynamic_dim = -1;
  // Keep Identity nodes (the simplify pass removes them) instead of aliasing at import.
  bool keep_identity = false;
  // Graph inputs replaced by constants ("frozen"): name -> the value's bytes in the
  // input's element type and (resolved, static) shape, little-endian row-major.
  // A frozen input becomes an initializer and is no longer an input of the
  // compiled model, so ops needing a compile-time constant there (Reshape's
  // shape, TopK's k, ...) compile. Errors: an unknown name, or a byte count that
  // does not match the input's type.
  std::map<std::string, std::vector<uint8_t>> frozen_inputs;
};

// Imports the model at `path`. External data files are resolved relative to the
// model's folder.
Result<std::unique_ptr<ir::Graph>> ImportOnnx(const std::string& path, const ImportOptions& options);

// Imports a serialized ModelProto held in memory; `model_dir` resolves external
// data and `model_name` is used in error messages.
Result<std::unique_ptr<ir::Graph>> ImportOnnxBytes(const std::string& bytes, const std::string& model_dir,
                                                   const std::string& model_name, const ImportOptions& options);

}  // namespace keel::frontend
