// compiler/codegen/tool_process.cc — see tool_process.h.
#include "compiler/codegen/tool_process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

extern char** environ;

namespace keel::codegen {

Status RunTool(const std::string& program, const std::vector<std::string>& args, const std::string& log_path,
               const std::string& role) {
  const std::string tool = (role.empty() ? "" : role + " ") + "'" + program + "'";
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, program.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return NotFound("cannot run " + tool + ": " + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return IoError("waiting for " + tool + " failed");
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) return NotFound(tool + " not found");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::ifstream log(log_path);
    std::stringstream ss;
    ss << log.rdbuf();
    return IoError(tool + " failed: " + ss.str());
  }
  return Status::Ok();
}

Status WriteBytes(const std::string& path, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return IoError("cannot open " + path + " for writing");
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) return IoError("cannot write " + path);
  return Status::Ok();
}

Result<std::vector<uint8_t>> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read " + path);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return bytes;
}

Status ReplaceFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::string tmp = path + ".tmp";
  KEEL_RETURN_IF_ERROR(WriteBytes(tmp, bytes.data(), bytes.size()));
  chmod(tmp.c_str(), 0755);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return IoError("cannot rename " + tmp + " to " + path);
  }
  return Status::Ok();
}

ScratchDir::~ScratchDir() {
  if (dir_.empty()) return;
  for (const std::string& f : files_) std::remove(f.c_str());
  rmdir(dir_.c_str());
}

Status ScratchDir::Create(const std::string& prefix) {
  std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
  if (!mkdtemp(tmpl.data())) return IoError("cannot create a temporary directory");
  dir_ = tmpl;
  return Status::Ok();
}

std::string ScratchDir::Path(const std::string& name) {
  std::string p = dir_ + "/" + name;
  files_.push_back(p);
  return p;
}

}  // namespace keel::codegen
