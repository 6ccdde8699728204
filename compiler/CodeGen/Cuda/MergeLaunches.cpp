//===- MergeLaunches.cpp - independent neighbouring kernels, one launch --===//
//
// A CUDA launch costs a few microseconds however little the kernel does:
// the driver's (or the graph's) launch, then the ramp up and the tail of
// a grid that may not fill the GPU. GPT-2's bf16 step ends in 148 Adam
// updates one after another, most of them on a bias or a layer norm's 768
// elements (3 blocks), and squares and sums each gradient in runs of four
// or five small kernels; the forward pass casts two weights to bf16 before
// each matmul. Nothing orders those kernels among themselves: they read
// and write disjoint bytes.
//
// This pass merges each run of such launches into one (XLA's horizontal
// fusion, PyTorch's multi-tensor optimizers): the merged kernel's grid is
// its members' grids one after another, and block b runs the member whose
// range holds it, as block b - start of a grid of that member's size. Each
// kernel takes its strides from gpu.block_id and gpu.grid_dim (they are
// right for any grid), so a member's code is its own function's, with
// those two replaced. The function reads every member's words, in order.
//
// A run is launches with nothing but declarations between them (a matmul,
// a copy, a fill or a collective ends it). A launch joins the run when
//   - its kernel has the run's block size and uses only the x dimension;
//   - it writes no byte any member reads or writes, and reads no byte a
//     member writes (merged, they would race);
//   - none of its buffers' roots shares bytes with another root a member
//     uses: the memory plan reuses bytes between steps that run one after
//     the other, and the sched dialect's liveness rule (program_c2) takes a
//     view's life to be its root's (a gradient's bucket, not the gradient);
//   - the merged kernel stays within 64 members, 480 words (CUDA's 4 KB of
//     kernel parameters: the slabs' descriptors take 200 bytes) and 16 KB
//     of shared memory (the members' shared arrays, each its own, and 32
//     elements for each all-reduce, which MLIR's lowering gives an array).
// The merged launch reads and writes its members' buffers, moves their
// bytes, and carries their origins; its label is the first member's
// kernel number, `x<members>`, and the members' op names. Merged kernels
// that print alike but for their names (the same run in every layer) are
// one function. `sched.members` on the launch gives each member's buffers
// and origins (the step program's KernelMember: --check-numerics names the
// member that made a value). `sched.cuda_members` on the function lists
// the members' grids, for the host emulation (EmulateCudaKernels.cpp), which
// runs every block of a merged kernel in turn. A launch that could have joined
// the run before it says why it did not in `sched.merge` ("apart from k7's run:
// reads bytes k7 writes"), as fusion's notes say why an op starts a kernel.
//
//===----------------------------------------------------------------------===//

#include "compiler/CodeGen/Cpu/KernelEmitter.h"
#include "compiler/CodeGen/Cuda/Passes.h"

#include "abi/Abi.h"
#include "dialects/Schedule/ScheduleOps.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <optional>

namespace sinter::codegen {
#define GEN_PASS_DEF_MERGECUDALAUNCHESPASS
#include "compiler/CodeGen/Cuda/Passes.h.inc"
} // namespace sinter::codegen

using namespace mlir;
using namespace sinter;

