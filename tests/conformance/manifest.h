// tests/conformance/manifest.h — the case list dump_cases.py writes (manifest.tsv).
//
// One record per line, tab-separated (see dump_cases.py):
//   onnx <version>
//   case <name> <category> <reason> <op> <ops,...> <rtol> <atol>
//   in   <name> <dtype> <d0,d1,..|-> <file>      (following their case line)
//   out  <name> <dtype> <d0,d1,..|-> <file>
// category is "tensor" or "excluded:<why>"; files are relative to cases/<name>/.
//
// Errors: kIoError (unreadable file), kInvalidArgument naming the line of a
// malformed record.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "keel/data_type.h"
#include "keel/status.h"

namespace keel::conformance {

struct TensorSpec {
  std::string name;
  DataType dtype = DataType::kF32;
  std::vector<int64_t> shape;
  std::string file;  // relative to the case folder
  uint64_t ByteSize() const;
};

struct Case {
  std::string name;
  std::string category;  // "tensor" or "excluded:<why>"
  std::string reason;    // why excluded (empty for tensor cases)
  std::string op;        // the op the case tests (per-op table)
  std::vector<std::string> ops;
  double rtol = 1e-3;
  double atol = 1e-7;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  bool is_tensor() const { return category == "tensor"; }
};

struct Manifest {
  std::string onnx_version;  // the "onnx <version>" record
  std::vector<Case> cases;
};

Result<Manifest> LoadManifest(const std::string& path);

// "f32" -> kF32 etc. (the names of keel/dtype_list.h).
bool DataTypeFromName(const std::string& name, DataType& out);

}  // namespace keel::conformance
