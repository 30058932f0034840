// compiler/frontend/external_data.h — reading an ONNX tensor's external data safely.
//
// A tensor with data_location = EXTERNAL names a file (`location`, relative to the
// model's folder) and optionally a byte `offset` and `length`. The model is
// untrusted input (issue 13), so the file must be a regular file inside the
// model's folder after resolving `..` and symbolic links (ONNX Runtime's rule):
// no /etc/passwd, no ../../ escape, no symlink pointing out, no FIFO (opened
// without blocking), and offset/length/size are checked against the tensor's
// byte size before anything is read or allocated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "keel/status.h"

namespace keel::frontend {

struct ExternalDataRef {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;  // -1: not given (then `expected` bytes are read)
};

// `what` names the tensor ("initializer 'w'"); every error is one line naming it
// and the location. kInvalidArgument for a location outside the folder or an
// inconsistent offset/length, kNotFound for a missing file, kIoError for a short file.
Result<std::vector<uint8_t>> ReadExternalData(const std::string& model_dir, const ExternalDataRef& ref,
                                              const std::string& what, uint64_t expected);

}  // namespace keel::frontend
