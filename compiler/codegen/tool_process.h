// compiler/codegen/tool_process.h — running the external tools a kernel
// library build needs (ptxas, the C compiler driver as linker) and the file
// plumbing around them, for the CPU and NVPTX back ends.
//
// RunTool spawns `program args...` (PATH lookup when program has no slash),
// with stdout and stderr redirected to `log_path`, and waits for it.
// ScratchDir is a private mkdtemp directory removed (with the files created
// through Path()) when destroyed.
//
// Thread-safety: functions are reentrant; a ScratchDir belongs to one thread.
// Errors: kIoError naming the tool and carrying its log on failure; kNotFound
// when the program cannot be started at all (so callers can fall back).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "keel/status.h"

namespace keel::codegen {

// `role` (e.g. "linker"), when given, names the tool in messages:
// "linker 'cc' failed: <log>" instead of "'cc' failed: <log>".
Status RunTool(const std::string& program, const std::vector<std::string>& args, const std::string& log_path,
               const std::string& role = "");

Status WriteBytes(const std::string& path, const void* data, size_t size);
Result<std::vector<uint8_t>> ReadBytes(const std::string& path);
// Writes `bytes` to `path` through a temporary file and rename (readers never
// see a partial file); mode 0755.
Status ReplaceFile(const std::string& path, const std::vector<uint8_t>& bytes);

class ScratchDir {
 public:
  ScratchDir() = default;
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir();
  // /tmp/<prefix>-XXXXXX.
  Status Create(const std::string& prefix = "keel-nvptx");
  // dir/name, remembered for removal.
  std::string Path(const std::string& name);

 private:
  std::string dir_;
  std::vector<std::string> files_;
};

}  // namespace keel::codegen
