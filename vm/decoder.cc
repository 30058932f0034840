// vm/decoder.cc — turns a verified FlatBuffers executable into the compact tables
// of vm/executable.h (see DecodeExecutable there).
//
// ReadExecutable has already checked every index, size and view; the decoder
// keeps cheap index checks anyway (a raw pointer is built from each one, and a
// reader bug must not become a VM crash) and adds the checks that only matter to
// a runtime: constants are mapped read-only, so nothing may write to them; a
// view of a freed dynamic storage may not be used; kernel arguments must live on
// the kernel's device.
#include <cstring>
#include <string>

#include "serialization/executable_reader.h"
#include "vm/cpu/cpu_features.h"
#include "vm/executable.h"

namespace keel::vm_internal {
namespace {

std::vector<int64_t> ToVector(const flatbuffers::Vector<int64_t>* v) {
  std::vector<int64_t> out;
  if (v != nullptr) out.assign(v->begin(), v->end());
  return out;
}

std::string ToString(const flatbuffers::String* s) { return s != nullptr ? s->str() : std::string(); }

// product(shape) * elem_size with overflow and negative-dimension checks.
bool ByteSize(std::span<const int64_t> shape, size_t elem_size, uint64_t* out) {
  uint64_t n = elem_size;
  for (int64_t d : shape) {
    if (d < 0) return false;
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return false;
  }
  *out = n;
  return true;
}

Result<TensorInfo> DecodeSig(const keel::fb::TensorSig* sig, const char* what, size_t index) {
  if (sig == nullptr) return InvalidExecutable(std::string(what) + " " + std::to_string(index) + " is missing");
  TensorInfo info;
  info.name = ToString(sig->name());
  info.shape = ToVector(sig->shape());
  info.dtype = static_cast<DataType>(sig->dtype());
  info.device = static_cast<DeviceType>(sig->device());
  if (DataTypeSize(info.dtype) == 0 || !ByteSize(info.shape, DataTypeSize(info.dtype), &info.byte_size)) {
    return InvalidExecutable(std::string(what) + " \"" + info.name + "\" has a bad dtype or shape " +
                             ShapeString(info.shape));
  }
  return info;
}

// What a register holds at a point of the (straight-line) entry function.
struct RegState {
  enum Kind : uint8_t { kNone, kStorage, kTensor } kind = kNone;
  DeviceType device = DeviceType::kCpu;
  bool constant = false;  // a view of read-only constant data
  bool dynamic = false;   // storage: allocated at run time
  uint32_t instance = 0;  // storage allocation this value belongs to (0: inputs/constants)
  uint64_t bytes = 0;
};

class FunctionDecoder {
 public:
  FunctionDecoder(LoadedExecutable& exe, const keel::fb::Function& fn) : exe_(exe), fn_(fn) {}

  Status Decode() {
    exe_.num_registers = fn_.num_registers();
    regs_.assign(exe_.num_registers, RegState{});
    alive_.assign(1, true);
    if (exe_.inputs.size() > exe_.num_registers) {
      return InvalidExecutable("function main has more parameters than registers");
    }
    for (size_t i = 0; i < exe_.inputs.size(); ++i) {
      regs_[i] = RegState{RegState::kTensor, exe_.inputs[i].device, false, false, 0, exe_.inputs[i].byte_size};
    }
    const auto* insts = fn_.instructions();
    const uint32_t n = insts != nullptr ? insts->size() : 0;
    exe_.instructions.reserve(n);
    exe_.debug_names.reserve(n);
    std::vector<uint64_t> shape_offsets;  // pointers fixed up once `shapes` stops growing
    for (uint32_t i = 0; i < n; ++i) {
      index_ = i;
      const keel::fb::Instruction* in = insts->Get(i);
      if (in == nullptr) return Error("missing instruction");
      if (seen_ret_) return Error("instruction after ret");
      Instruction out;
      uint64_t shape_offset = UINT64_MAX;
      KEEL_RETURN_IF_ERROR(DecodeOne(*in, out, shape_offset));
      shape_offsets.push_back(shape_offset);
      exe_.instructions.push_back(out);
      exe_.debug_names.push_back(ToString(in->debug_name()));
    }
    if (!seen_ret_) return InvalidExecutable("function main does not end with ret");
    for (size_t i = 0; i < exe_.instructions.size(); ++i) {
      if (shape_offsets[i] != UINT64_MAX) exe_.instructions[i].shape = exe_.shapes.data() + shape_offsets[i];
    }
    for (uint32_t r = 0; r < exe_.num_registers; ++r) {
      if (regs_[r].kind == RegState::kStorage && regs_[r].dynamic) exe_.dynamic_registers.push_back(r);
    }
    return Status::Ok();
  }

