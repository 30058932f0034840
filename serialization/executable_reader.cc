// serialization/executable_reader.cc — ReadExecutable: framing, FlatBuffers
// verification, version, data segment, table and per-function semantic checks.
//
// The checks run in the order of executable_reader.h so that each kind of damage
// is reported by the first check able to see it, with its own message. Every
// arithmetic on values from the file is overflow-checked (__builtin_*_overflow)
// because the file is untrusted input: a crafted executable must produce an
// error, never undefined behaviour in the VM.
#include "serialization/executable_reader.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "flatbuffers/flatbuffers.h"

namespace keel::ser {

namespace {

namespace fbs = ::keel::fb;
template <typename T>
using FbVec = flatbuffers::Vector<T>;

Status Bad(std::string m) { return InvalidExecutable(std::move(m)); }

std::string Str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Printable rendering of 4 identifier bytes.
std::string ShowIdentifier(const uint8_t* p) {
  std::string out;
  for (int i = 0; i < 4; ++i) {
    if (p[i] >= 0x20 && p[i] < 0x7f) {
      out += static_cast<char>(p[i]);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", p[i]);
      out += buf;
    }
  }
  return out;
}

// Error context: a string, or a callable returning one, evaluated only on error
// (the per-instruction checks are hot; building names eagerly dominated load time).
inline const std::string& Name(const std::string& s) { return s; }
template <typename F>
std::string Name(const F& f) {
  return f();
}

// FlatBuffers 2.0's verifier checks a vector's length field for 4-byte alignment
// only; a crafted file can place 8-byte elements (int64 shapes, attribute ints
// and floats) off their alignment, and reading them is undefined behaviour (found
// by fuzz/executable_fuzzer). Every such vector is checked here before it is read.
// An empty vector has nothing to read, and the FlatBuffers builder does not align
// those (keelc writes scalar shapes as empty vectors at 4 mod 8).
template <typename T>
bool Aligned(const FbVec<T>* v) {
  return v == nullptr || v->size() == 0 || reinterpret_cast<uintptr_t>(v->data()) % alignof(T) == 0;
}

// Element count of `shape` (null = scalar). Checks alignment, rank, dims >= 0 and
// overflow. `what` names the shape's owner in the error.
template <typename W>
Status CheckShape(const FbVec<int64_t>* shape, const W& what, uint64_t* elems) {
  uint64_t n = 1;
  if (!Aligned(shape)) return Bad(Name(what) + ": shape vector is not 8-byte aligned (corrupt file or unaligned buffer)");
  if (shape != nullptr) {
    if (shape->size() > kMaxRank) {
      return Bad(Name(what) + ": rank " + std::to_string(shape->size()) + " exceeds " + std::to_string(kMaxRank));
    }
    for (uint32_t i = 0; i < shape->size(); ++i) {
      const int64_t d = shape->Get(i);
      if (d < 0) return Bad(Name(what) + ": dimension " + std::to_string(i) + " is negative (" + std::to_string(d) + ")");
      if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) {
        return Bad(Name(what) + ": element count overflows 64 bits");
      }
    }
  }
  *elems = n;
  return Status::Ok();
}

template <typename W>
Status CheckDType(fbs::DType t, const W& what) {
  if (!IsValidDType(static_cast<uint8_t>(t))) {
    return Bad(Name(what) + ": dtype value " + std::to_string(static_cast<int>(t)) + " out of range");
  }
  return Status::Ok();
}

Status CheckDevice(fbs::DeviceKind d, const std::string& what) {
  if (!IsValidDeviceKind(static_cast<uint8_t>(d))) {
    return Bad(what + ": device value " + std::to_string(static_cast<int>(d)) + " out of range");
  }
  return Status::Ok();
}

// Byte size of a tensor: checked shape, valid dtype, elems * dtype size without overflow.
template <typename W>
Status CheckTensorBytes(const FbVec<int64_t>* shape, fbs::DType dtype, const W& what, uint64_t* elems,
                        uint64_t* bytes) {
  KEEL_RETURN_IF_ERROR(CheckDType(dtype, what));
  KEEL_RETURN_IF_ERROR(CheckShape(shape, what, elems));
  if (__builtin_mul_overflow(*elems, DTypeSize(FromFb(dtype)), bytes)) {
    return Bad(Name(what) + ": byte size overflows 64 bits");
  }
  return Status::Ok();
}

// ---- framing ------------------------------------------------------------------

constexpr size_t kMinFileSize = 12;  // size prefix + root offset + identifier

Status CheckFraming(std::span<const uint8_t> file, size_t* fb_size) {
  if (file.empty() || file.data() == nullptr) return Bad("empty file: not a Keel executable");
  if (reinterpret_cast<uintptr_t>(file.data()) % 8 != 0) {
    return InvalidArgument("executable bytes must be 8-byte aligned in memory");
  }
  if (file.size() < kMinFileSize) {
    return Bad("file too small (" + std::to_string(file.size()) + " bytes) to be a Keel executable");
  }
  if (std::memcmp(file.data() + 8, kFileIdentifier, 4) != 0) {
    return Bad("not a Keel executable (file identifier '" + ShowIdentifier(file.data() + 8) + "', expected '" +
               kFileIdentifier + "')");
  }
  uint32_t prefix = 0;
  std::memcpy(&prefix, file.data(), 4);  // little-endian hosts only (as FlatBuffers here)
  if (static_cast<uint64_t>(prefix) > file.size() - 4) {
    return Bad("truncated file: size prefix says the FlatBuffer has " + std::to_string(prefix) +
               " bytes but only " + std::to_string(file.size() - 4) + " follow it");
  }
  if (static_cast<uint64_t>(prefix) + 4 >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    return Bad("FlatBuffer part too large (" + std::to_string(prefix) + " bytes)");
  }
  *fb_size = static_cast<size_t>(prefix) + 4;
  return Status::Ok();
}

// Reads the version before the full verification, verifying only the root
// table header and its version field: a file of a newer major may change its
// layout, and must be reported as "newer" rather than as corrupt.
Status CheckVersion(std::span<const uint8_t> file, size_t fb_size, ExecutableView* view) {
  const Status corrupt = Bad("FlatBuffers verification failed: the root table is corrupt");
  uint32_t root_off = 0;
  std::memcpy(&root_off, file.data() + 4, 4);  // root offset, relative to the end of the size prefix
  const uint64_t table_pos = 4 + static_cast<uint64_t>(root_off);
  if (table_pos % 4 != 0 || table_pos + 4 > fb_size) return corrupt;
  // Executable inherits flatbuffers::Table privately; the object is the same bytes.
  const auto* table = reinterpret_cast<const flatbuffers::Table*>(file.data() + table_pos);
  flatbuffers::Verifier verifier(file.data(), fb_size);
  if (!table->VerifyTableStart(verifier) ||
      !table->VerifyField<fbs::FormatVersion>(verifier, fbs::Executable::VT_VERSION, 2)) {
    return corrupt;
  }
  const auto* v = table->GetStruct<const fbs::FormatVersion*>(fbs::Executable::VT_VERSION);
  if (v == nullptr) return Bad("missing format version");
  view->version_major = v->major();
  view->version_minor = v->minor();
  if (v->major() > kFormatVersionMajor) {
    return Unsupported("executable format " + std::to_string(v->major()) + ".x is newer than this runtime's " +
                       std::to_string(kFormatVersionMajor) + ".x");
  }
  if (v->major() < kFormatVersionMajor) {
    return Unsupported("executable format " + std::to_string(v->major()) + ".x is older than this runtime's " +
                       std::to_string(kFormatVersionMajor) + ".x and no longer supported");
  }
  return Status::Ok();
}

Status CheckDataSegment(const fbs::Executable* root, std::span<const uint8_t> file, size_t fb_size,
                        ExecutableView* view) {
  const uint64_t off = root->data_segment_offset();
  const uint64_t size = root->data_segment_size();
  if (off % kDataAlignment != 0) {
    return Bad("data segment offset " + std::to_string(off) + " is not 64-byte aligned");
  }
  if (off < fb_size) {
    return Bad("data segment offset " + std::to_string(off) + " overlaps the FlatBuffer (" +
               std::to_string(fb_size) + " bytes)");
  }
  uint64_t end = 0;
  if (__builtin_add_overflow(off, size, &end) || end > file.size()) {
    return Bad("data segment [" + std::to_string(off) + ", +" + std::to_string(size) +
               ") extends past the end of the file (" + std::to_string(file.size()) + " bytes)");
  }
  view->data_segment = file.subspan(static_cast<size_t>(off), static_cast<size_t>(size));
  return Status::Ok();
}

// ---- tables -------------------------------------------------------------------

Status CheckConstants(const fbs::Executable* root, uint64_t data_size) {
  const auto* constants = root->constants();
  if (constants == nullptr) return Status::Ok();
  for (uint32_t i = 0; i < constants->size(); ++i) {
    const fbs::Constant* c = constants->Get(i);
    const std::string what = "constant " + std::to_string(i) + " '" + Str(c->name()) + "'";
    KEEL_RETURN_IF_ERROR(CheckDevice(c->device(), what));
    uint64_t elems = 0, bytes = 0;
    KEEL_RETURN_IF_ERROR(CheckTensorBytes(c->shape(), c->dtype(), what, &elems, &bytes));
    if (c->size() != bytes) {
      return Bad(what + ": size " + std::to_string(c->size()) + " bytes != product(shape) * dtype size = " +
                 std::to_string(bytes));
    }
    if (c->offset() % kDataAlignment != 0) {
      return Bad(what + ": offset " + std::to_string(c->offset()) + " is not 64-byte aligned");
    }
    uint64_t end = 0;
    if (__builtin_add_overflow(c->offset(), c->size(), &end) || end > data_size) {
      return Bad(what + ": bytes [" + std::to_string(c->offset()) + ", +" + std::to_string(c->size()) +
                 ") lie outside the data segment (" + std::to_string(data_size) + " bytes)");
    }
  }
  return Status::Ok();
}

Status CheckTargets(const fbs::Executable* root) {
  const auto* targets = root->targets();
  if (targets == nullptr) return Status::Ok();
  for (uint32_t i = 0; i < targets->size(); ++i) {
    KEEL_RETURN_IF_ERROR(CheckDevice(targets->Get(i)->device(), "target " + std::to_string(i)));
  }
  return Status::Ok();
}

// The kernel library digest (format 1.1) is a SHA-256 or absent.
Status CheckLibraryDigest(const fbs::Executable* root) {
  const auto* sha = root->kernel_library_sha256();
  if (sha == nullptr) return Status::Ok();
  if (sha->size() != 32) {
    return Bad("kernel_library_sha256 has " + std::to_string(sha->size()) + " bytes, a SHA-256 has 32");
  }
  if (root->kernel_library_id() == nullptr) return Bad("kernel_library_sha256 without a kernel_library_id");
  return Status::Ok();
}

Status CheckLaunch(const fbs::LaunchConfig* l, const std::string& what) {
  if (l == nullptr) return Bad(what + ": cuda_generated kernel without a launch config");
  for (const auto* dims : {l->grid(), l->block()}) {
    const char* name = dims == l->grid() ? "grid" : "block";
    if (dims == nullptr || dims->size() != 3) return Bad(what + ": launch " + name + " must have 3 entries");
    for (uint32_t d = 0; d < 3; ++d) {
      if (dims->Get(d) == 0) return Bad(what + ": launch " + name + " dimension " + std::to_string(d) + " is 0");
    }
  }
  return Status::Ok();
}

Status CheckKernels(const fbs::Executable* root) {
  const auto* kernels = root->kernels();
  if (kernels == nullptr) return Status::Ok();
  for (uint32_t i = 0; i < kernels->size(); ++i) {
    const fbs::Kernel* k = kernels->Get(i);
    const std::string what = "kernel " + std::to_string(i) + " '" + Str(k->name()) + "'";
    if (k->name() == nullptr || k->name()->size() == 0) return Bad("kernel " + std::to_string(i) + ": missing name");
    if (!IsValidKernelKind(static_cast<uint8_t>(k->kind()))) {
      return Bad(what + ": kind value " + std::to_string(static_cast<int>(k->kind())) + " out of range");
    }
    KEEL_RETURN_IF_ERROR(CheckDevice(k->device(), what));
    switch (k->kind()) {
      case fbs::KernelKind::library:
        if (k->library_op() == nullptr || k->library_op()->size() == 0) {
          return Bad(what + ": library kernel without library_op");
        }
        break;
      case fbs::KernelKind::cuda_generated:
        if (k->device() != fbs::DeviceKind::cuda) return Bad(what + ": cuda_generated kernel on a non-cuda device");
        KEEL_RETURN_IF_ERROR(CheckLaunch(k->launch(), what));
        break;
      case fbs::KernelKind::cpu_generated:
        if (k->device() != fbs::DeviceKind::cpu) return Bad(what + ": cpu_generated kernel on a non-cpu device");
        break;
    }
    if (const auto* args = k->args()) {
      for (uint32_t a = 0; a < args->size(); ++a) {
        const fbs::KernelArg* arg = args->Get(a);
        const std::string awhat = what + " argument " + std::to_string(a);
        if (!IsValidArgAccess(static_cast<uint8_t>(arg->access()))) {
          return Bad(awhat + ": access value " + std::to_string(static_cast<int>(arg->access())) + " out of range");
        }
        uint64_t elems = 0, bytes = 0;
        KEEL_RETURN_IF_ERROR(CheckTensorBytes(arg->shape(), arg->dtype(), awhat, &elems, &bytes));
      }
    }
    if (const auto* attrs = k->attrs()) {
      for (uint32_t a = 0; a < attrs->size(); ++a) {
        const fbs::Attr* attr = attrs->Get(a);
        if (attr->key() == nullptr) return Bad(what + ": attribute " + std::to_string(a) + " without a key");
        if (!Aligned(attr->ints()) || !Aligned(attr->floats())) {
          return Bad(what + ": attribute '" + attr->key()->str() + "' values are not 8-byte aligned (corrupt file)");
        }
        // Sorted and unique: the schema's (key) attribute makes lookups binary searches.
        if (a > 0 && !(std::string_view(attrs->Get(a - 1)->key()->c_str(), attrs->Get(a - 1)->key()->size()) <
                       std::string_view(attr->key()->c_str(), attr->key()->size()))) {
          return Bad(what + ": attributes not sorted by key or key '" + attr->key()->str() + "' repeated");
        }
      }
    }
  }
  return Status::Ok();
}

Status CheckMemoryPlan(const fbs::Executable* root) {
  const fbs::MemoryPlan* plan = root->memory_plan();
  if (plan == nullptr) return Status::Ok();
  const uint32_t num_arenas = plan->arenas() ? plan->arenas()->size() : 0;
  for (uint32_t i = 0; i < num_arenas; ++i) {
    const fbs::Arena* a = plan->arenas()->Get(i);
    const std::string what = "memory plan arena " + std::to_string(i);
    KEEL_RETURN_IF_ERROR(CheckDevice(a->device(), what));
    if (!IsPowerOfTwo(a->alignment())) {
      return Bad(what + ": alignment " + std::to_string(a->alignment()) + " is not a power of two");
    }
  }
  if (plan->storages() == nullptr) return Status::Ok();
  for (uint32_t i = 0; i < plan->storages()->size(); ++i) {
    const fbs::PlannedStorage* s = plan->storages()->Get(i);
    const std::string what = "memory plan storage " + std::to_string(i);
    KEEL_RETURN_IF_ERROR(CheckDevice(s->device(), what));
    if (!IsPowerOfTwo(s->alignment())) {
      return Bad(what + ": alignment " + std::to_string(s->alignment()) + " is not a power of two");
    }
    if (s->arena() == -1) continue;
    if (s->arena() < -1 || static_cast<uint32_t>(s->arena()) >= num_arenas) {
      return Bad(what + ": arena index " + std::to_string(s->arena()) + " out of range (" +
                 std::to_string(num_arenas) + " arenas; -1 for run-time allocation)");
    }
    const fbs::Arena* a = plan->arenas()->Get(static_cast<uint32_t>(s->arena()));
    if (a->device() != s->device()) return Bad(what + ": device differs from its arena's");
    if (s->offset() % s->alignment() != 0) {
      return Bad(what + ": offset " + std::to_string(s->offset()) + " is not a multiple of its alignment " +
                 std::to_string(s->alignment()));
    }
    uint64_t end = 0;
    if (__builtin_add_overflow(s->offset(), s->size(), &end) || end > a->size()) {
      return Bad(what + ": [" + std::to_string(s->offset()) + ", +" + std::to_string(s->size()) +
                 ") lies outside arena " + std::to_string(s->arena()) + " (" + std::to_string(a->size()) +
                 " bytes)");
    }
  }
  return Status::Ok();
}

// ---- functions ----------------------------------------------------------------

// What a register holds at a point of the forward pass.
struct RegState {
  enum class Kind : uint8_t { kUndefined, kTensor, kStorage };
  Kind kind = Kind::kUndefined;
  fbs::DType dtype = fbs::DType::f32;     // kTensor
  fbs::DeviceKind device = fbs::DeviceKind::cpu;
  uint64_t elems = 0;                      // kTensor
  uint32_t slot = 0;                       // kStorage: memory_plan.storages index
  // Which AllocStorage binding the register holds (kStorage) or views (kTensor);
  // 0 for params and constants, which are never freed. Catches use after FreeStorage.
  uint32_t binding = 0;
  // kTensor from LoadConst: constants are shared, uploaded once, and must never be written.
  bool is_const = false;
  uint32_t const_index = 0;
};

const char* OpName(fbs::Op op) {
  const auto v = static_cast<uint8_t>(op);
  if (v > static_cast<uint8_t>(fbs::Op::MAX)) return "unknown op";
  return fbs::EnumNameOp(op);
}

class FunctionChecker {
 public:
  FunctionChecker(const fbs::Executable* root, const fbs::Function* fn, uint32_t index)
      : root_(root), fn_(fn), index_(index) {}

