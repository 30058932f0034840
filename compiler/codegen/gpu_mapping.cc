// compiler/codegen/gpu_mapping.cc — phase analysis and launch configuration
// for the NVPTX back end (see gpu_mapping.h). Every check here is
// conservative: a pattern that is not proven safe falls back to a simpler
// mapping (thread per iteration, then a single block), never to a wrong one.
#include "compiler/codegen/gpu_mapping.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <sstream>

namespace keel::codegen {
namespace {

// Loads of one base pointer that LLVM's load/store vectorizer considers together.
constexpr size_t kVectorizerChunk = 64;

// Memory a statement touches, keyed so that views of one argument coincide:
// "a<arg index>" for arguments, "w" for the workspace. Locals and constants are
// not shared memory and are tracked separately.
struct Access {
  std::set<std::string> reads, writes;
  std::set<int> locals_read, locals_written;
  bool has_parallel = false;
  bool has_if = false;
  size_t widest_element = 0;  // bytes, of the arguments and workspace read or written
};

std::string MemKey(const Buffer& b) {
  if (b.scope == BufferScope::kArg) return IndexedName("a", b.arg_index);
  if (b.scope == BufferScope::kWorkspace) return "w";
  return {};
}

void CollectExpr(const KernelFunc& k, const Expr& e, Access& a) {
  if (e.is_null()) return;
  if (e->kind == ExprKind::kLoad) {
    const Buffer& b = k.buffer(e->buffer);
    if (b.scope == BufferScope::kLocal) a.locals_read.insert(b.id);
    std::string key = MemKey(b);
    if (!key.empty()) {
      a.reads.insert(key);
      a.widest_element = std::max(a.widest_element, keel::DataTypeSize(b.dtype));
    }
  }
  for (const Expr& o : e->operands) CollectExpr(k, o, a);
}

void Collect(const KernelFunc& k, const StmtNode& s, Access& a) {
  if (s.kind == StmtKind::kFor && s.loop == LoopKind::kParallel) a.has_parallel = true;
  if (s.kind == StmtKind::kIf) a.has_if = true;
  if (s.kind == StmtKind::kStore) {
    const Buffer& b = k.buffer(s.buffer);
    if (b.scope == BufferScope::kLocal) a.locals_written.insert(b.id);
    std::string key = MemKey(b);
    if (!key.empty()) {
      a.writes.insert(key);
      a.widest_element = std::max(a.widest_element, keel::DataTypeSize(b.dtype));
    }
  }
  for (const Expr& i : s.indices) CollectExpr(k, i, a);
  CollectExpr(k, s.value, a);
  CollectExpr(k, s.cond, a);
  CollectExpr(k, s.begin, a);
  CollectExpr(k, s.end, a);
  for (const Stmt& c : s.body) Collect(k, *c, a);
  for (const Stmt& c : s.else_body) Collect(k, *c, a);
}

// True when `e` may read element `index` (constant indices) of `buffer`.
bool MayReadElement(const Expr& e, int buffer, const std::vector<Expr>& index) {
  if (e.is_null()) return false;
  if (e->kind == ExprKind::kLoad && e->buffer == buffer) {
    bool differs = false;
    for (size_t i = 0; i < index.size() && i < e->operands.size(); ++i)
      differs = differs || (e->operands[i].IsIntConst() && !e->operands[i].IsIntConst(index[i].int_value()));
    if (!differs) return true;
  }
  for (const Expr& o : e->operands)
    if (MayReadElement(o, buffer, index)) return true;
  return false;
}

// The most distinct loads of one argument or workspace buffer in `s` (a load shared by
// several expressions counts once, as the emitter emits it once).
void DistinctLoads(const KernelFunc& k, const Expr& e, std::map<std::string, std::set<const void*>>& loads) {
  if (e.is_null()) return;
  if (e->kind == ExprKind::kLoad) {
    const std::string key = MemKey(k.buffer(e->buffer));
    if (!key.empty()) loads[key].insert(e.get());
  }
  for (const Expr& o : e->operands) DistinctLoads(k, o, loads);
}
size_t MostLoadsOfOneBuffer(const KernelFunc& k, const StmtNode& s) {
  std::map<std::string, std::set<const void*>> loads;
  std::function<void(const StmtNode&)> walk = [&](const StmtNode& n) {
    for (const Expr& i : n.indices) DistinctLoads(k, i, loads);
    for (const Expr& e : {n.value, n.cond, n.begin, n.end}) DistinctLoads(k, e, loads);
    for (const Stmt& c : n.body) walk(*c);
    for (const Stmt& c : n.else_body) walk(*c);
  };
  walk(s);
  size_t most = 0;
  for (const auto& [key, set] : loads) most = std::max(most, set.size());
  return most;
}

bool ReadsLocal(const KernelFunc& k, const Expr& e) {
  Access a;
  CollectExpr(k, e, a);
  return !a.locals_read.empty();
}

// Every memory store under `s` is indexed by `var` (distinct iterations write
// distinct elements for the injective index maps lowerings produce).
bool StoresIndexedBy(const KernelFunc& k, const StmtNode& s, int64_t var) {
  if (s.kind == StmtKind::kStore && k.buffer(s.buffer).scope != BufferScope::kLocal) {
    bool uses = false;
    for (const Expr& i : s.indices) uses = uses || UsesVar(i, var);
    if (!uses) return false;
  }
  for (const Stmt& c : s.body)
    if (!StoresIndexedBy(k, *c, var)) return false;
  for (const Stmt& c : s.else_body)
    if (!StoresIndexedBy(k, *c, var)) return false;
  return true;
}

// Locals used under `body` are fully written by its leading scalar stores
// (constant indices, values not reading locals) before anything else runs, so
// each iteration starts from fresh state and iterations may run on any thread.
bool LocalsFreshPerIteration(const KernelFunc& k, const StmtNode& body, const Access& a) {
  std::set<int> used = a.locals_read;
  used.insert(a.locals_written.begin(), a.locals_written.end());
  if (used.empty()) return true;
  std::map<int, std::set<int64_t>> covered;
  for (const StmtNode* s : FlattenBlock(body)) {
    if (s->kind != StmtKind::kStore || k.buffer(s->buffer).scope != BufferScope::kLocal) break;
    if (ReadsLocal(k, s->value)) break;
    const Buffer& b = k.buffer(s->buffer);
    int64_t flat = 0, stride = 1;
    bool constant = true;
    for (size_t i = s->indices.size(); i-- > 0;) {
      if (!s->indices[i].IsIntConst()) { constant = false; break; }
      flat += s->indices[i].int_value() * stride;
      stride *= b.shape[i];
    }
    if (!constant) break;
    covered[b.id].insert(flat);
  }
  for (int id : used)
    if (static_cast<int64_t>(covered[id].size()) != k.buffer(id).NumElements()) return false;
  return true;
}

// A loop whose iterations may run on different threads in any order. Locals:
// either only read (row-uniform values) or re-initialized by every iteration.
enum class LocalPolicy { kReadOnly, kFresh };

bool IndependentLoop(const KernelFunc& k, const StmtNode& loop, LocalPolicy locals) {
  Access a;
  for (const Stmt& c : loop.body) Collect(k, *c, a);
  if (a.has_parallel) return false;
  for (const std::string& w : a.writes)
    if (a.reads.count(w)) return false;
  if (!StoresIndexedBy(k, loop, loop.var->int_value)) return false;
  if (a.locals_read.empty() && a.locals_written.empty()) return true;
  if (locals == LocalPolicy::kReadOnly) return a.locals_written.empty();
  StmtNode body;
  body.kind = StmtKind::kBlock;
  body.body = loop.body;
  return LocalsFreshPerIteration(k, body, a);
}

// Every argument and workspace element that `s` reads or writes is at a flat
// (row-major) offset whose coefficient in `var` is 0 or 1: consecutive `var`
// touch consecutive elements, so a thread's run of them is one vector access.
bool UnitStrideIn(const KernelFunc& k, const StmtNode& s, int64_t var) {
  auto access = [&](int buffer, const std::vector<Expr>& indices) {
    const Buffer& b = k.buffer(buffer);
    if (b.scope != BufferScope::kArg && b.scope != BufferScope::kWorkspace) return true;
    if (indices.size() != b.shape.size() && !(indices.size() == 1 && b.shape.empty())) return false;
    int64_t flat = 0, stride = 1;
    for (size_t i = indices.size(); i-- > 0;) {
      const std::optional<int64_t> c = VarCoefficient(indices[i], var);
      if (!c) return false;
      flat += *c * stride;
      stride *= b.shape.empty() ? 1 : b.shape[i];
    }
    return flat == 0 || flat == 1;
  };
  std::function<bool(const Expr&)> expr = [&](const Expr& e) {
    if (e.is_null()) return true;
    if (e->kind == ExprKind::kLoad && !access(e->buffer, e->operands)) return false;
    for (const Expr& o : e->operands)
      if (!expr(o)) return false;
    return true;
  };
  if (s.kind == StmtKind::kStore && !access(s.buffer, s.indices)) return false;
  for (const Expr& i : s.indices)
    if (!expr(i)) return false;
  if (!expr(s.value) || !expr(s.cond) || !expr(s.begin) || !expr(s.end)) return false;
  for (const Stmt& c : s.body)
    if (!UnitStrideIn(k, *c, var)) return false;
  for (const Stmt& c : s.else_body)
    if (!UnitStrideIn(k, *c, var)) return false;
  return true;
}

// kBlockPerRow: contiguous row elements per thread (8 for 2-byte data, else 4)
// when every row loop walks memory with unit stride and splits evenly into
// `row_threads` runs of them; 1 otherwise. The runs let the load/store
// vectorizer emit 128-bit accesses, where one element per thread and
// iteration costs a load instruction per element.
int64_t RowVectorWidth(const KernelFunc& k, const StmtNode& outer, int64_t row_threads) {
  Access a;
  Collect(k, outer, a);
  if (a.widest_element == 0 || a.widest_element > 4) return 1;
  const int64_t v = a.widest_element <= 2 ? 8 : 4;
  for (const Stmt& st : outer.body) {
    for (const StmtNode* s : FlattenBlock(*st)) {
      if (s->kind != StmtKind::kFor) continue;
      int64_t trip = 0;
      if (!ConstantTrip(*s, &trip) || trip % (row_threads * v) != 0) return 1;
      if (!UnitStrideIn(k, *s, s->var->int_value)) return 1;
    }
  }
  return v;
}

// The body of an outer loop as a row for kBlockPerRow; sets the longest row loop.
bool MatchRowBody(const KernelFunc& k, const StmtNode& outer, int64_t* longest, bool* has_reduction) {
  *longest = 0;
  *has_reduction = false;
  for (const Stmt& st : outer.body) {
    for (const StmtNode* s : FlattenBlock(*st)) {
      if (s->kind == StmtKind::kStore) continue;  // uniform scalar statement
      if (s->kind != StmtKind::kFor || s->loop == LoopKind::kParallel) return false;
      int64_t trip = 0;
      if (!ConstantTrip(*s, &trip)) return false;
      int buffer = -1;
      std::vector<Expr> index;
      BinaryOp op;
      Expr f;
      if (MatchRowReduction(k, *s, &buffer, &index, &op, &f)) {
        *has_reduction = true;
      } else {
        // Distributed loops may read the row's (uniform) locals but not write any.
        if (!IndependentLoop(k, *s, LocalPolicy::kReadOnly)) return false;
      }
      *longest = std::max(*longest, trip);
    }
  }
  return true;
}

uint32_t Clamp32(int64_t v) { return static_cast<uint32_t>(std::clamp<int64_t>(v, 1, 0x7fffffff)); }

}  // namespace

const char* GpuPhaseKindName(GpuPhaseKind kind) {
  switch (kind) {
    case GpuPhaseKind::kFlat: return "flat";
    case GpuPhaseKind::kBlockPerRow: return "block_per_row";
    case GpuPhaseKind::kThreadPerIter: return "thread_per_iter";
    case GpuPhaseKind::kSingleBlock: return "single_block";
  }
  return "?";
}

int64_t GpuPhase::Items() const {
  if (kind == GpuPhaseKind::kFlat) return rows * (inner / std::max<int64_t>(vector_width, 1));
  return rows;
}

std::string GpuMapping::Describe() const {
  std::ostringstream os;
  for (const GpuPhase& p : phases) {
    os << GpuPhaseKindName(p.kind) << "(rows=" << p.rows;
    if (p.kind == GpuPhaseKind::kFlat || p.kind == GpuPhaseKind::kBlockPerRow) os << ",inner=" << p.inner;
    if (p.vector_width > 1) os << ",vec=" << p.vector_width;
    if (p.kind == GpuPhaseKind::kBlockPerRow) os << ",row_threads=" << p.row_threads;
    os << ") ";
  }
  os << "grid=" << launch.grid << " block=" << launch.block;
  return os.str();
}

bool ConstantTrip(const StmtNode& s, int64_t* trip) {
  if (s.kind != StmtKind::kFor || !s.begin.IsIntConst() || !s.end.IsIntConst()) return false;
  *trip = std::max<int64_t>(0, s.end.int_value() - s.begin.int_value());
  return true;
}

std::vector<const StmtNode*> FlattenBlock(const StmtNode& s) {
  std::vector<const StmtNode*> out;
  if (s.kind != StmtKind::kBlock) {
    out.push_back(&s);
    return out;
  }
  for (const Stmt& c : s.body) {
    std::vector<const StmtNode*> sub = FlattenBlock(*c);
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

bool MatchRowReduction(const KernelFunc& k, const StmtNode& loop, int* buffer, std::vector<Expr>* index,
                       BinaryOp* op, Expr* f) {
  if (loop.kind != StmtKind::kFor || loop.loop == LoopKind::kParallel) return false;
  std::vector<const StmtNode*> body;
  for (const Stmt& c : loop.body) {
    std::vector<const StmtNode*> sub = FlattenBlock(*c);
    body.insert(body.end(), sub.begin(), sub.end());
  }
  if (body.size() != 1 || body[0]->kind != StmtKind::kStore) return false;
  const StmtNode& st = *body[0];
  const Buffer& acc = k.buffer(st.buffer);
  if (acc.scope != BufferScope::kLocal || acc.dtype != DType::kF32) return false;
  for (const Expr& i : st.indices)
    if (!i.IsIntConst()) return false;
  const Expr& v = st.value;
  if (v->kind != ExprKind::kBinary) return false;
  if (v->binary != BinaryOp::kAdd && v->binary != BinaryOp::kMax && v->binary != BinaryOp::kMin) return false;
  auto is_acc = [&](const Expr& e) {
    if (e->kind != ExprKind::kLoad || e->buffer != st.buffer || e->operands.size() != st.indices.size()) return false;
    for (size_t i = 0; i < st.indices.size(); ++i)
      if (!e->operands[i].IsIntConst(st.indices[i].int_value())) return false;
    return true;
  };
  Expr other;
  if (is_acc(v->operands[0])) other = v->operands[1];
  else if (is_acc(v->operands[1])) other = v->operands[0];
  else return false;
  if (MayReadElement(other, st.buffer, st.indices)) return false;
  *buffer = st.buffer;
  *index = st.indices;
  *op = v->binary;
  *f = other;
  return true;
}

Result<GpuMapping> MapKernelToGpu(const KernelFunc& kernel, const GpuMappingOptions& options) {
  if (!kernel.body()) return Internal("GPU mapping: kernel " + kernel.name() + " has no body");
  GpuMapping m;
  const int64_t tpb = options.threads_per_block;
  const int64_t max_grid = options.num_sms * options.blocks_per_sm;

  std::vector<const StmtNode*> top = FlattenBlock(*kernel.body());
  bool grid_ok = !top.empty();
  std::vector<Access> accesses;
  for (const StmtNode* s : top) {
    int64_t trip = 0;
    if (!ConstantTrip(*s, &trip) || (s->loop != LoopKind::kParallel && trip != 1)) { grid_ok = false; break; }
    Access a;
    for (const Stmt& c : s->body) Collect(kernel, *c, a);
    if (a.has_parallel) { grid_ok = false; break; }
    accesses.push_back(std::move(a));
  }
  // Phases share the launch without synchronization: none may touch what another writes.
  for (size_t i = 0; grid_ok && i < accesses.size(); ++i)
    for (size_t j = 0; grid_ok && j < accesses.size(); ++j) {
      if (i == j) continue;
      for (const std::string& w : accesses[i].writes)
        if (accesses[j].reads.count(w) || accesses[j].writes.count(w)) grid_ok = false;
    }

  if (!grid_ok) {
    GpuPhase p;
    p.kind = GpuPhaseKind::kSingleBlock;
    p.stmt = kernel.body().get();
    p.rows = 1;
    m.phases.push_back(p);
    m.launch.grid = 1;
    m.launch.block = static_cast<uint32_t>(tpb);
    return m;
  }

  int64_t max_items = 1;
  for (const StmtNode* s : top) {
    GpuPhase p;
    p.stmt = s;
    ConstantTrip(*s, &p.rows);
    p.kind = GpuPhaseKind::kThreadPerIter;
    std::vector<const StmtNode*> body;
    for (const Stmt& c : s->body) {
      std::vector<const StmtNode*> sub = FlattenBlock(*c);
      body.insert(body.end(), sub.begin(), sub.end());
    }
    int64_t inner = 0, longest = 0;
    bool has_reduction = false;
    if (top.size() == 1 && MatchRowBody(kernel, *s, &longest, &has_reduction) && has_reduction &&
        longest >= options.min_row_for_block) {
      p.kind = GpuPhaseKind::kBlockPerRow;
      p.inner = longest;
    } else if (body.size() == 1 && ConstantTrip(*body[0], &inner) && inner > 0 &&
               body[0]->loop != LoopKind::kParallel &&
               IndependentLoop(kernel, *body[0], LocalPolicy::kFresh)) {
      Access a;
      for (const Stmt& c : body[0]->body) Collect(kernel, *c, a);
      p.kind = GpuPhaseKind::kFlat;
      p.inner = inner;
      // Contiguous elements per thread let the load/store vectorizer emit
      // 128-bit accesses (4 f32 or 8 half elements); only for local-free
      // bodies (kept small).
      // LLVM's load/store vectorizer takes the loads of one buffer 64 at a time, in program
      // order, and the emitter emits an item's elements one after the other: more than 64
      // loads of one buffer per item leave most of them scalar (a 3x3 channels-last pool of
      // 8 half channels an item: 72 loads, one 128-bit access and 56 narrower ones).
      const size_t loads = MostLoadsOfOneBuffer(kernel, *body[0]);
      bool small_body = a.locals_read.empty() && a.locals_written.empty();
      for (int64_t v : {int64_t{8}, int64_t{4}}) {
        if (v == 8 && (a.widest_element > 2 || loads * 8 > kVectorizerChunk)) continue;
        if (small_body && inner % v == 0 && p.rows * inner >= v * tpb) {
          p.vector_width = v;
          break;
        }
      }
    }
    max_items = std::max(max_items, p.Items());
    m.phases.push_back(p);
  }

  if (m.phases.size() == 1 && m.phases[0].kind == GpuPhaseKind::kBlockPerRow) {
    GpuPhase& p = m.phases[0];
    if (p.inner <= options.max_row_for_warp) {
      // A warp per row: no block barriers, no shared memory. Up to 8 rows per
      // block while the grid still covers every SM.
      const int64_t rows_per_block = std::clamp<int64_t>(p.rows / options.num_sms, 1, std::min<int64_t>(8, tpb / 32));
      p.row_threads = 32;
      p.vector_width = RowVectorWidth(kernel, *p.stmt, p.row_threads);
      m.launch.block = static_cast<uint32_t>(32 * rows_per_block);
      m.launch.grid = Clamp32(std::min((p.rows + rows_per_block - 1) / rows_per_block,
                                       options.num_sms * (options.max_threads_per_sm / m.launch.block)));
      return m;
    }
    // Longer rows: roughly four row elements per thread, 256 threads at most.
    int64_t threads = 32;
    while (threads < tpb && threads * 4 < p.inner) threads *= 2;
    p.row_threads = threads;
    p.vector_width = RowVectorWidth(kernel, *p.stmt, p.row_threads);
    m.launch.block = static_cast<uint32_t>(threads);
    m.launch.grid = Clamp32(std::min(p.rows, options.num_sms * (options.max_threads_per_sm / threads)));
    return m;
  }
  m.launch.block = static_cast<uint32_t>(tpb);
  m.launch.grid = Clamp32(std::min((max_items + tpb - 1) / tpb, max_grid));
  return m;
}

}  // namespace keel::codegen
