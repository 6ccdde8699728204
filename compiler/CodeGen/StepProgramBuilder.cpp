//===- StepProgramBuilder.cpp - a lowered sched.program as a StepProgram -===//
//
// The program's views become the step program's buffers (in program order,
// id = index), its arguments, results and fills the program's arguments,
// results and constants, and its steps the steps, each launch adding its
// kernel to the kernel table. The schema is abi/StepProgram.proto;
// what each field means is docs/StepProgram.md.
//
//===----------------------------------------------------------------------===//

#include "compiler/CodeGen/StepProgramBuilder.h"

#include "abi/Abi.h"
#include "dialects/Graph/GraphOps.h"
#include "dialects/Schedule/ScheduleOps.h"

#include "mlir/IR/BuiltinOps.h"

#include "google/protobuf/util/json_util.h"

using namespace mlir;
using namespace sinter;

namespace {

/// The little-endian bytes of a constant, i1 as one byte per element.
std::string constantBytes(ElementsAttr value) {
  std::string bytes;
  auto dense = cast<DenseElementsAttr>(value);
  Type et = dense.getElementType();
  if (et.isInteger(1)) {
    for (bool v : dense.getValues<bool>())
      bytes.push_back(v ? 1 : 0);
    return bytes;
  }
  int64_t width = sched::elementBytes(et);
  auto append = [&](const APInt &bits) {
    for (int64_t k = 0; k < width; ++k)
      bytes.push_back(static_cast<char>(bits.extractBitsAsZExtValue(8, 8 * k)));
  };
  if (isa<FloatType>(et)) {
    for (const APFloat &v : dense.getValues<APFloat>())
      append(v.bitcastToAPInt());
  } else {
    for (const APInt &v : dense.getValues<APInt>())
      append(v);
  }
  return bytes;
}

LogicalResult setInit(Operation *at, DictionaryAttr init,
                      abi::Initializer &out) {
  auto dist = init.getAs<StringAttr>("dist");
  auto number = [&](StringRef key) -> std::optional<double> {
    if (auto f = init.getAs<FloatAttr>(key))
      return f.getValueAsDouble();
    if (auto i = init.getAs<IntegerAttr>(key))
      return static_cast<double>(i.getInt());
    return std::nullopt;
  };
  if (!dist)
    return at->emitOpError("init has no `dist`");
  if (dist.getValue() == "normal" && number("std")) {
    out.set_dist(abi::Initializer::normal);
    out.set_stddev(*number("std"));
  } else if (dist.getValue() == "uniform" && number("bound")) {
    out.set_dist(abi::Initializer::uniform);
    out.set_bound(*number("bound"));
  } else if (dist.getValue() == "constant" && number("value")) {
    out.set_dist(abi::Initializer::constant);
    out.set_value(*number("value"));
  } else {
    return at->emitOpError("init ")
           << init << " is not normal with std, uniform with bound or "
           << "constant with value";
  }
  return success();
}

/// A program with a `loss_scale` hyper argument gets the policy the
/// trainer moves it by: the module's training.loss_scale.
LogicalResult setLossScaling(sched::ProgramOp program, abi::StepProgram &out) {
  bool scaled = llvm::any_of(out.arguments(), [](const abi::Argument &a) {
    return a.kind() == abi::Argument::hyper &&
           a.name() == abi::kLossScaleHyper;
  });
  if (!scaled)
    return success();
  auto module = program->getParentOfType<ModuleOp>();
  auto training =
      module ? module->getAttrOfType<DictionaryAttr>(sgraph::attr::kTraining)
             : DictionaryAttr();
  auto policy =
      training ? training.getAs<DictionaryAttr>("loss_scale") : DictionaryAttr();
  if (!policy)
    return program.emitOpError("has a loss_scale argument but the module has "
                               "no sgraph.training.loss_scale");
  auto number = [&](StringRef key) -> std::optional<double> {
    if (auto f = policy.getAs<FloatAttr>(key))
      return f.getValueAsDouble();
    if (auto i = policy.getAs<IntegerAttr>(key))
      return static_cast<double>(i.getInt());
    return std::nullopt;
  };
  auto kind = policy.getAs<StringAttr>("kind");
  std::optional<double> init = number("init_scale"),
                        growth = number("growth_factor"),
                        backoff = number("backoff_factor"),
                        interval = number("growth_interval"),
                        overflows = number("max_consecutive_overflows");
  if (!kind || !init || !growth || !backoff || !interval || !overflows)
    return program.emitOpError("sgraph.training.loss_scale ")
           << policy << " lacks kind, init_scale, growth_factor, "
           << "backoff_factor, growth_interval or max_consecutive_overflows";
  abi::LossScaling *s = out.mutable_loss_scaling();
  s->set_dynamic(kind.getValue() == "dynamic");
  s->set_init_scale(*init);
  s->set_growth_factor(*growth);
  s->set_backoff_factor(*backoff);
  s->set_growth_interval(static_cast<int64_t>(*interval));
  s->set_max_consecutive_overflows(static_cast<int64_t>(*overflows));
  return success();
}

/// Adds `op` at `loc` to a step's origins: the innermost NameLoc names the
/// layer, the first file place is where it is.
void addOrigin(abi::Step &step, StringRef op, Location loc) {
  abi::Origin *o = step.add_origins();
  o->set_op(op.str());
  loc->walk([&](Location inner) {
    if (auto name = dyn_cast<NameLoc>(inner)) {
      if (o->layer().empty())
        o->set_layer(name.getName().str());
    } else if (auto file = dyn_cast<FileLineColLoc>(inner)) {
      if (o->file().empty()) {
        o->set_file(file.getFilename().str());
        o->set_line(file.getLine());
        o->set_column(file.getColumn());
      }
    }
    return WalkResult::advance();
  });
}

/// A step's origins: a launch's sched.origins; any other step is its own
/// op, at each place its location fuses.
void addOrigins(abi::Step &step, Operation *op, StringRef name) {
  if (auto origins = op->getAttrOfType<ArrayAttr>(sched::kOriginsAttr)) {
    for (auto origin : origins.getAsRange<NameLoc>())
      addOrigin(step, origin.getName(), origin.getChildLoc());
    return;
  }
  if (auto fused = dyn_cast<FusedLoc>(op->getLoc())) {
    for (Location part : fused.getLocations())
      addOrigin(step, name, part);
    return;
  }
  addOrigin(step, name, op->getLoc());
}

} // namespace

