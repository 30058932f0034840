// serialization/executable_writer.cc — ExecutableWriter: plain structs → model.keel bytes.
//
// The FlatBuffer records data_segment_offset, which depends on the FlatBuffer's
// own size. We therefore build it twice: once with a non-zero placeholder offset
// (so the field is stored and occupies its final 8 bytes), then with the real
// offset align64(size). Both builds have the same layout, hence the same size;
// the second build is the one written. Building metadata twice is cheap next to
// copying weights, and keeps the output deterministic without in-place mutation.
#include "serialization/executable_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <unistd.h>

#include "flatbuffers/flatbuffers.h"
#include "serialization/executable_generated.h"

namespace keel::ser {

namespace {

namespace fbs = ::keel::fb;
using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

bool AlignUp(uint64_t v, uint64_t a, uint64_t* out) {
  uint64_t r = v % a;
  if (r == 0) {
    *out = v;
    return true;
  }
  return !__builtin_add_overflow(v, a - r, out);
}

fbs::DType ToFb(DType t) { return static_cast<fbs::DType>(t); }
fbs::DeviceKind ToFb(DeviceKind d) { return static_cast<fbs::DeviceKind>(d); }
fbs::KernelKind ToFb(KernelKind k) { return static_cast<fbs::KernelKind>(k); }
fbs::ArgAccess ToFb(ArgAccess a) { return static_cast<fbs::ArgAccess>(a); }

// Optional strings are left out when empty (smaller files; readers treat absent as "").
Offset<flatbuffers::String> OptString(FlatBufferBuilder& fbb, const std::string& s) {
  return s.empty() ? 0 : fbb.CreateString(s);
}

Offset<fbs::TensorSig> BuildSig(FlatBufferBuilder& fbb, const TensorSigDesc& s) {
  auto name = fbb.CreateString(s.name);
  auto shape = fbb.CreateVector(s.shape);
  return fbs::CreateTensorSig(fbb, name, shape, ToFb(s.dtype), ToFb(s.device));
}

Offset<fbs::Instruction> BuildInstruction(FlatBufferBuilder& fbb, const InstructionDesc& inst) {
  struct Visitor {
    FlatBufferBuilder& fbb;
    std::pair<fbs::Op, Offset<void>> operator()(const AllocStorageInst& i) {
      return {fbs::Op::AllocStorage, fbs::CreateAllocStorage(fbb, i.dst, i.plan_slot).Union()};
    }
    std::pair<fbs::Op, Offset<void>> operator()(const AllocTensorInst& i) {
      auto shape = fbb.CreateVector(i.shape);
      return {fbs::Op::AllocTensor,
              fbs::CreateAllocTensor(fbb, i.dst, i.storage, i.offset, shape, ToFb(i.dtype)).Union()};
    }
    std::pair<fbs::Op, Offset<void>> operator()(const LoadConstInst& i) {
      return {fbs::Op::LoadConst, fbs::CreateLoadConst(fbb, i.dst, i.const_index).Union()};
    }
    std::pair<fbs::Op, Offset<void>> operator()(const CopyInst& i) {
      return {fbs::Op::Copy, fbs::CreateCopy(fbb, i.dst, i.src).Union()};
    }
    std::pair<fbs::Op, Offset<void>> operator()(const InvokeInst& i) {
      auto args = fbb.CreateVector(i.args);
      return {fbs::Op::Invoke, fbs::CreateInvoke(fbb, i.kernel, args).Union()};
    }
    std::pair<fbs::Op, Offset<void>> operator()(const FreeStorageInst& i) {
      return {fbs::Op::FreeStorage, fbs::CreateFreeStorage(fbb, i.reg).Union()};
    }
    std::pair<fbs::Op, Offset<void>> operator()(const RetInst& i) {
      auto regs = fbb.CreateVector(i.regs);
      return {fbs::Op::Ret, fbs::CreateRet(fbb, regs).Union()};
    }
    std::pair<fbs::Op, Offset<void>> operator()(const EmptyInst&) { return {fbs::Op::NONE, 0}; }
  };
  auto [type, op] = std::visit(Visitor{fbb}, inst.op);
  auto debug = OptString(fbb, inst.debug_name);
  return fbs::CreateInstruction(fbb, type, op, debug);
}

Offset<fbs::Function> BuildFunction(FlatBufferBuilder& fbb, const FunctionBuilder& f) {
  auto name = fbb.CreateString(f.name());
  std::vector<Offset<fbs::TensorSig>> params, results;
  for (const auto& p : f.params()) params.push_back(BuildSig(fbb, p));
  for (const auto& r : f.results()) results.push_back(BuildSig(fbb, r));
  auto params_v = fbb.CreateVector(params);
  auto results_v = fbb.CreateVector(results);
  std::vector<Offset<fbs::Instruction>> insts;
  insts.reserve(f.instructions().size());
  for (const auto& i : f.instructions()) insts.push_back(BuildInstruction(fbb, i));
  auto insts_v = fbb.CreateVector(insts);
  return fbs::CreateFunction(fbb, name, params_v, results_v, f.num_registers(), insts_v);
}

Offset<fbs::Kernel> BuildKernel(FlatBufferBuilder& fbb, const KernelDesc& k) {
  auto name = fbb.CreateString(k.name);
  auto library_op = OptString(fbb, k.library_op);
  std::vector<Offset<fbs::KernelArg>> args;
  for (const auto& a : k.args) {
    auto shape = fbb.CreateVector(a.shape);
    args.push_back(fbs::CreateKernelArg(fbb, ToFb(a.dtype), shape, ToFb(a.access)));
  }
  auto args_v = fbb.CreateVector(args);
  // The schema marks Attr.key as (key): lookups binary-search, so write sorted.
  std::vector<const AttrDesc*> sorted;
  for (const auto& a : k.attrs) sorted.push_back(&a);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const AttrDesc* x, const AttrDesc* y) { return x->key < y->key; });
  std::vector<Offset<fbs::Attr>> attrs;
  for (const AttrDesc* a : sorted) {
    auto key = fbb.CreateString(a->key);
    auto ints = a->ints.empty() ? 0 : fbb.CreateVector(a->ints);
    auto floats = a->floats.empty() ? 0 : fbb.CreateVector(a->floats);
    auto str = OptString(fbb, a->str);
    attrs.push_back(fbs::CreateAttr(fbb, key, ints, floats, str));
  }
  auto attrs_v = fbb.CreateVector(attrs);
  Offset<fbs::LaunchConfig> launch = 0;
  if (k.launch) {
    std::vector<uint32_t> grid(k.launch->grid.begin(), k.launch->grid.end());
    std::vector<uint32_t> block(k.launch->block.begin(), k.launch->block.end());
    auto g = fbb.CreateVector(grid);
    auto b = fbb.CreateVector(block);
    launch = fbs::CreateLaunchConfig(fbb, g, b, k.launch->shared_bytes);
  }
  return fbs::CreateKernel(fbb, name, ToFb(k.kind), ToFb(k.device), library_op, args_v, attrs_v, launch,
                           k.workspace_bytes);
}