 private:
  Status Error(const std::string& message) const {
    return InvalidExecutable("function main instruction " + std::to_string(index_) + ": " + message);
  }
  Status CheckReg(uint32_t r) const {
    if (r >= exe_.num_registers) {
      return Error("register " + std::to_string(r) + " out of range (num_registers " +
                   std::to_string(exe_.num_registers) + ")");
    }
    return Status::Ok();
  }
  // A register read as a tensor: must hold a tensor whose storage is still allocated.
  Status CheckTensor(uint32_t r) const {
    KEEL_RETURN_IF_ERROR(CheckReg(r));
    if (regs_[r].kind != RegState::kTensor) return Error("register " + std::to_string(r) + " does not hold a tensor");
    if (!alive_[regs_[r].instance]) {
      return Error("register " + std::to_string(r) + " is a view of a storage freed earlier");
    }
    return Status::Ok();
  }
  Status CheckWritable(uint32_t r) const {
    if (regs_[r].constant) {
      return Error("register " + std::to_string(r) + " holds a constant, which is read-only");
    }
    return Status::Ok();
  }
  // Writing over a register that owns a live dynamic storage would lose (leak) it.
  Status CheckOverwrite(uint32_t r) const {
    const RegState& s = regs_[r];
    if (s.kind == RegState::kStorage && s.dynamic && alive_[s.instance]) {
      return Error("register " + std::to_string(r) + " still holds a dynamic storage (it would leak)");
    }
    return Status::Ok();
  }
  Status CheckDevice(DeviceType d) {
    exe_.devices_used |= 1u << static_cast<uint32_t>(d);
    return Status::Ok();
  }