FailureOr<abi::StepProgram>
sinter::codegen::buildStepProgram(sched::ProgramOp program) {
  abi::StepProgram out;
  out.set_version(abi::kStepProgramVersion);
  out.set_function(program.getSymName().str());
  out.set_seed(program.getSeed() ? static_cast<int64_t>(*program.getSeed())
                                 : 0);
  Block &body = program.getBlock();

  std::array<int64_t, abi::kNumSlabs> slabBytes{};
  DenseMap<Value, abi::SlabKind> slabOf;
  for (auto slab : body.getOps<sched::SlabOp>()) {
    abi::SlabKind kind = slab.getSlabKind();
    slabBytes[kind] = slab.getSizeAttr().getInt();
    slabOf[slab.getSlab()] = kind;
  }
  for (int s = 0; s < abi::kNumSlabs; ++s) {
    abi::SlabSize *size = out.add_slabs();
    size->set_slab(static_cast<abi::SlabKind>(s));
    size->set_bytes(slabBytes[s]);
  }

  DenseMap<Value, int64_t> bufferId;
  for (auto view : body.getOps<sched::ViewOp>()) {
    int64_t id = out.buffers_size();
    abi::Buffer *buffer = out.add_buffers();
    buffer->set_id(id);
    if (auto name = view.getName())
      buffer->set_name(name->str());
    buffer->set_slab(slabOf.lookup(view.getSlab()));
    buffer->set_offset(view.getOffsetAttr().getInt());
    auto type = view.getResult().getType();
    buffer->set_dtype(*sched::dtypeOf(type.getElementType()));
    for (int64_t d : type.getShape())
      buffer->add_shape(d);
    if (auto category = view.getCategory())
      buffer->set_category(*abi::parseCategory(category->str()));
    if (Value aliased = view.getAliased())
      buffer->set_view_of(bufferId.lookup(aliased));
    bufferId[view.getResult()] = id;
  }

  DenseMap<Value, int64_t> collectiveOf; // start token -> collective
  for (Operation &op : body) {
    if (auto arg = dyn_cast<sched::ArgumentOp>(op)) {
      abi::Argument *a = out.add_arguments();
      a->set_name(arg.getName().str());
      a->set_kind(arg.getArgumentKind());
      a->set_buffer(bufferId.lookup(arg.getBuffer()));
      if (auto init = arg.getInit())
        if (failed(setInit(arg, *init, *a->mutable_init())))
          return failure();
      if (auto aliases = arg.getAliases())
        for (auto alias : aliases->getAsRange<StringAttr>())
          a->add_aliases(alias.str());
      if (auto bound = arg.getBoundAttr())
        a->set_bound(bound.getInt());
      if (auto ignore = arg.getIgnoreAttr())
        a->set_ignore(ignore.getInt());
      if (auto value = arg.getDefaultValue())
        a->set_default_value(value->convertToDouble());
      continue;
    }
    if (auto result = dyn_cast<sched::ResultOp>(op)) {
      abi::Result *r = out.add_results();
      r->set_name(result.getName().str());
      r->set_kind(result.getResultKind());
      r->set_buffer(bufferId.lookup(result.getBuffer()));
      if (std::optional<StringRef> labels = result.getLabels()) {
        r->set_labels(labels->str());
        r->set_ignore(*result.getIgnore());
      }
      continue;
    }
    if (auto fill = dyn_cast<sched::FillOp>(op)) {
      abi::Constant *c = out.add_constants();
      c->set_buffer(bufferId.lookup(fill.getBuffer()));
      c->set_data(constantBytes(fill.getValue()));
      continue;
    }
    if (auto launch = dyn_cast<sched::LaunchOp>(op)) {
      if (!launch.getExtentAttr() || !launch.getSymbol())
        return launch.emitOpError("is not lowered yet: run the target's "
                                  "kernel lowering first");
      int64_t index = out.kernels_size();
      abi::Kernel *k = out.add_kernels();
      k->set_name(launch.getLabel() ? launch.getLabel()->str()
                                    : launch.getKernel().str());
      k->set_symbol(launch.getSymbol()->str());
      k->set_extent(launch.getExtentAttr().getInt());
      if (auto bytes = launch.getBytesAttr())
        k->set_bytes(bytes.getInt());
      if (std::optional<ArrayRef<int64_t>> args = launch.getArgs())
        k->mutable_args()->Add(args->begin(), args->end());
      if (auto block = launch->getAttrOfType<IntegerAttr>("sched.cuda_block"))
        k->set_cuda_block(block.getInt());
      abi::Step *step = out.add_steps();
      abi::KernelStep *ks = step->mutable_kernel();
      ks->set_kernel(index);
      for (Value v : launch.getInputs())
        ks->add_inputs(bufferId.lookup(v));
      for (Value v : launch.getOutputs())
        ks->add_outputs(bufferId.lookup(v));
      if (auto members =
              launch->getAttrOfType<ArrayAttr>(sched::kMembersAttr)) {
        for (auto member : members.getAsRange<DictionaryAttr>()) {
          abi::KernelMember *m = ks->add_members();
          auto indices = [&](StringRef name) {
            return cast<DenseI64ArrayAttr>(member.get(name)).asArrayRef();
          };
          for (int64_t i : indices("inputs"))
            m->add_inputs(bufferId.lookup(launch.getInputs()[i]));
          for (int64_t i : indices("outputs"))
            m->add_outputs(bufferId.lookup(launch.getOutputs()[i]));
          m->set_origins(cast<IntegerAttr>(member.get("origins")).getInt());
        }
      }
      addOrigins(*step, launch, "kernel");
      continue;
    }
    if (auto mm = dyn_cast<sched::MatmulOp>(op)) {
      abi::Step *step = out.add_steps();
      addOrigins(*step, mm, "matmul");
      abi::MatmulStep *m = step->mutable_matmul();
      m->set_lhs(bufferId.lookup(mm.getLhs()));
      m->set_rhs(bufferId.lookup(mm.getRhs()));
      m->set_out(bufferId.lookup(mm.getOut()));
      if (Value bias = mm.getBias())
        m->set_bias(bufferId.lookup(bias));
      if (Value ws = mm.getWorkspace())
        m->set_workspace(bufferId.lookup(ws));
      if (Value aux = mm.getAux())
        m->set_aux(bufferId.lookup(aux));
      if (Value grad = mm.getBiasGrad())
        m->set_bias_grad(bufferId.lookup(grad));
      m->set_transpose_lhs(mm.getTransposeLhs());
      m->set_transpose_rhs(mm.getTransposeRhs());
      m->set_alpha(mm.getAlpha().convertToDouble());
      abi::MatmulStep::Activation activation;
      if (!abi::MatmulStep::Activation_Parse(mm.getActivation().str(),
                                             &activation))
        return mm.emitOpError("activation '")
               << mm.getActivation() << "' has no step-program encoding";
      m->set_activation(activation);
      std::optional<abi::MatmulStep::Triangle> triangle =
          abi::parseTriangle(mm.getTriangle().str());
      if (!triangle)
        return mm.emitOpError("triangle '")
               << mm.getTriangle() << "' has no step-program encoding";
      m->set_triangle(*triangle);
      continue;
    }
    if (auto copy = dyn_cast<sched::CopyOp>(op)) {
      abi::Step *step = out.add_steps();
      addOrigins(*step, copy, "copy");
      abi::CopyStep *c = step->mutable_copy();
      c->set_src(bufferId.lookup(copy.getSrc()));
      c->set_dst(bufferId.lookup(copy.getDst()));
      continue;
    }
    if (auto start = dyn_cast<sched::AllReduceStartOp>(op)) {
      int64_t index = out.collectives_size();
      abi::Collective *c = out.add_collectives();
      c->set_op(abi::Collective::all_reduce);
      abi::Collective::Reduction reduction;
      if (!abi::Collective::Reduction_Parse(start.getReduction().str(),
                                            &reduction))
        return start.emitOpError("reduction '")
               << start.getReduction() << "' has no step-program encoding";
      c->set_reduction(reduction);
      c->set_buffer(bufferId.lookup(start.getBuffer()));
      if (auto wire = start.getCommDtype()) {
        std::optional<abi::DType> type = abi::parseDType(wire->str());
        if (!type)
          return start.emitOpError("comm_dtype '")
                 << *wire << "' has no step-program encoding";
        c->set_comm_dtype(*type);
      }
      c->set_name(("bucket " + llvm::Twine(index)).str());
      if (auto names = start->getAttrOfType<ArrayAttr>("sinter.gradients"))
        for (auto name : names.getAsRange<StringAttr>())
          c->add_tensors(name.str());
      collectiveOf[start.getToken()] = index;
      out.add_steps()->mutable_start()->set_collective(index);
      continue;
    }
    if (auto done = dyn_cast<sched::AllReduceDoneOp>(op)) {
      auto it = collectiveOf.find(done.getToken());
      if (it == collectiveOf.end())
        return done.emitOpError("waits for a collective that never started");
      out.add_steps()->mutable_done()->set_collective(it->second);
      continue;
    }
    if (sched::isStep(&op))
      return op.emitOpError("has no step-program encoding yet (only the "
                            "all-reduce of the collectives has one)");
  }
  if (failed(setLossScaling(program, out)))
    return failure();
  return out;
}

std::string sinter::codegen::stepProgramJson(const abi::StepProgram &program) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  // Printing a message of the generated schema cannot fail.
  (void)google::protobuf::util::MessageToJsonString(program, &json, options);
  return json;
}