Offset<fbs::MemoryPlan> BuildPlan(FlatBufferBuilder& fbb, const MemoryPlanDesc& p) {
  auto strategy = fbb.CreateString(p.strategy);
  std::vector<Offset<fbs::PlannedStorage>> storages;
  for (const auto& s : p.storages) {
    storages.push_back(fbs::CreatePlannedStorage(fbb, s.size, s.alignment, ToFb(s.device), s.arena, s.offset));
  }
  auto storages_v = fbb.CreateVector(storages);
  std::vector<Offset<fbs::Arena>> arenas;
  for (const auto& a : p.arenas) arenas.push_back(fbs::CreateArena(fbb, ToFb(a.device), a.size, a.alignment));
  auto arenas_v = fbb.CreateVector(arenas);
  return fbs::CreateMemoryPlan(fbb, strategy, storages_v, arenas_v, p.lower_bound_peak_live,
                               p.lower_bound_positional_max);
}

}  // namespace

// ---- FunctionBuilder ----------------------------------------------------------

FunctionBuilder& FunctionBuilder::AllocStorage(uint32_t dst, uint32_t plan_slot, std::string debug_name) {
  return Add({AllocStorageInst{dst, plan_slot}, std::move(debug_name)});
}
FunctionBuilder& FunctionBuilder::AllocTensor(uint32_t dst, uint32_t storage, uint64_t offset,
                                              std::vector<int64_t> shape, DType dtype, std::string debug_name) {
  return Add({AllocTensorInst{dst, storage, offset, std::move(shape), dtype}, std::move(debug_name)});
}
FunctionBuilder& FunctionBuilder::LoadConst(uint32_t dst, uint32_t const_index, std::string debug_name) {
  return Add({LoadConstInst{dst, const_index}, std::move(debug_name)});
}
FunctionBuilder& FunctionBuilder::Copy(uint32_t dst, uint32_t src, std::string debug_name) {
  return Add({CopyInst{dst, src}, std::move(debug_name)});
}
FunctionBuilder& FunctionBuilder::Invoke(uint32_t kernel, std::vector<uint32_t> args, std::string debug_name) {
  return Add({InvokeInst{kernel, std::move(args)}, std::move(debug_name)});
}
FunctionBuilder& FunctionBuilder::FreeStorage(uint32_t reg, std::string debug_name) {
  return Add({FreeStorageInst{reg}, std::move(debug_name)});
}
FunctionBuilder& FunctionBuilder::Ret(std::vector<uint32_t> regs, std::string debug_name) {
  return Add({RetInst{std::move(regs)}, std::move(debug_name)});
}
FunctionBuilder& FunctionBuilder::Add(InstructionDesc inst) {
  instructions_.push_back(std::move(inst));
  return *this;
}

