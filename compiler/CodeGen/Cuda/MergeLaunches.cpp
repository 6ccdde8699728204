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
//     member writes (the memory plan reuses bytes between steps that run
//     one after the other; merged, they would run at once);
//   - the merged kernel stays within 64 members, 480 words (CUDA's 4 KB of
//     kernel parameters: the slabs' descriptors take 200 bytes) and 16 KB
//     of shared memory (the members' shared arrays, each its own, and 32
//     elements for each all-reduce, which MLIR's lowering gives an array).
// The merged launch reads and writes its members' buffers, moves their
// bytes, and carries their origins; its label is the first member's
// kernel number, `x<members>`, and the members' op names. Merged kernels
// that print alike but for their names (the same run in every layer) are
// one function. `sched.cuda_members` on the function lists the members'
// grids, for the host emulation (EmulateCudaKernels.cpp), which runs every
// block of a merged kernel in turn. A launch that could have joined the run
// before it says why it did not in `sched.merge` ("apart from k7's run:
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

/// Bytes [begin, end) of a slab.
struct Range {
  Operation *slab;
  int64_t begin, end;
};

bool overlap(ArrayRef<Range> a, ArrayRef<Range> b) {
  for (const Range &x : a)
    for (const Range &y : b)
      if (x.slab == y.slab && x.begin < y.end && y.begin < x.end)
        return true;
  return false;
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

std::optional<SmallVector<Range>> rangesOf(ValueRange buffers) {
  SmallVector<Range> out;
  for (Value v : buffers) {
    auto view = v.getDefiningOp<sched::ViewOp>();
    if (!view)
      return std::nullopt;
    int64_t begin = view.getOffset();
    out.push_back(
        {view.getSlabOp().getOperation(), begin, begin + view.getBytes()});
  }
  return out;
}

std::optional<Member> memberOf(sched::LaunchOp launch,
                               const SymbolTable &symbols) {
  auto fn = symbols.lookup<func::FuncOp>(launch.getKernel());
  if (!fn || !launch.getExtent() || !fn.getBody().hasOneBlock())
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
  Member m;
  m.launch = launch;
  m.fn = fn;
  m.block = block.getInt();
  m.grid = *launch.getExtent();
  m.words = launch.getArgs() ? launch.getArgs()->size() : 0;
  bool mergeable = true;
  fn.walk([&](Operation *op) {
    if (auto a = dyn_cast<memref::AllocaOp>(op)) {
      MemRefType t = a.getType();
      if (a->hasAttr(codegen::kWorkgroupAttr) && t.hasStaticShape())
        m.sharedBytes += t.getNumElements() * bytesOf(t.getElementType());
      else if (a->hasAttr(codegen::kWorkgroupAttr))
        mergeable = false;
    } else if (auto id = dyn_cast<gpu::BlockIdOp>(op))
      mergeable &= id.getDimension() == gpu::Dimension::x;
    else if (auto dim = dyn_cast<gpu::GridDimOp>(op))
      mergeable &= dim.getDimension() == gpu::Dimension::x;
    else if (auto reduce = dyn_cast<gpu::AllReduceOp>(op))
      m.sharedBytes += 32 * bytesOf(reduce.getType());
  });
  std::optional<SmallVector<Range>> reads = rangesOf(launch.getInputs());
  std::optional<SmallVector<Range>> writes = rangesOf(launch.getOutputs());
  if (!mergeable || !reads || !writes)
    return std::nullopt;
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
    if (overlap(r.writes, m.reads))
      return "reads bytes " + number + " writes";
    if (overlap(r.writes, m.writes))
      return "writes bytes " + number + " writes";
    if (overlap(m.writes, r.reads))
      return "writes bytes " + number + " reads";
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
  std::string number = "k?";
  llvm::SetVector<StringRef> ops;
  for (Member &m : run) {
    StringRef label = m.launch.getLabel().value_or("");
    auto [head, tail] = label.split('_');
    if (&m == &run.front() && !head.empty())
      number = head.str();
    ops.insert(tail.empty() ? head : tail);
  }
  std::string out = number + "_x" + std::to_string(run.size()) + "_";
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
            launch ? memberOf(launch, symbols) : std::nullopt;
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
  SmallVector<Attribute> origins;
  llvm::SetVector<Value> inputs, outputs;
  for (Member &m : run) {
    locs.push_back(m.launch.getLoc());
    words += m.words;
    grid += m.grid;
    grids.push_back(m.grid);
    bytes += m.launch.getBytes().value_or(0);
    if (m.launch.getArgs())
      llvm::append_range(args, *m.launch.getArgs());
    if (auto o = m.launch->getAttrOfType<ArrayAttr>(sched::kOriginsAttr))
      llvm::append_range(origins, o.getValue());
    inputs.insert(m.launch.getInputs().begin(), m.launch.getInputs().end());
    outputs.insert(m.launch.getOutputs().begin(), m.launch.getOutputs().end());
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
