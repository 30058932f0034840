// tests/conformance/manifest.cc — see the header.
#include "tests/conformance/manifest.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace keel::conformance {
namespace {

std::vector<std::string> Split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string field;
  std::stringstream in(line);
  while (std::getline(in, field, sep)) out.push_back(field);
  if (!line.empty() && line.back() == sep) out.push_back("");
  return out;
}

bool ParseDouble(const std::string& s, double& v) {
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return !s.empty() && *end == '\0';
}

bool ParseShape(const std::string& s, std::vector<int64_t>& shape) {
  shape.clear();
  if (s == "-") return true;
  for (const std::string& d : Split(s, ',')) {
    char* end = nullptr;
    const long long v = std::strtoll(d.c_str(), &end, 10);
    if (d.empty() || *end != '\0' || v < 0) return false;
    shape.push_back(v);
  }
  return true;
}

}  // namespace

uint64_t TensorSpec::ByteSize() const {
  uint64_t n = DataTypeSize(dtype);
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

bool DataTypeFromName(const std::string& name, DataType& out) {
#define KEEL_X(tok, val, bytes, str, kind) \
  if (name == str) {                       \
    out = DataType::k##tok;                \
    return true;                           \
  }
  KEEL_DTYPE_LIST(KEEL_X)
#undef KEEL_X
  return false;
}

Result<Manifest> LoadManifest(const std::string& path) {
  std::ifstream f(path);
  if (!f) return IoError("cannot open manifest '" + path + "' (run dump_cases.py first)");
  Manifest manifest;
  std::vector<Case>& cases = manifest.cases;
  std::string line;
  int lineno = 0;
  while (std::getline(f, line)) {
    ++lineno;
    if (line.empty()) continue;
    const std::vector<std::string> v = Split(line, '\t');
    auto bad = [&](const std::string& why) {
      return InvalidArgument(path + ":" + std::to_string(lineno) + ": " + why);
    };
    if (v[0] == "onnx" && v.size() == 2) {
      manifest.onnx_version = v[1];
    } else if (v[0] == "case") {
      if (v.size() != 8) return bad("a case record has 8 fields");
      Case c;
      c.name = v[1];
      c.category = v[2];
      c.reason = v[3];
      c.op = v[4];
      if (v[5] != "-") c.ops = Split(v[5], ',');
      if (!ParseDouble(v[6], c.rtol) || !ParseDouble(v[7], c.atol)) return bad("bad rtol/atol");
      cases.push_back(std::move(c));
    } else if (v[0] == "in" || v[0] == "out") {
      if (v.size() != 5) return bad("an in/out record has 5 fields");
      if (cases.empty()) return bad("an in/out record before any case");
      TensorSpec t;
      t.name = v[1];
      if (!DataTypeFromName(v[2], t.dtype)) return bad("unknown dtype '" + v[2] + "'");
      if (!ParseShape(v[3], t.shape)) return bad("bad shape '" + v[3] + "'");
      t.file = v[4];
      (v[0] == "in" ? cases.back().inputs : cases.back().outputs).push_back(std::move(t));
    } else {
      return bad("unknown record '" + v[0] + "'");
    }
  }
  return manifest;
}

}  // namespace keel::conformance