// ---- ExecutableWriter ---------------------------------------------------------

struct ExecutableWriter::State {
  struct TargetEntry {
    DeviceKind device;
    std::string arch;
    std::string features;
  };
  struct ConstantEntry {
    RawConstantDesc meta;         // offset/size filled at Finish for non-raw entries
    bool raw = false;             // explicit offset/size, no bytes
    std::vector<uint8_t> owned;   // AddConstant
    std::span<const uint8_t> ref; // AddConstantRef (or a view of `owned`)
    std::span<const uint8_t> bytes() const { return owned.empty() ? ref : std::span<const uint8_t>(owned); }
  };
  std::vector<TargetEntry> targets;
  std::vector<KernelDesc> kernels;
  std::vector<ConstantEntry> constants;
  std::optional<MemoryPlanDesc> plan;
  std::string kernel_library_id;
  std::optional<uint64_t> kernel_library_size;
  std::vector<uint8_t> kernel_library_sha256;
  std::string producer;
  bool allow_tf32 = false;
};

ExecutableWriter::ExecutableWriter() : state_(std::make_unique<State>()) {}
ExecutableWriter::~ExecutableWriter() = default;

uint32_t ExecutableWriter::AddTarget(DeviceKind device, std::string arch, std::string features) {
  state_->targets.push_back({device, std::move(arch), std::move(features)});
  return static_cast<uint32_t>(state_->targets.size() - 1);
}

uint32_t ExecutableWriter::AddKernel(KernelDesc kernel) {
  state_->kernels.push_back(std::move(kernel));
  return static_cast<uint32_t>(state_->kernels.size() - 1);
}

uint32_t ExecutableWriter::AddConstant(std::string name, DType dtype, std::vector<int64_t> shape, DeviceKind device,
                                       std::span<const uint8_t> bytes) {
  State::ConstantEntry e;
  e.meta = {std::move(name), dtype, std::move(shape), device, 0, bytes.size()};
  e.owned.assign(bytes.begin(), bytes.end());
  state_->constants.push_back(std::move(e));
  return static_cast<uint32_t>(state_->constants.size() - 1);
}

uint32_t ExecutableWriter::AddConstantRef(std::string name, DType dtype, std::vector<int64_t> shape,
                                          DeviceKind device, std::span<const uint8_t> bytes) {
  State::ConstantEntry e;
  e.meta = {std::move(name), dtype, std::move(shape), device, 0, bytes.size()};
  e.ref = bytes;
  state_->constants.push_back(std::move(e));
  return static_cast<uint32_t>(state_->constants.size() - 1);
}

uint32_t ExecutableWriter::AddRawConstant(RawConstantDesc constant) {
  State::ConstantEntry e;
  e.meta = std::move(constant);
  e.raw = true;
  state_->constants.push_back(std::move(e));
  return static_cast<uint32_t>(state_->constants.size() - 1);
}

