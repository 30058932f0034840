// compiler/driver/cuda_host_emitter_run.cc — keelc --emit=cuda-host: the
// program's Run (see cuda_host_emitter_internal.h): the instruction stream of
// `main`, one block per instruction (vm/interpreter.cc Execute), each commented with
// its index, opcode and debug name and followed by keel-run --trace's line for it.
#include <string>
#include <vector>

#include "compiler/driver/cuda_host_emitter_internal.h"
#include "serialization/library_ops.h"

namespace keel::driver::cuda_host {

namespace lo = ser::library_ops;

// ---- the run: one block per instruction ----

Status Emitter::EmitInvoke(uint32_t pc, const std::string& dbg, const fb::Invoke& op) {
  const KernelPlan& p = plans_.at(op.kernel());
  std::vector<std::string> a;
  if (op.args() != nullptr) {
    for (uint32_t r : *op.args()) a.push_back("R[" + std::to_string(r) + "]");
  }
  const std::string k = "k" + std::to_string(op.kernel());
  const std::string tr = "  Trace(" + std::to_string(pc) + ", \"invoke\", " + Lit(dbg) + ", ";
  const std::string kname = Lit(" kernel=" + p.name);
  if (p.kind == fb::KernelKind::cuda_generated) {
    o_ << "  {\n    void* args[] = {";
    for (size_t j = 0; j < a.size(); ++j) o_ << (j ? ", " : "") << a[j];
    o_ << (a.empty() ? "nullptr" : "") << "};\n    void* params[] = {";
    for (size_t j = 0; j < a.size(); ++j) o_ << (j ? ", " : "") << "&args[" << j << "]";
    o_ << (a.empty() ? "nullptr" : "") << "};\n"
       << "    LaunchGenerated(" << k << ", " << p.grid[0] << ", " << p.grid[1] << ", " << p.grid[2] << ", "
       << p.block[0] << ", " << p.block[1] << ", " << p.block[2] << ", " << p.shared << ", params);\n  }\n"
       << tr << "std::string(" << Lit(" launch " + p.launch_call) << ") + GeneratedLaunchSuffix() + " << kname
       << ");\n";
    return Status::Ok();
  }
  auto arg = [&](int i) -> Result<std::string> {
    if (i < 0 || static_cast<size_t>(i) >= a.size()) return InvalidExecutable("kernel " + p.name + ": missing argument");
    return a[static_cast<size_t>(i)];
  };
  if (p.op == lo::kCublasGemm) {
    KEEL_ASSIGN_OR_RETURN(const std::string A, arg(0));
    KEEL_ASSIGN_OR_RETURN(const std::string B, arg(1));
    KEEL_ASSIGN_OR_RETURN(const std::string Y, arg(p.y_arg));
    std::string bias = "nullptr", res = "nullptr";
    if (p.has_bias) { KEEL_ASSIGN_OR_RETURN(bias, arg(p.bias_arg)); }
    if (p.has_residual) { KEEL_ASSIGN_OR_RETURN(res, arg(p.res_arg)); }
    // CublasGemm::Launch (vm/cuda/library_calls_cublaslt.h GemmLaunch): the 16-byte-aligned
    // algorithm when every operand allows it.
    o_ << "  {\n    const std::string& call = GemmRun(" << k << ", " << A << ", " << B << ", " << bias << ", " << res
       << ", " << Y << ");\n"
       << "  " << tr << "\" launch \" + call + " << kname << ");\n  }\n";
    return Status::Ok();
  }
  if (IsCudnnConv(p.op) || p.op == lo::kKeelConv2d) {
    KEEL_ASSIGN_OR_RETURN(const std::string X, arg(0));
    KEEL_ASSIGN_OR_RETURN(const std::string W, arg(1));
    KEEL_ASSIGN_OR_RETURN(const std::string Y, arg(p.y_arg));
    std::string bias = "nullptr", res;
    if (p.has_bias) { KEEL_ASSIGN_OR_RETURN(bias, arg(p.bias_arg)); }
    if (p.has_residual) { KEEL_ASSIGN_OR_RETURN(res, arg(p.res_arg)); }
    // CudnnConv::Launch: the fused call or conv + keel_bias_act, as chosen at load (ConvRun);
    // KeelConv::Launch (KeelConvRun).
    const char* run = p.op == lo::kKeelConv2d ? "KeelConvRun(" : "ConvRun(";
    o_ << "  {\n    const std::string& call = " << run << k << ", " << X << ", " << W << ", " << bias << ", "
       << (p.has_residual ? res : std::string("nullptr")) << ", " << Y << ");\n"
       << "  " << tr << "\" launch \" + call + " << kname << ");\n  }\n";
    return Status::Ok();
  }
  if (p.op == lo::kKeelAttention) {
    std::vector<std::string> t;
    for (int j = 0; j < 3; ++j) {
      KEEL_ASSIGN_OR_RETURN(std::string r, arg(j));
      t.push_back(r);
    }
    std::string mask = "nullptr";
    if (p.has_mask) { KEEL_ASSIGN_OR_RETURN(mask, arg(3)); }
    KEEL_ASSIGN_OR_RETURN(const std::string Y, arg(p.y_arg));
    // KeelAttention::Launch.
    o_ << "  {\n    const std::string& call = AttentionRun(" << k << ", " << t[0] << ", " << t[1] << ", " << t[2]
       << ", " << mask << ", " << Y << ");\n"
       << "  " << tr << "\" launch \" + call + " << kname << ");\n  }\n";
    return Status::Ok();
  }
  KEEL_ASSIGN_OR_RETURN(const std::string X, arg(0));
  KEEL_ASSIGN_OR_RETURN(const std::string Y, arg(1));
  o_ << "  LIB_CHECK(cl::PoolForward(g_cudnn, " << k << ".d, " << X << ", " << Y << "));\n"
     << tr << "\" launch \" + " << k << ".call + " << kname << ");\n";
  return Status::Ok();
}

Status Emitter::EmitRun() {
  const fb::Function& f = main_fn();
  const uint32_t nregs = f.num_registers();
  reg_device_.assign(nregs, 0);
  reg_bytes_.assign(nregs, 0);
  reg_dynamic_slot_.assign(nregs, -1);
  const auto* params = f.params();
  for (uint32_t i = 0; i < params->size(); ++i) {
    reg_device_[i] = static_cast<uint8_t>(params->Get(i)->device());
    reg_bytes_[i] = ByteSize(Shape(params->Get(i)->shape()), params->Get(i)->dtype());
  }
  const fb::MemoryPlan* plan = root().memory_plan();
  const auto* results = f.results();
  o_ << "// Registers of `main` (storages and tensor views are plain pointers here).\n"
     << "static std::vector<uint8_t*> R(" << std::max<uint32_t>(1, nregs) << ");\n"
     << "static uint8_t* g_output[" << std::max<size_t>(1, results->size()) << "] = {};\n"
     << "static std::vector<std::pair<void*, bool>> g_live_dynamic;  // dynamic storages the run leaves allocated\n\n"
     << "// The instruction stream of `main`, one block per instruction.\n"
     << "static void Run() {\n";
  for (uint32_t i = 0; i < params->size(); ++i) {
    o_ << "  R[" << i << "] = g_input[" << i << "];  // param " << Com(Str(params->Get(i)->name())) << "\n";
  }
  const auto* insts = f.instructions();
  for (uint32_t pc = 0; insts != nullptr && pc < insts->size(); ++pc) {
    const fb::Instruction* in = insts->Get(pc);
    const std::string dbg = Str(in->debug_name());
    auto head = [&](const char* opcode) {
      o_ << "\n  // #" << pc << " " << opcode << (dbg.empty() ? "" : " [" + Com(dbg) + "]") << "\n";
    };
    auto trace = [&](const char* opcode, const std::string& what) {
      o_ << "  Trace(" << pc << ", \"" << opcode << "\", " << Lit(dbg) << ", " << Lit(what) << ");\n";
    };
    switch (in->op_type()) {
      case fb::Op::AllocStorage: {
        const auto* op = in->op_as_AllocStorage();
        const fb::PlannedStorage* s = plan->storages()->Get(op->plan_slot());
        const bool dev = s->device() != fb::DeviceKind::cpu;
        head("alloc_storage");
        reg_device_[op->dst()] = dev ? 1 : 0;
        reg_bytes_[op->dst()] = s->size();
        if (s->arena() >= 0) {
          o_ << "  R[" << op->dst() << "] = g_arena[" << s->arena() << "] + " << U64(s->offset()) << ";  // slot "
             << op->plan_slot() << ", " << s->size() << " bytes\n";
          trace("alloc_storage", " arena-slice arena " + std::to_string(s->size()) + " bytes");
        } else {
          o_ << "  R[" << op->dst() << "] = static_cast<uint8_t*>(" << (dev ? "DeviceMalloc(" : "HostMalloc(")
             << U64(s->size()) << ", " << s->alignment() << "));  // slot " << op->plan_slot() << " (dynamic)\n";
          trace("alloc_storage", std::string(" allocate ") + (dev ? "cudaMalloc " : "aligned_alloc ") +
                                     std::to_string(s->size()) + " bytes");
          reg_dynamic_slot_[op->dst()] = static_cast<int32_t>(op->plan_slot());
        }
        break;
      }
      case fb::Op::AllocTensor: {
        const auto* op = in->op_as_AllocTensor();
        const std::vector<int64_t> shape = Shape(op->shape());
        head("alloc_tensor");
        o_ << "  R[" << op->dst() << "] = R[" << op->storage() << "] + " << U64(op->offset()) << ";  // "
           << ShapeText(shape) << " " << ser::DTypeName(ser::FromFb(op->dtype())) << "\n";
        trace("alloc_tensor", "");
        reg_device_[op->dst()] = reg_device_[op->storage()];
        reg_bytes_[op->dst()] = ByteSize(shape, op->dtype());
        reg_dynamic_slot_[op->dst()] = -1;
        break;
      }
      case fb::Op::LoadConst: {
        const auto* op = in->op_as_LoadConst();
        const fb::Constant* c = root().constants()->Get(op->const_index());
        head("load_const");
        o_ << "  R[" << op->dst() << "] = g_const[" << op->const_index() << "];  // " << Com(Str(c->name())) << "\n";
        trace("load_const", "");
        reg_device_[op->dst()] = c->device() != fb::DeviceKind::cpu ? 1 : 0;
        reg_bytes_[op->dst()] = c->size();
        reg_dynamic_slot_[op->dst()] = -1;
        break;
      }
      case fb::Op::Copy: {
        const auto* op = in->op_as_Copy();
        const bool src_dev = reg_device_[op->src()] != 0, dst_dev = reg_device_[op->dst()] != 0;
        const uint64_t bytes = reg_bytes_[op->src()];
        head("copy");
        const char* dir = src_dev ? (dst_dev ? "device->device" : "device->host")
                                  : (dst_dev ? "host->device" : "host->host");
        if (!src_dev && !dst_dev) {
          o_ << "  std::memcpy(R[" << op->dst() << "], R[" << op->src() << "], " << U64(bytes) << ");\n";
          trace("copy", std::string(" copy memcpy ") + dir + " " + std::to_string(bytes) + " bytes");
        } else {
          const char* kind = src_dev ? (dst_dev ? "cudaMemcpyDefault" : "cudaMemcpyDeviceToHost")
                                     : "cudaMemcpyHostToDevice";
          if (bytes != 0) {
            o_ << "  CUDA_CHECK(cudaMemcpyAsync(R[" << op->dst() << "], R[" << op->src() << "], " << U64(bytes)
               << ", " << kind << ", g_stream));\n";
          }
          trace("copy", std::string(" copy cudaMemcpyAsync ") + dir + " " + std::to_string(bytes) + " bytes");
        }
        break;
      }
      case fb::Op::Invoke: {
        head("invoke");
        o_ << "  // kernel " << in->op_as_Invoke()->kernel() << ": "
           << Com(plans_.at(in->op_as_Invoke()->kernel()).name) << "\n";
        KEEL_RETURN_IF_ERROR(EmitInvoke(pc, dbg, *in->op_as_Invoke()));
        break;
      }
      case fb::Op::FreeStorage: {
        const auto* op = in->op_as_FreeStorage();
        const bool dev = reg_device_[op->reg()] != 0;
        head("free_storage");
        o_ << "  " << (dev ? "DeviceFree(R[" : "std::free(R[") << op->reg() << "]);\n"
           << "  R[" << op->reg() << "] = nullptr;\n";
        trace("free_storage", dev ? " free cudaFree 0 bytes" : " free free 0 bytes");
        reg_dynamic_slot_[op->reg()] = -1;
        break;
      }
      case fb::Op::Ret: {
        const auto* op = in->op_as_Ret();
        head("ret");
        for (uint32_t j = 0; op->regs() != nullptr && j < op->regs()->size(); ++j) {
          o_ << "  g_output[" << j << "] = R[" << op->regs()->Get(j) << "];  // "
             << Com(Str(results->Get(j)->name())) << "\n";
        }
        trace("ret", "");
        break;
      }
      default:
        return InvalidExecutable("instruction " + std::to_string(pc) + " has an unknown opcode");
    }
  }
  // Dynamic storages still allocated at the end (the outputs'): the VM frees them at
  // its next run or its destruction; Cleanup does.
  for (uint32_t r = 0; r < nregs; ++r) {
    if (reg_dynamic_slot_[r] >= 0) {
      o_ << "  g_live_dynamic.emplace_back(R[" << r << "], " << (reg_device_[r] ? "true" : "false") << ");\n";
    }
  }
  o_ << "}\n\n";
  return Status::Ok();
}

}  // namespace keel::driver::cuda_host