  Status Check();

 private:
  std::string Where() const {
    return "function '" + Str(fn_->name()) + "'" + (inst_ >= 0 ? " instruction " + std::to_string(inst_) + " (" +
                                                                     std::string(OpName(op_)) + ")"
                                                               : std::string());
  }
  Status Err(const std::string& m) const { return Bad(Where() + ": " + m); }

  Status CheckReg(uint32_t r, const std::string& role) const {
    if (r >= num_regs_) {
      return Err(role + "register " + std::to_string(r) + " out of range (num_registers " +
                 std::to_string(num_regs_) + ")");
    }
    return Status::Ok();
  }
  Status NeedTensor(uint32_t r, const std::string& role) const {
    KEEL_RETURN_IF_ERROR(CheckReg(r, role));
    if (regs_[r].kind == RegState::Kind::kUndefined) {
      return Err(role + "register " + std::to_string(r) + " is read before it is written");
    }
    if (regs_[r].kind != RegState::Kind::kTensor) {
      return Err(role + "register " + std::to_string(r) + " holds a storage, not a tensor");
    }
    if (const uint32_t b = regs_[r].binding; b != 0 && freed_at_[b] != 0) {
      return Err(role + "register " + std::to_string(r) + " views a storage freed by instruction " +
                 std::to_string(freed_at_[b] - 1));
    }
    return Status::Ok();
  }
  Status NeedStorage(uint32_t r, const std::string& role) const {
    KEEL_RETURN_IF_ERROR(CheckReg(r, role));
    if (regs_[r].kind == RegState::Kind::kUndefined) {
      return Err(role + "register " + std::to_string(r) + " is read before it is written");
    }
    if (regs_[r].kind != RegState::Kind::kStorage) {
      return Err(role + "register " + std::to_string(r) + " holds a tensor, not a storage");
    }
    return Status::Ok();
  }
  // dtype/element count/device of the tensor in `r` against an expected signature.
  template <typename W>
  Status MatchSig(uint32_t r, fbs::DType dtype, const FbVec<int64_t>* shape, const fbs::DeviceKind* device,
                  const std::string& role, const W& against_fn) const {
    uint64_t elems = 0, bytes = 0;
    KEEL_RETURN_IF_ERROR(
        CheckTensorBytes(shape, dtype, [&] { return Where() + ": " + Name(against_fn); }, &elems, &bytes));
    const RegState& s = regs_[r];
    if (s.dtype != dtype || s.elems != elems) {
      const std::string against = Name(against_fn);
      return Err(role + "register " + std::to_string(r) + " holds " + fbs::EnumNameDType(s.dtype) + "[" +
                 std::to_string(s.elems) + " elements] but " + against + " expects " + fbs::EnumNameDType(dtype) +
                 "[" + std::to_string(elems) + " elements]");
    }
    if (device != nullptr && s.device != *device) {
      const std::string against = Name(against_fn);
      return Err(role + "register " + std::to_string(r) + " is on " + fbs::EnumNameDeviceKind(s.device) + " but " +
                 against + " expects " + fbs::EnumNameDeviceKind(*device));
    }
    return Status::Ok();
  }