void ExecutableWriter::SetMemoryPlan(MemoryPlanDesc plan) { state_->plan = std::move(plan); }
void ExecutableWriter::SetKernelLibraryId(std::string id) { state_->kernel_library_id = std::move(id); }
void ExecutableWriter::SetKernelLibraryDigest(uint64_t size, const std::array<uint8_t, 32>& sha256) {
  state_->kernel_library_size = size;
  state_->kernel_library_sha256.assign(sha256.begin(), sha256.end());
}
void ExecutableWriter::SetProducer(std::string producer) { state_->producer = std::move(producer); }
void ExecutableWriter::SetAllowTf32(bool allow) { state_->allow_tf32 = allow; }

FunctionBuilder& ExecutableWriter::AddFunction(std::string name, std::vector<TensorSigDesc> params,
                                               std::vector<TensorSigDesc> results, uint32_t num_registers) {
  return functions_.emplace_back(std::move(name), std::move(params), std::move(results), num_registers);
}

Status ExecutableWriter::Emit(const FinishOptions& options, const std::function<bool(std::span<const uint8_t>)>& sink,
                              uint64_t* total_size) const {
  const State& st = *state_;

  // Lay out the data segment: the CPU constants first, each at the next 64-byte
  // boundary, then each device's constants together at kDeviceDataAlignment
  // boundaries, so that the VM uploads a device's weights as one run of bytes into
  // one block (common/constant_block.h). `order` is the file order.
  std::vector<uint64_t> offsets(st.constants.size(), 0);
  std::vector<size_t> order;
  for (size_t i = 0; i < st.constants.size(); ++i) {
    if (!st.constants[i].raw) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return static_cast<int>(st.constants[a].meta.device) < static_cast<int>(st.constants[b].meta.device);
  });
  uint64_t cursor = 0;
  for (size_t i : order) {
    const auto& c = st.constants[i];
    const uint64_t align = c.meta.device == DeviceKind::kCpu ? kDataAlignment : kDeviceDataAlignment;
    uint64_t off = 0;
    if (!AlignUp(cursor, align, &off) || __builtin_add_overflow(off, c.bytes().size(), &cursor)) {
      return InvalidArgument("data segment size overflows 64 bits at constant '" + c.meta.name + "'");
    }
    offsets[i] = off;
  }
  for (size_t i = 0; i < st.constants.size(); ++i) {
    if (st.constants[i].raw) offsets[i] = st.constants[i].meta.offset;
  }
  const uint64_t data_size = cursor;

  auto build = [&](FlatBufferBuilder& fbb, uint64_t data_offset) {
    auto producer = OptString(fbb, st.producer);
    std::vector<Offset<fbs::Target>> targets;
    for (const auto& t : st.targets) {
      auto arch = fbb.CreateString(t.arch);
      auto features = OptString(fbb, t.features);
      targets.push_back(fbs::CreateTarget(fbb, ToFb(t.device), arch, features));
    }
    auto targets_v = fbb.CreateVector(targets);
    std::vector<Offset<fbs::Function>> functions;
    for (const auto& f : functions_) functions.push_back(BuildFunction(fbb, f));
    auto functions_v = fbb.CreateVector(functions);
    std::vector<Offset<fbs::Kernel>> kernels;
    for (const auto& k : st.kernels) kernels.push_back(BuildKernel(fbb, k));
    auto kernels_v = fbb.CreateVector(kernels);
    std::vector<Offset<fbs::Constant>> constants;
    for (size_t i = 0; i < st.constants.size(); ++i) {
      const auto& m = st.constants[i].meta;
      auto name = fbb.CreateString(m.name);
      auto shape = fbb.CreateVector(m.shape);
      constants.push_back(fbs::CreateConstant(fbb, name, ToFb(m.dtype), shape, ToFb(m.device), offsets[i], m.size));
    }
    auto constants_v = fbb.CreateVector(constants);
    Offset<fbs::MemoryPlan> plan = st.plan ? BuildPlan(fbb, *st.plan) : 0;
    auto library_id = OptString(fbb, st.kernel_library_id);
    fbs::FormatVersion version(options.version_major.value_or(kFormatVersionMajor),
                               options.version_minor.value_or(kFormatVersionMinor));
    auto library_sha256 = st.kernel_library_sha256.empty() ? 0 : fbb.CreateVector(st.kernel_library_sha256);
    auto root = fbs::CreateExecutable(fbb, options.omit_version ? nullptr : &version, producer, targets_v,
                                      functions_v, kernels_v, constants_v, plan, library_id, data_offset,
                                      options.data_segment_size.value_or(data_size),
                                      st.kernel_library_size.value_or(0), library_sha256, st.allow_tf32);
    fbs::FinishSizePrefixedExecutableBuffer(fbb, root);
  };

  // Pass 1 with a non-zero placeholder (so the field is stored), pass 2 with the real value.
  FlatBufferBuilder probe;
  build(probe, options.data_segment_offset.value_or(kDataAlignment));
  uint64_t real_offset = 0;
  if (!AlignUp(probe.GetSize(), kDataAlignment, &real_offset)) return Internal("FlatBuffer size overflow");
  const uint64_t meta_offset = options.data_segment_offset.value_or(real_offset);
  FlatBufferBuilder fbb;
  build(fbb, meta_offset);
  if (fbb.GetSize() != probe.GetSize()) {
    return Internal("executable writer: FlatBuffer size changed between layout passes");
  }

  uint64_t total = 0;
  if (__builtin_add_overflow(real_offset, data_size, &total) || total > SIZE_MAX) {
    return InvalidArgument("executable too large for this host");
  }
  *total_size = total;

  // Emit in file order: metadata, zero padding, then each constant at its offset.
  static constexpr uint8_t kZeros[kDeviceDataAlignment] = {};
  std::span<const uint8_t> meta(fbb.GetBufferPointer(), fbb.GetSize());
  std::vector<uint8_t> patched;
  if (options.file_identifier) {
    // Layout of a size-prefixed buffer: [size u32][root offset u32][identifier 4 bytes].
    patched.assign(meta.begin(), meta.end());
    char id[4] = {0, 0, 0, 0};
    std::memcpy(id, options.file_identifier->data(), std::min<size_t>(4, options.file_identifier->size()));
    std::memcpy(patched.data() + 8, id, 4);
    meta = patched;
  }
  const Status io_error = IoError("writing the executable image failed");
  if (!sink(meta)) return io_error;
  uint64_t pos = meta.size();
  auto pad_to = [&](uint64_t target) {
    // Gaps are always below kDeviceDataAlignment bytes: offsets are aligned and assigned in file order.
    if (target > pos && !sink(std::span<const uint8_t>(kZeros, static_cast<size_t>(target - pos)))) return false;
    pos = std::max(pos, target);
    return true;
  };
  if (!pad_to(real_offset)) return io_error;
  for (size_t i : order) {
    const auto& c = st.constants[i];
    if (c.bytes().empty()) continue;
    if (!pad_to(real_offset + offsets[i]) || !sink(c.bytes())) return io_error;
    pos += c.bytes().size();
  }
  if (!pad_to(total)) return io_error;
  return Status::Ok();
}