namespace {

constexpr int64_t kMaxMembers = 64;
/// (4096 bytes of parameters - 5 slabs x 40 bytes of descriptor) / 8.
constexpr int64_t kMaxWords = 480;
constexpr int64_t kMaxSharedBytes = 16 << 10;

/// On a launch that could have joined the run before it: why not.
constexpr llvm::StringLiteral kMergeAttr = "sched.merge";

/// A buffer a launch passes: its bytes [begin, end) of a slab, and those of
/// its root view (the view it aliases through any chain; itself if none).
struct Range {
  Operation *slab, *root;
  int64_t begin, end, rootBegin, rootEnd;
};

/// Whether two buffers' roots differ but share bytes. The sched dialect's
/// liveness rule (program_c2) takes a view's life to be its root's, and the
/// memory plan gave two roots the same bytes only because no step used
/// both; a merged launch that used both would break the plan.
bool sharedRoots(const Range &a, const Range &b) {
  return a.slab == b.slab && a.root != b.root && a.rootBegin < b.rootEnd &&
         b.rootBegin < a.rootEnd;
}

/// Whether two views of one root meet (members that write there would race).
bool meet(const Range &a, const Range &b) {
  return a.slab == b.slab && a.root == b.root && a.begin < b.end &&
         b.begin < a.end;
}

/// A launch that may join a run.
struct Member {
  sched::LaunchOp launch;
  func::FuncOp fn;
  SmallVector<Range> reads, writes;
  int64_t block = 0, grid = 0, words = 0, sharedBytes = 0;
};

/// Bytes of a shared array's element (an index: 8).
int64_t bytesOf(Type t) {
  return t.isIntOrFloat() ? (t.getIntOrFloatBitWidth() + 7) / 8 : 8;
}

/// Each buffer's bytes and its root's; nullopt when one is not a view.
std::optional<SmallVector<Range>> rangesOf(ValueRange buffers) {
  SmallVector<Range> out;
  for (Value v : buffers) {
    auto view = v.getDefiningOp<sched::ViewOp>();
    if (!view)
      return std::nullopt;
    sched::ViewOp root = view.getRoot();
    int64_t begin = view.getOffset(), rootBegin = root.getOffset();
    out.push_back({view.getSlabOp().getOperation(), root.getOperation(), begin,
                   begin + view.getBytes(), rootBegin,
                   rootBegin + root.getBytes()});
  }
  return out;
}

/// What a kernel function brings to a run: its block size and the shared
/// memory it needs.
struct KernelFacts {
  int64_t block = 0, sharedBytes = 0;
};

/// `fn`'s facts, or nullopt when it must stay alone (not a lowered CUDA
/// kernel, a y or z dimension, a shared array of unknown size, an
/// attribute the merged function would lose).
std::optional<KernelFacts> factsOf(func::FuncOp fn) {
  if (!fn || !fn.getBody().hasOneBlock())
    return std::nullopt;
  auto block = fn->getAttrOfType<IntegerAttr>("sched.cuda_block");
  if (!block)
    return std::nullopt;
  // Attributes the merged function would lose (sched.causal_rows, a
  // merged kernel's members) keep a kernel on its own.
  for (NamedAttribute a : fn->getDiscardableAttrs())
    if (!llvm::is_contained({StringRef("sched.cuda_block"),
                             StringRef("sched.cuda_grid"),
                             StringRef(sched::kKernelArgsAttr)},
                            a.getName().getValue()))
      return std::nullopt;
  KernelFacts facts;
  facts.block = block.getInt();
  bool mergeable = true;
  fn.walk([&](Operation *op) {
    if (auto a = dyn_cast<memref::AllocaOp>(op)) {
      MemRefType t = a.getType();
      if (a->hasAttr(codegen::kWorkgroupAttr) && t.hasStaticShape())
        facts.sharedBytes += t.getNumElements() * bytesOf(t.getElementType());
      else if (a->hasAttr(codegen::kWorkgroupAttr))
        mergeable = false;
    } else if (auto id = dyn_cast<gpu::BlockIdOp>(op))
      mergeable &= id.getDimension() == gpu::Dimension::x;
    else if (auto dim = dyn_cast<gpu::GridDimOp>(op))
      mergeable &= dim.getDimension() == gpu::Dimension::x;
    else if (auto reduce = dyn_cast<gpu::AllReduceOp>(op))
      facts.sharedBytes += 32 * bytesOf(reduce.getType());
  });
  if (!mergeable)
    return std::nullopt;
  return facts;
}

/// `launch` as a member of a run, or nullopt when it must stay alone. Each
/// function's facts are found once (`facts`): the launches of one kernel in
/// every layer share it.
std::optional<Member>
memberOf(sched::LaunchOp launch, const SymbolTable &symbols,
         llvm::DenseMap<Operation *, std::optional<KernelFacts>> &facts) {
  auto fn = symbols.lookup<func::FuncOp>(launch.getKernel());
  if (!fn || !launch.getExtent())
    return std::nullopt;
  auto [it, fresh] = facts.try_emplace(fn.getOperation());
  if (fresh)
    it->second = factsOf(fn);
  std::optional<SmallVector<Range>> reads = rangesOf(launch.getInputs());
  std::optional<SmallVector<Range>> writes = rangesOf(launch.getOutputs());
  if (!it->second || !reads || !writes)
    return std::nullopt;
  Member m;
  m.launch = launch;
  m.fn = fn;
  m.block = it->second->block;
  m.sharedBytes = it->second->sharedBytes;
  m.grid = *launch.getExtent();
  m.words = launch.getArgs() ? launch.getArgs()->size() : 0;
  m.reads = std::move(*reads);
  m.writes = std::move(*writes);
  return m;
}

/// The kernel number of a launch's label ("k822").
StringRef numberOf(sched::LaunchOp launch) {
  StringRef label = launch.getLabel().value_or("");
  return label.empty() ? StringRef("k?") : label.split('_').first;
}

/// Why `m` cannot join `run` ("" when it can).
std::string whyApart(MutableArrayRef<Member> run, const Member &m) {
  if (run.empty())
    return "";
  if (m.block != run.front().block)
    return (Twine(m.block) + " threads a block, the run's " +
            Twine(run.front().block))
        .str();
  if (static_cast<int64_t>(run.size()) >= kMaxMembers)
    return "the run has " + std::to_string(kMaxMembers) + " members";
  int64_t words = m.words, shared = m.sharedBytes;
  for (Member &r : run) {
    words += r.words;
    shared += r.sharedBytes;
    std::string number = numberOf(r.launch).str();
    for (auto [uses, writes] :
         {std::pair(&m.reads, false), std::pair(&m.writes, true)})
      for (const Range &x : *uses)
        for (auto [theirs, theyWrite] :
             {std::pair(&r.reads, false), std::pair(&r.writes, true)}) {
          for (const Range &y : *theirs) {
            if (sharedRoots(x, y))
              return "the memory plan gives it bytes of a buffer " + number +
                     " uses";
            if ((writes || theyWrite) && meet(x, y))
              return (Twine(writes ? "writes" : "reads") + " bytes " +
                      number + (theyWrite ? " writes" : " reads"))
                  .str();
          }
        }
  }
  if (words > kMaxWords)
    return "the run's words would be " + std::to_string(words) + " (" +
           std::to_string(kMaxWords) + " at most)";
  if (shared > kMaxSharedBytes)
    return "the run's shared memory would be " + std::to_string(shared) +
           " bytes (" + std::to_string(kMaxSharedBytes) + " at most)";
  return "";
}

/// "k822_x64_mul_adam_update": the first member's number, the count, and
/// the members' op names (each once, in order).
std::string labelOf(MutableArrayRef<Member> run) {
  llvm::SetVector<StringRef> ops;
  for (Member &m : run) {
    auto [head, tail] = m.launch.getLabel().value_or("").split('_');
    ops.insert(tail.empty() ? head : tail);
  }
  std::string out = numberOf(run.front().launch).str() + "_x" +
                    std::to_string(run.size()) + "_";
  for (auto [i, op] : llvm::enumerate(ops))
    out += (i ? "+" : "") + op.str();
  return out;
}

class MergeCudaLaunchesPass
    : public codegen::impl::MergeCudaLaunchesPassBase<MergeCudaLaunchesPass> {
public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    llvm::DenseMap<Operation *, std::optional<KernelFacts>> facts;
    for (auto program : module.getOps<sched::ProgramOp>()) {
      SmallVector<Member> run;
      auto flush = [&] {
        if (run.size() > 1)
          merge(run, symbols);
        run.clear();
      };
      for (Operation &op : llvm::make_early_inc_range(program.getBlock())) {
        if (isa<sched::ViewOp, sched::SlabOp, sched::ArgumentOp,
                sched::ResultOp>(op))
          continue;
        auto launch = dyn_cast<sched::LaunchOp>(op);
        std::optional<Member> m =
            launch ? memberOf(launch, symbols, facts) : std::nullopt;
        if (!m) {
          flush();
          continue;
        }
        std::string why = whyApart(run, *m);
        if (!why.empty()) {
          m->launch->setAttr(
              kMergeAttr,
              StringAttr::get(&getContext(), "apart from " +
                                                 numberOf(run.back().launch) +
                                                 "'s run: " + why));
          flush();
        }
        run.push_back(std::move(*m));
      }
      flush();
    }
    shareMerged(symbols);
    // The members' functions no launch names any more.
    llvm::StringSet<> named;
    for (auto program : module.getOps<sched::ProgramOp>())
      for (auto launch : program.getBlock().getOps<sched::LaunchOp>())
        named.insert(launch.getKernel());
    for (auto fn : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (fn->hasAttr("sched.cuda_block") && !named.contains(fn.getName()))
        symbols.erase(fn);
  }

private:
  void merge(MutableArrayRef<Member> run, SymbolTable &symbols);
  void shareMerged(SymbolTable &symbols);

  SmallVector<std::pair<sched::LaunchOp, func::FuncOp>> merged;
};

void MergeCudaLaunchesPass::merge(MutableArrayRef<Member> run,
                                  SymbolTable &symbols) {
  MLIRContext *ctx = &getContext();
  OpBuilder b(ctx);
  SmallVector<Location> locs;
  int64_t words = 0, grid = 0, bytes = 0;
  SmallVector<int64_t> args, grids;
  SmallVector<Attribute> origins, members;
  llvm::SetVector<Value> inputs, outputs;
  for (Member &m : run) {
    locs.push_back(m.launch.getLoc());
    words += m.words;
    grid += m.grid;
    grids.push_back(m.grid);
    bytes += m.launch.getBytes().value_or(0);
    if (m.launch.getArgs())
      llvm::append_range(args, *m.launch.getArgs());
    int64_t memberOrigins = 0;
    if (auto o = m.launch->getAttrOfType<ArrayAttr>(sched::kOriginsAttr)) {
      llvm::append_range(origins, o.getValue());
      memberOrigins = o.size();
    }
    inputs.insert(m.launch.getInputs().begin(), m.launch.getInputs().end());
    outputs.insert(m.launch.getOutputs().begin(), m.launch.getOutputs().end());
    // The member's buffers as indices into the merged launch's.
    auto indices = [](const llvm::SetVector<Value> &all, ValueRange mine) {
      SmallVector<int64_t> at;
      for (Value v : mine)
        at.push_back(llvm::find(all, v) - all.begin());
      return at;
    };
    members.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("inputs", b.getDenseI64ArrayAttr(
                                      indices(inputs, m.launch.getInputs()))),
         b.getNamedAttr("outputs", b.getDenseI64ArrayAttr(indices(
                                       outputs, m.launch.getOutputs()))),
         b.getNamedAttr("origins", b.getI64IntegerAttr(memberOrigins))}));
  }
  Location loc = FusedLoc::get(ctx, locs);

  auto slabType = MemRefType::get({ShapedType::kDynamic}, b.getI8Type());
  SmallVector<Type> argTypes(abi::kNumSlabs, slabType);
  argTypes.append(words, b.getI64Type());
  auto fn = func::FuncOp::create(
      loc, (run.front().launch.getKernel() + "_x" + Twine(run.size())).str(),
      b.getFunctionType(argTypes, {}));
  symbols.insert(fn, Block::iterator(run.front().fn));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value blockId = b.create<gpu::BlockIdOp>(loc, gpu::Dimension::x);
  int64_t start = 0, word = 0;
  for (Member &m : run) {
    Value local = b.create<arith::SubIOp>(
        loc, blockId, b.create<arith::ConstantIndexOp>(loc, start));
    Value mine =
        b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, local,
                                b.create<arith::ConstantIndexOp>(loc, m.grid));
    auto branch = b.create<scf::IfOp>(loc, mine, /*withElseRegion=*/false);
    OpBuilder inner = branch.getThenBodyBuilder();
    Value memberGrid = inner.create<arith::ConstantIndexOp>(loc, m.grid);
    Block &body = m.fn.getBody().front();
    IRMapping map;
    for (int64_t k = 0; k < abi::kNumSlabs; ++k)
      map.map(body.getArgument(k), entry->getArgument(k));
    for (int64_t w = 0; w < m.words; ++w)
      map.map(body.getArgument(abi::kNumSlabs + w),
              entry->getArgument(abi::kNumSlabs + word + w));
    for (Operation &op : body.without_terminator())
      inner.clone(op, map);
    branch.getThenRegion().walk([&](Operation *op) {
      if (isa<gpu::BlockIdOp>(op))
        op->replaceAllUsesWith(ValueRange{local});
      else if (isa<gpu::GridDimOp>(op))
        op->replaceAllUsesWith(ValueRange{memberGrid});
      else
        return;
      op->erase();
    });
    start += m.grid;
    word += m.words;
  }
  b.create<func::ReturnOp>(loc);
  fn->setAttr("sched.cuda_block", b.getI64IntegerAttr(run.front().block));
  fn->setAttr("sched.cuda_grid", b.getI64IntegerAttr(grid));
  fn->setAttr(sched::kKernelArgsAttr, b.getI64IntegerAttr(words));
  fn->setAttr(codegen::kMembersAttr, b.getDenseI64ArrayAttr(grids));

  b.setInsertionPointAfter(run.back().launch);
  auto launch = b.create<sched::LaunchOp>(
      loc, FlatSymbolRefAttr::get(fn.getSymNameAttr()), inputs.getArrayRef(),
      outputs.getArrayRef(), b.getI64IntegerAttr(grid),
      b.getI64IntegerAttr(bytes), b.getStringAttr(labelOf(run)),
      fn.getSymNameAttr(), b.getDenseI64ArrayAttr(args));
  launch->setAttr("sched.cuda_block", b.getI64IntegerAttr(run.front().block));
  launch->setAttr(sched::kOriginsAttr, b.getArrayAttr(origins));
  launch->setAttr(sched::kMembersAttr, b.getArrayAttr(members));
  if (Attribute why = run.front().launch->getAttr(kMergeAttr))
    launch->setAttr(kMergeAttr, why);
  for (Member &m : run)
    m.launch.erase();
  merged.push_back({launch, fn});
}

void MergeCudaLaunchesPass::shareMerged(SymbolTable &symbols) {
  // The same run in every layer: one function.
  llvm::StringMap<func::FuncOp> first;
  SmallVector<func::FuncOp> copies;
  for (auto [launch, fn] : merged) {
    auto [it, inserted] = first.try_emplace(codegen::bodyText(fn), fn);
    if (inserted)
      continue;
    launch.setKernel(it->second.getSymName());
    launch.setSymbolAttr(it->second.getSymNameAttr());
    if (!llvm::is_contained(copies, fn))
      copies.push_back(fn);
  }
  for (func::FuncOp fn : copies)
    symbols.erase(fn);
  merged.clear();
}

} // namespace