  Status CheckSigs(const FbVec<flatbuffers::Offset<fbs::TensorSig>>* sigs, const char* kind);
  Status CheckInstruction(const fbs::Instruction* inst, bool last);

  const fbs::Executable* root_;
  const fbs::Function* fn_;
  uint32_t index_;
  uint32_t num_regs_ = 0;
  int64_t inst_ = -1;
  fbs::Op op_ = fbs::Op::NONE;
  std::vector<RegState> regs_;
  std::vector<uint32_t> freed_at_{0};  // per binding id: 0 live, else 1 + index of the FreeStorage
};

Status FunctionChecker::CheckSigs(const FbVec<flatbuffers::Offset<fbs::TensorSig>>* sigs, const char* kind) {
  if (sigs == nullptr) return Status::Ok();
  for (uint32_t i = 0; i < sigs->size(); ++i) {
    const fbs::TensorSig* s = sigs->Get(i);
    const std::string what = Where() + ": " + kind + " " + std::to_string(i) + " '" + Str(s->name()) + "'";
    KEEL_RETURN_IF_ERROR(CheckDevice(s->device(), what));
    uint64_t elems = 0, bytes = 0;
    KEEL_RETURN_IF_ERROR(CheckTensorBytes(s->shape(), s->dtype(), what, &elems, &bytes));
  }
  return Status::Ok();
}

Status FunctionChecker::Check() {
  if (fn_->name() == nullptr || fn_->name()->size() == 0) {
    return Bad("function " + std::to_string(index_) + ": missing name");
  }
  num_regs_ = fn_->num_registers();
  if (num_regs_ > kMaxRegistersPerFunction) {
    return Err("num_registers " + std::to_string(num_regs_) + " exceeds the limit " +
               std::to_string(kMaxRegistersPerFunction));
  }
  KEEL_RETURN_IF_ERROR(CheckSigs(fn_->params(), "param"));
  KEEL_RETURN_IF_ERROR(CheckSigs(fn_->results(), "result"));
  const uint32_t num_params = fn_->params() ? fn_->params()->size() : 0;
  if (num_params > num_regs_) {
    return Err(std::to_string(num_params) + " params but only " + std::to_string(num_regs_) + " registers");
  }
  regs_.assign(num_regs_, RegState{});
  for (uint32_t p = 0; p < num_params; ++p) {
    const fbs::TensorSig* s = fn_->params()->Get(p);
    RegState& r = regs_[p];
    r.kind = RegState::Kind::kTensor;
    r.dtype = s->dtype();
    r.device = s->device();
    uint64_t bytes = 0;
    KEEL_RETURN_IF_ERROR(CheckTensorBytes(s->shape(), s->dtype(), [&] { return Where(); }, &r.elems, &bytes));
  }
  const auto* insts = fn_->instructions();
  if (insts == nullptr || insts->size() == 0) return Err("has no instructions");
  for (uint32_t i = 0; i < insts->size(); ++i) {
    inst_ = i;
    KEEL_RETURN_IF_ERROR(CheckInstruction(insts->Get(i), i + 1 == insts->size()));
  }
  return Status::Ok();
}

Status FunctionChecker::CheckInstruction(const fbs::Instruction* inst, bool last) {
  op_ = inst->op_type();
  if (op_ == fbs::Op::NONE) return Err("instruction has no op");
  if (static_cast<uint8_t>(op_) > static_cast<uint8_t>(fbs::Op::MAX)) {
    return Err("op type " + std::to_string(static_cast<int>(op_)) + " unknown to this runtime");
  }
  if (inst->op() == nullptr) return Err("op table missing");
  if (op_ != fbs::Op::Ret && last) return Err("the last instruction must be Ret");

  const fbs::MemoryPlan* plan = root_->memory_plan();
  const uint32_t num_slots = plan && plan->storages() ? plan->storages()->size() : 0;
  switch (op_) {
    case fbs::Op::AllocStorage: {
      const auto* x = inst->op_as_AllocStorage();
      KEEL_RETURN_IF_ERROR(CheckReg(x->dst(), "destination "));
      if (x->plan_slot() >= num_slots) {
        return Err("plan_slot " + std::to_string(x->plan_slot()) + " out of range (memory plan has " +
                   std::to_string(num_slots) + " storages)");
      }
      RegState& r = regs_[x->dst()];
      r = RegState{};
      r.kind = RegState::Kind::kStorage;
      r.slot = x->plan_slot();
      r.binding = static_cast<uint32_t>(freed_at_.size());
      freed_at_.push_back(0);
      r.device = plan->storages()->Get(x->plan_slot())->device();
      return Status::Ok();
    }
    case fbs::Op::AllocTensor: {
      const auto* x = inst->op_as_AllocTensor();
      KEEL_RETURN_IF_ERROR(CheckReg(x->dst(), "destination "));
      KEEL_RETURN_IF_ERROR(NeedStorage(x->storage(), "storage "));
      uint64_t elems = 0, bytes = 0, end = 0;
      KEEL_RETURN_IF_ERROR(CheckTensorBytes(x->shape(), x->dtype(), [&] { return Where(); }, &elems, &bytes));
      const RegState st = regs_[x->storage()];
      // Kernels access elements in place: a view must be aligned to its element size.
      if (x->offset() % DTypeSize(FromFb(x->dtype())) != 0) {
        return Err("view offset " + std::to_string(x->offset()) + " is not a multiple of the " +
                   fbs::EnumNameDType(x->dtype()) + " element size");
      }
      const uint64_t storage_size = plan->storages()->Get(st.slot)->size();
      if (__builtin_add_overflow(x->offset(), bytes, &end) || end > storage_size) {
        return Err("view [" + std::to_string(x->offset()) + ", +" + std::to_string(bytes) +
                   ") exceeds storage register " + std::to_string(x->storage()) + " (plan slot " +
                   std::to_string(st.slot) + ", " + std::to_string(storage_size) + " bytes)");
      }
      RegState& r = regs_[x->dst()];
      r = RegState{};
      r.kind = RegState::Kind::kTensor;
      r.dtype = x->dtype();
      r.elems = elems;
      r.device = st.device;
      r.binding = st.binding;
      return Status::Ok();
    }
    case fbs::Op::LoadConst: {
      const auto* x = inst->op_as_LoadConst();
      KEEL_RETURN_IF_ERROR(CheckReg(x->dst(), "destination "));
      const uint32_t num_consts = root_->constants() ? root_->constants()->size() : 0;
      if (x->const_index() >= num_consts) {
        return Err("const_index " + std::to_string(x->const_index()) + " out of range (" +
                   std::to_string(num_consts) + " constants)");
      }
      const fbs::Constant* c = root_->constants()->Get(x->const_index());
      RegState& r = regs_[x->dst()];
      r = RegState{};
      r.kind = RegState::Kind::kTensor;
      r.dtype = c->dtype();
      r.device = c->device();
      r.is_const = true;
      r.const_index = x->const_index();
      uint64_t bytes = 0;
      return CheckTensorBytes(c->shape(), c->dtype(), [&] { return Where(); }, &r.elems, &bytes);
    }
    case fbs::Op::Copy: {
      const auto* x = inst->op_as_Copy();
      KEEL_RETURN_IF_ERROR(NeedTensor(x->dst(), "destination "));
      KEEL_RETURN_IF_ERROR(NeedTensor(x->src(), "source "));
      const RegState& d = regs_[x->dst()];
      const RegState& s = regs_[x->src()];
      if (d.is_const) {
        return Err("destination register " + std::to_string(x->dst()) + " holds constant " +
                   std::to_string(d.const_index) + ", which must not be written");
      }
      const uint64_t db = d.elems * DTypeSize(FromFb(d.dtype));  // both checked for overflow when bound
      const uint64_t sb = s.elems * DTypeSize(FromFb(s.dtype));
      if (db != sb) {
        return Err("destination register " + std::to_string(x->dst()) + " has " + std::to_string(db) +
                   " bytes but source register " + std::to_string(x->src()) + " has " + std::to_string(sb));
      }
      return Status::Ok();
    }
    case fbs::Op::Invoke: {
      const auto* x = inst->op_as_Invoke();
      const uint32_t num_kernels = root_->kernels() ? root_->kernels()->size() : 0;
      if (x->kernel() >= num_kernels) {
        return Err("kernel index " + std::to_string(x->kernel()) + " out of range (" + std::to_string(num_kernels) +
                   " kernels)");
      }
      const fbs::Kernel* k = root_->kernels()->Get(x->kernel());
      const uint32_t want = k->args() ? k->args()->size() : 0;
      const uint32_t got = x->args() ? x->args()->size() : 0;
      if (got != want) {
        return Err(std::to_string(got) + " arguments but kernel " + std::to_string(x->kernel()) + " '" +
                   Str(k->name()) + "' takes " + std::to_string(want));
      }
      const fbs::DeviceKind kdev = k->device();
      for (uint32_t a = 0; a < got; ++a) {
        const std::string role = "argument " + std::to_string(a) + ": ";
        const uint32_t r = x->args()->Get(a);
        KEEL_RETURN_IF_ERROR(NeedTensor(r, role));
        const fbs::KernelArg* ka = k->args()->Get(a);
        KEEL_RETURN_IF_ERROR(MatchSig(r, ka->dtype(), ka->shape(), &kdev, role, [&] {
          return "kernel '" + Str(k->name()) + "' argument " + std::to_string(a);
        }));
        if (regs_[r].is_const && ka->access() != fbs::ArgAccess::read) {
          return Err(role + "register " + std::to_string(r) + " holds constant " +
                     std::to_string(regs_[r].const_index) + ", which the kernel writes (access " +
                     fbs::EnumNameArgAccess(ka->access()) + ")");
        }
      }
      return Status::Ok();
    }
    case fbs::Op::FreeStorage: {
      const auto* x = inst->op_as_FreeStorage();
      KEEL_RETURN_IF_ERROR(NeedStorage(x->reg(), ""));
      const uint32_t slot = regs_[x->reg()].slot;
      if (plan->storages()->Get(slot)->arena() != -1) {
        return Err("register " + std::to_string(x->reg()) + " holds plan slot " + std::to_string(slot) +
                   ", which lives in an arena (only arena -1 storages may be freed)");
      }
      freed_at_[regs_[x->reg()].binding] = static_cast<uint32_t>(inst_) + 1;
      regs_[x->reg()] = RegState{};
      return Status::Ok();
    }
    case fbs::Op::Ret: {
      const auto* x = inst->op_as_Ret();
      if (!last) return Err("Ret before the end of the function");
      const uint32_t want = fn_->results() ? fn_->results()->size() : 0;
      const uint32_t got = x->regs() ? x->regs()->size() : 0;
      if (got != want) {
        return Err("returns " + std::to_string(got) + " registers but the function has " + std::to_string(want) +
                   " results");
      }
      for (uint32_t i = 0; i < got; ++i) {
        const std::string role = "result " + std::to_string(i) + ": ";
        const uint32_t r = x->regs()->Get(i);
        KEEL_RETURN_IF_ERROR(NeedTensor(r, role));
        const fbs::TensorSig* s = fn_->results()->Get(i);
        const fbs::DeviceKind dev = s->device();
        KEEL_RETURN_IF_ERROR(
            MatchSig(r, s->dtype(), s->shape(), &dev, role, [&] { return "result '" + Str(s->name()) + "'"; }));
      }
      return Status::Ok();
    }
    case fbs::Op::NONE:
      break;
  }
  return Err("unhandled op");
}

Status CheckFunctions(const fbs::Executable* root) {
  const auto* fns = root->functions();
  if (fns == nullptr || fns->size() == 0) return Bad("executable has no functions (an entry function is required)");
  std::set<std::string> names;
  for (uint32_t i = 0; i < fns->size(); ++i) {
    const fbs::Function* fn = fns->Get(i);
    KEEL_RETURN_IF_ERROR(FunctionChecker(root, fn, i).Check());
    if (!names.insert(fn->name()->str()).second) {
      return Bad("function name '" + fn->name()->str() + "' is used twice");
    }
  }
  return Status::Ok();
}

}  // namespace