Result<std::vector<uint8_t>> ExecutableWriter::Finish(const FinishOptions& options) const {
  std::vector<uint8_t> file;
  uint64_t total = 0;
  KEEL_RETURN_IF_ERROR(Emit(
      options,
      [&](std::span<const uint8_t> chunk) {
        if (file.empty() && total != 0) file.reserve(static_cast<size_t>(total));
        file.insert(file.end(), chunk.begin(), chunk.end());
        return true;
      },
      &total));
  if (file.size() != total) return Internal("executable writer: image size mismatch");
  return file;
}

Status ExecutableWriter::WriteFile(const std::string& path) const { return WriteFile(path, FinishOptions{}); }

Status ExecutableWriter::WriteFile(const std::string& path, const FinishOptions& options) const {
  // Streamed chunk by chunk (weights are not copied into one image), into a
  // temporary in the same directory so that rename() is atomic (same file system).
  const std::string tmp = path + ".tmp." + std::to_string(static_cast<long>(::getpid()));
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return IoError("cannot create '" + tmp + "': " + std::strerror(errno));
  uint64_t total = 0;
  Status emitted = Emit(
      options,
      [&](std::span<const uint8_t> chunk) { return std::fwrite(chunk.data(), 1, chunk.size(), f) == chunk.size(); },
      &total);
  bool ok = emitted.ok();
  ok = (std::fflush(f) == 0) && ok;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    if (!emitted.ok() && emitted.code() != StatusCode::kIoError) return emitted;
    return IoError("cannot write '" + tmp + "'");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return IoError("cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(err));
  }
  return Status::Ok();
}

}  // namespace keel::ser