  Status DecodeOne(const keel::fb::Instruction& in, Instruction& out, uint64_t& shape_offset) {
    using keel::fb::Op;
    switch (in.op_type()) {
      case Op::AllocStorage: {
        const auto* op = in.op_as_AllocStorage();
        KEEL_RETURN_IF_ERROR(CheckReg(op->dst()));
        if (op->plan_slot() >= exe_.storages.size()) {
          return Error("plan slot " + std::to_string(op->plan_slot()) + " out of range (" +
                       std::to_string(exe_.storages.size()) + " storages)");
        }
        const StorageEntry& s = exe_.storages[op->plan_slot()];
        KEEL_RETURN_IF_ERROR(CheckOverwrite(op->dst()));
        RegState& dst = regs_[op->dst()];
        out.op = OpCode::kAllocStorage;
        out.a = op->dst();
        out.b = op->plan_slot();
        out.arena = s.arena;
        out.offset = s.arena < 0 ? s.alignment : s.offset;
        out.bytes = s.size;
        out.device = s.device;
        KEEL_RETURN_IF_ERROR(CheckDevice(s.device));
        alive_.push_back(true);
        dst = RegState{RegState::kStorage, s.device, false, s.arena < 0, static_cast<uint32_t>(alive_.size() - 1),
                       s.size};
        if (s.arena < 0) exe_.has_dynamic_storage = true;
        return Status::Ok();
      }
      case Op::AllocTensor: {
        const auto* op = in.op_as_AllocTensor();
        KEEL_RETURN_IF_ERROR(CheckReg(op->dst()));
        KEEL_RETURN_IF_ERROR(CheckReg(op->storage()));
        KEEL_RETURN_IF_ERROR(CheckOverwrite(op->dst()));
        const RegState& st = regs_[op->storage()];
        if (st.kind != RegState::kStorage || !alive_[st.instance]) {
          return Error("register " + std::to_string(op->storage()) + " does not hold an allocated storage");
        }
        const auto dtype = static_cast<DataType>(op->dtype());
        const std::vector<int64_t> shape = ToVector(op->shape());
        uint64_t bytes = 0, end = 0;
        if (DataTypeSize(dtype) == 0 || !ByteSize(shape, DataTypeSize(dtype), &bytes)) {
          return Error("bad dtype or shape " + ShapeString(shape));
        }
        if (__builtin_add_overflow(op->offset(), bytes, &end) || end > st.bytes) {
          return Error("view [" + std::to_string(op->offset()) + ", +" + std::to_string(bytes) +
                       ") lies outside its storage of " + std::to_string(st.bytes) + " bytes");
        }
        out.op = OpCode::kAllocTensor;
        out.a = op->dst();
        out.b = op->storage();
        out.offset = op->offset();
        out.bytes = bytes;
        out.dtype = static_cast<uint8_t>(dtype);
        out.device = st.device;
        out.count = static_cast<uint32_t>(shape.size());
        shape_offset = exe_.shapes.size();
        exe_.shapes.insert(exe_.shapes.end(), shape.begin(), shape.end());
        regs_[op->dst()] = RegState{RegState::kTensor, st.device, false, false, st.instance, bytes};
        return Status::Ok();
      }
      case Op::LoadConst: {
        const auto* op = in.op_as_LoadConst();
        KEEL_RETURN_IF_ERROR(CheckReg(op->dst()));
        if (op->const_index() >= exe_.constants.size()) {
          return Error("constant " + std::to_string(op->const_index()) + " out of range (" +
                       std::to_string(exe_.constants.size()) + " constants)");
        }
        KEEL_RETURN_IF_ERROR(CheckOverwrite(op->dst()));
        const ConstantEntry& c = exe_.constants[op->const_index()];
        out.op = OpCode::kLoadConst;
        out.a = op->dst();
        out.b = op->const_index();
        out.bytes = c.bytes;
        out.device = c.device;
        KEEL_RETURN_IF_ERROR(CheckDevice(c.device));
        regs_[op->dst()] = RegState{RegState::kTensor, c.device, true, false, 0, c.bytes};
        return Status::Ok();
      }
      case Op::Copy: {
        const auto* op = in.op_as_Copy();
        KEEL_RETURN_IF_ERROR(CheckTensor(op->dst()));
        KEEL_RETURN_IF_ERROR(CheckTensor(op->src()));
        KEEL_RETURN_IF_ERROR(CheckWritable(op->dst()));
        const RegState& d = regs_[op->dst()];
        const RegState& s = regs_[op->src()];
        if (d.bytes != s.bytes) {
          return Error("copy between tensors of " + std::to_string(s.bytes) + " and " + std::to_string(d.bytes) +
                       " bytes");
        }
        out.op = OpCode::kCopy;
        out.a = op->dst();
        out.b = op->src();
        out.bytes = s.bytes;
        const bool src_dev = s.device != DeviceType::kCpu, dst_dev = d.device != DeviceType::kCpu;
        out.direction = src_dev ? (dst_dev ? CopyDirection::kDeviceToDevice : CopyDirection::kDeviceToHost)
                                : (dst_dev ? CopyDirection::kHostToDevice : CopyDirection::kHostToHost);
        out.device = src_dev ? s.device : d.device;
        return Status::Ok();
      }
      case Op::Invoke: {
        const auto* op = in.op_as_Invoke();
        if (op->kernel() >= exe_.kernels.size()) {
          return Error("kernel " + std::to_string(op->kernel()) + " out of range (" +
                       std::to_string(exe_.kernels.size()) + " kernels)");
        }
        const KernelEntry& k = exe_.kernels[op->kernel()];
        const uint32_t nargs = op->args() != nullptr ? op->args()->size() : 0;
        if (nargs != k.args.size()) {
          return Error("kernel " + k.name + " takes " + std::to_string(k.args.size()) + " arguments, got " +
                       std::to_string(nargs));
        }
        out.op = OpCode::kInvoke;
        out.a = op->kernel();
        out.b = static_cast<uint32_t>(exe_.operands.size());
        out.count = nargs;
        out.device = k.device;
        for (uint32_t j = 0; j < nargs; ++j) {
          const uint32_t r = op->args()->Get(j);
          KEEL_RETURN_IF_ERROR(CheckTensor(r));
          if (regs_[r].bytes != k.args[j].bytes) {
            return Error("kernel " + k.name + " argument " + std::to_string(j) + " needs " +
                         std::to_string(k.args[j].bytes) + " bytes, register " + std::to_string(r) + " has " +
                         std::to_string(regs_[r].bytes));
          }
          if (k.args[j].access != 0) KEEL_RETURN_IF_ERROR(CheckWritable(r));
          if (regs_[r].device != k.device) {
            return Error("kernel " + k.name + " runs on " + DeviceTypeName(k.device) + " but argument " +
                         std::to_string(j) + " (register " + std::to_string(r) + ") is on " +
                         DeviceTypeName(regs_[r].device));
          }
          exe_.operands.push_back(r);
        }
        if (nargs > exe_.max_invoke_args) exe_.max_invoke_args = nargs;
        return Status::Ok();
      }
      case Op::FreeStorage: {
        const auto* op = in.op_as_FreeStorage();
        KEEL_RETURN_IF_ERROR(CheckReg(op->reg()));
        RegState& r = regs_[op->reg()];
        if (r.kind != RegState::kStorage || !r.dynamic || !alive_[r.instance]) {
          return Error("free_storage of register " + std::to_string(op->reg()) +
                       " which does not hold a live dynamic storage");
        }
        out.op = OpCode::kFreeStorage;
        out.a = op->reg();
        out.device = r.device;
        out.bytes = r.bytes;
        alive_[r.instance] = false;
        r = RegState{};
        return Status::Ok();
      }
      case Op::Ret: {
        const auto* op = in.op_as_Ret();
        const uint32_t nregs = op->regs() != nullptr ? op->regs()->size() : 0;
        if (nregs != exe_.outputs.size()) {
          return Error("ret of " + std::to_string(nregs) + " registers, function has " +
                       std::to_string(exe_.outputs.size()) + " results");
        }
        out.op = OpCode::kRet;
        out.b = static_cast<uint32_t>(exe_.operands.size());
        out.count = nregs;
        for (uint32_t j = 0; j < nregs; ++j) {
          const uint32_t r = op->regs()->Get(j);
          KEEL_RETURN_IF_ERROR(CheckTensor(r));
          if (regs_[r].bytes != exe_.outputs[j].byte_size) {
            return Error("result " + std::to_string(j) + " needs " + std::to_string(exe_.outputs[j].byte_size) +
                         " bytes, register " + std::to_string(r) + " has " + std::to_string(regs_[r].bytes));
          }
          exe_.operands.push_back(r);
        }
        seen_ret_ = true;
        return Status::Ok();
      }
      default:
        return Error("unknown or missing opcode");
    }
  }