std::span<const uint8_t> ExecutableView::ConstantBytes(uint32_t index) const {
  const auto* constants = root->constants();
  if (constants == nullptr || index >= constants->size()) return {};
  const fb::Constant* c = constants->Get(index);
  return data_segment.subspan(static_cast<size_t>(c->offset()), static_cast<size_t>(c->size()));
}

Result<ExecutableView> ReadExecutable(std::span<const uint8_t> file) {
  size_t fb_size = 0;
  KEEL_RETURN_IF_ERROR(CheckFraming(file, &fb_size));
  ExecutableView view;
  KEEL_RETURN_IF_ERROR(CheckVersion(file, fb_size, &view));

  // Bound the table count by the buffer size, so hostile sharing of sub-tables
  // cannot make verification unbounded, while large programs still pass.
  const auto max_tables = static_cast<flatbuffers::uoffset_t>(std::max<size_t>(1000000, fb_size / 8));
  flatbuffers::Verifier verifier(file.data(), fb_size, /*max_depth=*/64, max_tables);
  if (!fb::VerifySizePrefixedExecutableBuffer(verifier)) {
    return Bad("FlatBuffers verification failed: the metadata is corrupt");
  }

  view.root = fb::GetSizePrefixedExecutable(file.data());
  view.file = file;
  KEEL_RETURN_IF_ERROR(CheckDataSegment(view.root, file, fb_size, &view));
  KEEL_RETURN_IF_ERROR(CheckConstants(view.root, view.data_segment.size()));
  KEEL_RETURN_IF_ERROR(CheckTargets(view.root));
  KEEL_RETURN_IF_ERROR(CheckLibraryDigest(view.root));
  KEEL_RETURN_IF_ERROR(CheckKernels(view.root));
  KEEL_RETURN_IF_ERROR(CheckMemoryPlan(view.root));
  KEEL_RETURN_IF_ERROR(CheckFunctions(view.root));
  return view;
}

}  // namespace keel::ser