  LoadedExecutable& exe_;
  const keel::fb::Function& fn_;
  std::vector<RegState> regs_;
  std::vector<bool> alive_;  // per storage instance
  uint32_t index_ = 0;
  bool seen_ret_ = false;
};

Status DecodeTables(LoadedExecutable& out, const ser::ExecutableView& view) {
  const keel::fb::Executable& root = *view.root;
  out.producer = ToString(root.producer());
  out.allow_tf32 = root.allow_tf32();
  if (root.kernels() != nullptr) {
    for (uint32_t i = 0; i < root.kernels()->size(); ++i) {
      const keel::fb::Kernel* k = root.kernels()->Get(i);
      if (k == nullptr) return InvalidExecutable("kernel " + std::to_string(i) + " is missing");
      KernelEntry e;
      e.index = i;
      e.name = ToString(k->name());
      e.kind = static_cast<uint8_t>(k->kind());
      e.device = static_cast<DeviceType>(k->device());
      e.library_op = ToString(k->library_op());
      if (k->args() != nullptr) {
        for (const keel::fb::KernelArg* a : *k->args()) {
          KernelArgEntry arg;
          arg.dtype = static_cast<DataType>(a->dtype());
          arg.shape = ToVector(a->shape());
          arg.access = static_cast<uint8_t>(a->access());
          if (DataTypeSize(arg.dtype) == 0 || !ByteSize(arg.shape, DataTypeSize(arg.dtype), &arg.bytes)) {
            return InvalidExecutable("kernel " + e.name + " has an argument with a bad dtype or shape");
          }
          e.args.push_back(std::move(arg));
        }
      }
      if (k->attrs() != nullptr) {
        for (const keel::fb::Attr* a : *k->attrs()) {
          AttrEntry attr;
          attr.key = ToString(a->key());
          if (a->ints() != nullptr) attr.ints.assign(a->ints()->begin(), a->ints()->end());
          if (a->floats() != nullptr) attr.floats.assign(a->floats()->begin(), a->floats()->end());
          attr.str = ToString(a->str());
          e.attrs.push_back(std::move(attr));
        }
      }
      if (const keel::fb::LaunchConfig* l = k->launch(); l != nullptr) {
        e.has_launch = true;
        for (uint32_t d = 0; d < 3; ++d) {
          if (l->grid() != nullptr && d < l->grid()->size()) e.grid[d] = l->grid()->Get(d);
          if (l->block() != nullptr && d < l->block()->size()) e.block[d] = l->block()->Get(d);
        }
        e.shared_bytes = l->shared_bytes();
      }
      e.workspace_bytes = k->workspace_bytes();
      out.devices_used |= 1u << static_cast<uint32_t>(e.device);
      out.kernels.push_back(std::move(e));
    }
  }
  if (root.constants() != nullptr) {
    for (uint32_t i = 0; i < root.constants()->size(); ++i) {
      const keel::fb::Constant* c = root.constants()->Get(i);
      ConstantEntry e;
      e.name = ToString(c->name());
      e.dtype = static_cast<DataType>(c->dtype());
      e.shape = ToVector(c->shape());
      e.device = static_cast<DeviceType>(c->device());
      e.bytes = c->size();
      const std::span<const uint8_t> bytes = view.ConstantBytes(i);
      if (bytes.size() != e.bytes || (e.bytes != 0 && bytes.data() == nullptr)) {
        return InvalidExecutable("constant " + std::to_string(i) + " lies outside the data segment");
      }
      e.host_data = bytes.data();
      e.data_offset = c->offset();
      out.constants.push_back(std::move(e));
    }
  }
  if (const keel::fb::MemoryPlan* plan = root.memory_plan(); plan != nullptr) {
    out.plan_strategy = ToString(plan->strategy());
    if (plan->arenas() != nullptr) {
      for (const keel::fb::Arena* a : *plan->arenas()) {
        out.arenas.push_back(ArenaEntry{static_cast<DeviceType>(a->device()), a->size(), a->alignment()});
      }
    }
    if (plan->storages() != nullptr) {
      for (const keel::fb::PlannedStorage* s : *plan->storages()) {
        StorageEntry e{s->size(), s->alignment(), static_cast<DeviceType>(s->device()), s->arena(), s->offset()};
        uint64_t end = 0;
        if (e.arena >= 0) {
          if (static_cast<size_t>(e.arena) >= out.arenas.size() ||
              __builtin_add_overflow(e.offset, e.size, &end) || end > out.arenas[e.arena].size) {
            return InvalidExecutable("planned storage " + std::to_string(out.storages.size()) +
                                     " lies outside its arena");
          }
        }
        if (e.alignment == 0 || (e.alignment & (e.alignment - 1)) != 0) {
          return InvalidExecutable("planned storage " + std::to_string(out.storages.size()) +
                                   " has alignment " + std::to_string(e.alignment) + ", not a power of two");
        }
        out.storages.push_back(e);
      }
    }
  }
  const keel::fb::Function* main = view.main();
  if (main->params() != nullptr) {
    for (uint32_t i = 0; i < main->params()->size(); ++i) {
      KEEL_ASSIGN_OR_RETURN(TensorInfo info, DecodeSig(main->params()->Get(i), "parameter", i));
      out.devices_used |= 1u << static_cast<uint32_t>(info.device);
      out.inputs.push_back(std::move(info));
    }
  }
  if (main->results() != nullptr) {
    for (uint32_t i = 0; i < main->results()->size(); ++i) {
      KEEL_ASSIGN_OR_RETURN(TensorInfo info, DecodeSig(main->results()->Get(i), "result", i));
      out.devices_used |= 1u << static_cast<uint32_t>(info.device);
      out.outputs.push_back(std::move(info));
    }
  }
  return Status::Ok();
}

Status ResolveLibrary(LoadedExecutable& out, const ser::ExecutableView& view, const LoadOptions& options,
                      const std::string& default_library) {
  const std::string id = ToString(view.root->kernel_library_id());
  bool needs_library = false;
  for (const KernelEntry& k : out.kernels) {
    if (k.kind == static_cast<uint8_t>(ser::KernelKind::kCpuGenerated) ||
        k.kind == static_cast<uint8_t>(ser::KernelKind::kCudaGenerated)) {
      needs_library = true;
    }
  }
  if (!needs_library) return Status::Ok();
  if (id.empty()) {
    return InvalidExecutable("the executable has generated kernels but no kernel_library_id");
  }
  const std::string path = !options.library_path.empty() ? options.library_path : default_library;
  if (path.empty()) {
    return InvalidArgument("the executable needs kernel library \"" + id +
                           "\": pass LoadOptions::library_path when loading from memory");
  }
  if (view.root->targets() != nullptr) {
    for (const auto* target : *view.root->targets()) {
      if (target->device() != keel::fb::DeviceKind::cpu || target->features() == nullptr) continue;
      KEEL_RETURN_IF_ERROR(CheckHostCpuFeatures(target->features()->string_view()));
    }
  }
  KernelLibrary::Expected expected;
  expected.id = id;
  if (const auto* sha = view.root->kernel_library_sha256()) {  // size 32: checked by ReadExecutable
    expected.size = view.root->kernel_library_size();
    expected.sha256 = std::span<const uint8_t>(sha->data(), sha->size());
  }
  KEEL_ASSIGN_OR_RETURN(out.library, KernelLibrary::Open(path, expected));
  out.library_path = path;
  for (KernelEntry& k : out.kernels) {
    if (k.kind == static_cast<uint8_t>(ser::KernelKind::kCpuGenerated)) {
      KEEL_ASSIGN_OR_RETURN(k.host_fn, out.library->FindKernel(k.name));
    }
  }
  return Status::Ok();
}

}  // namespace

Status DecodeExecutable(LoadedExecutable& out, const LoadOptions& options, const std::string& default_library) {
  KEEL_ASSIGN_OR_RETURN(const ser::ExecutableView view, ser::ReadExecutable(out.file->bytes()));
  KEEL_RETURN_IF_ERROR(DecodeTables(out, view));
  KEEL_RETURN_IF_ERROR(FunctionDecoder(out, *view.main()).Decode());
  KEEL_RETURN_IF_ERROR(ResolveLibrary(out, view, options, default_library));
  KEEL_ASSIGN_OR_RETURN(out.host_block, LayOutHostBlock(out));
  return Status::Ok();
}

}  // namespace keel::vm_internal
