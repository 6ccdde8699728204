//===- StepProgram.cpp - read and validate a step program
//------------------===//
//
// The schema is abi/StepProgram.proto, so protobuf does the reading
// (the object's bytes, or a dump's JSON) and rejects what does not fit the
// schema; this file checks what a schema cannot say, section by section in
// dependency order (slabs, then buffers, which need slab sizes, then
// everything that names buffers), and fills the structs the executor runs.
// Every error reads "step program: <where>: <why>".
//
//===----------------------------------------------------------------------===//

#include "runtime/Exec/StepProgram.h"

#include "runtime/Formats/AbslCompat.h"
#include "runtime/Formats/FileIO.h"
#include "runtime/Support/Status.h"

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/util/json_util.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace sinter::exec;
namespace sabi = sinter::abi;
namespace formats = sinter::formats;

sinter::formats::DType sinter::exec::toDType(sabi::DType type) {
  using formats::DType;
  switch (type) {
  case sabi::ElementType::f32:
    return DType::F32;
  case sabi::ElementType::f64:
    return DType::F64;
  case sabi::ElementType::f16:
    return DType::F16;
  case sabi::ElementType::bf16:
    return DType::BF16;
  case sabi::ElementType::i64:
    return DType::I64;
  case sabi::ElementType::i32:
    return DType::I32;
  case sabi::ElementType::i8:
    return DType::I8;
  case sabi::ElementType::i1:
    return DType::Bool;
  }
  return DType::F32;
}

//===----------------------------------------------------------------------===//
// StepProgram queries
//===----------------------------------------------------------------------===//

MatmulDesc StepProgram::matmulDesc(const MatmulStep &step) const {
  MatmulDesc desc;
  desc.lhsShape = buffers[step.lhs].shape;
  desc.rhsShape = buffers[step.rhs].shape;
  desc.outShape = buffers[step.out].shape;
  desc.transposeLhs = step.transposeLhs;
  desc.transposeRhs = step.transposeRhs;
  desc.alpha = static_cast<float>(step.alpha);
  desc.hasBias = step.bias >= 0;
  if (desc.hasBias)
    desc.biasShape = buffers[step.bias].shape;
  desc.activation = step.activation;
  desc.triangle = step.triangle;
  desc.hasAux = step.aux >= 0;
  desc.hasBiasGrad = step.biasGrad >= 0;
  desc.dtype = buffers[step.lhs].type;
  desc.outType = buffers[step.out].type;
  return desc;
}

const Argument *StepProgram::findArgument(std::string_view name) const {
  for (const Argument &a : arguments)
    if (a.name == name ||
        std::find(a.aliases.begin(), a.aliases.end(), name) != a.aliases.end())
      return &a;
  return nullptr;
}

const Result *StepProgram::findResult(std::string_view name) const {
  for (const Result &r : results)
    if (r.name == name)
      return &r;
  return nullptr;
}

void StepProgram::stepBuffers(int64_t index, std::vector<int64_t> &reads,
    std::vector<int64_t> &writes) const {
  reads.clear();
  writes.clear();
  const Step &s = steps[static_cast<size_t>(index)];
  switch (s.kind) {
  case sabi::Step::kKernel:
    reads = s.inputs;
    writes = s.outputs;
    return;
  case sabi::Step::kMatmul:
    reads = {s.matmul.lhs, s.matmul.rhs};
    if (s.matmul.bias >= 0)
      reads.push_back(s.matmul.bias);
    writes = {s.matmul.out};
    if (s.matmul.aux >= 0)
      (s.matmul.activation == sabi::MatmulStep::dgelu_tanh ? reads : writes)
          .push_back(s.matmul.aux);
    if (s.matmul.biasGrad >= 0)
      writes.push_back(s.matmul.biasGrad);
    return;
  case sabi::Step::kCopy:
    reads = {s.src};
    writes = {s.dst};
    return;
  case sabi::Step::kStart:
    reads = {collectives[static_cast<size_t>(s.collective)].buffer};
    return;
  case sabi::Step::kDone:
    writes = {collectives[static_cast<size_t>(s.collective)].buffer};
    return;
  }
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

namespace {

absl::Status programError(sinter::SourceLocation here, std::string_view where,
                          std::string_view why) {
  return sinter::InvalidArgumentError(
      here, absl::StrFormat("step program: %s: %s", where, why));
}

std::string bufferPlace(const StepProgram &program, int64_t id) {
  const Buffer &b = program.buffers[id];
  if (b.name.empty())
    return absl::StrFormat("buffer %d", id);
  return absl::StrFormat("buffer %d %s", id, formats::quoteForMessage(b.name));
}

std::string shapeText(const std::vector<int64_t> &shape) {
  return absl::StrFormat("[%s]", absl::StrJoin(shape, ","));
}

/// Checks one program message and fills `program`. The enum checks matter:
/// proto3 enums are open, so a newer compiler's value reads as a number.
class Reader {
public:
  explicit Reader(const sabi::StepProgram &in) : in(in) {}
  absl::Status read(StepProgram &program);

private:
  absl::Status slabs();
  absl::Status buffer(const sabi::Buffer &b, int64_t index);
  absl::Status argument(const sabi::Argument &a, int64_t index);
  absl::Status result(const sabi::Result &r, int64_t index);
  absl::Status constant(const sabi::Constant &c, int64_t index,
                        std::vector<bool> &filled);
  absl::Status kernel(const sabi::Kernel &k, int64_t index);
  absl::Status step(const sabi::Step &s, int64_t index);
  absl::Status collective(const sabi::Collective &c, int64_t index);
  /// Starts before dones, once each, nothing touching a bucket in flight.
  absl::Status collectiveOrder() const;
  /// loss_scaling present exactly with a loss_scale argument, in range.
  absl::Status lossScaling();
  absl::Status matmul(std::string_view where, const sabi::MatmulStep &in,
                      MatmulStep &m);
  absl::Status bufferId(std::string_view where, std::string_view what,
                        int64_t id) const;

  const sabi::StepProgram &in;
  StepProgram *out = nullptr;
};

absl::Status Reader::bufferId(std::string_view where, std::string_view what,
                              int64_t id) const {
  if (id < 0 || id >= static_cast<int64_t>(out->buffers.size()))
    return programError(SINTER_HERE, where,
                        absl::StrFormat("'%s' is buffer %d, but there are %d "
                                        "buffers",
                                        what, id, out->buffers.size()));
  return absl::OkStatus();
}

absl::Status Reader::slabs() {
  std::vector<bool> seen(sabi::kNumSlabs);
  for (const sabi::SlabSize &s : in.slabs()) {
    if (!sabi::Slab::Kind_IsValid(s.slab()))
      return programError(SINTER_HERE, "slabs",
                          absl::StrFormat("unknown slab %d", s.slab()));
    if (seen[s.slab()])
      return programError(SINTER_HERE, "slabs",
                          absl::StrFormat("slab '%s' is sized twice",
                                          sabi::slabName(s.slab())));
    seen[s.slab()] = true;
    if (s.bytes() < 0)
      return programError(SINTER_HERE, "slabs",
                          absl::StrFormat("slab '%s' has %d bytes",
                                          sabi::slabName(s.slab()), s.bytes()));
    out->slabBytes[s.slab()] = s.bytes();
  }
  return absl::OkStatus();
}

absl::Status Reader::buffer(const sabi::Buffer &in, int64_t index) {
  std::string where = absl::StrFormat("buffer %d", index);
  if (in.id() != index)
    return programError(SINTER_HERE, where,
                        absl::StrFormat("has id %d; ids must be 0, 1, "
                                        "2, ... in order",
                                        in.id()));
  if (!sabi::Slab::Kind_IsValid(in.slab()))
    return programError(SINTER_HERE, where,
                        absl::StrFormat("unknown slab %d", in.slab()));
  if (!sabi::ElementType::Kind_IsValid(in.dtype()))
    return programError(SINTER_HERE, where,
                        absl::StrFormat("unknown dtype %d", in.dtype()));
  if (!sabi::Category::Kind_IsValid(in.category()))
    return programError(SINTER_HERE, where,
                        absl::StrFormat("unknown category %d", in.category()));
  Buffer b;
  b.id = index;
  b.name = in.name();
  b.slab = static_cast<sabi::SlabKind>(in.slab());
  b.offset = in.offset();
  b.type = static_cast<sabi::DType>(in.dtype());
  b.category = std::string(sabi::categoryName(in.category()));
  if (in.shape_size() > formats::kMaxRank)
    return programError(SINTER_HERE, where,
                        absl::StrFormat("rank %d exceeds the maximum %d",
                                        in.shape_size(), formats::kMaxRank));
  for (int64_t d : in.shape()) {
    if (d < 0)
      return programError(SINTER_HERE, where,
                          "shape entries must be non-negative");
    b.shape.push_back(d);
  }
  if (b.offset < 0)
    return programError(SINTER_HERE, where,
                        absl::StrFormat("offset %d is negative", b.offset));
  absl::StatusOr<int64_t> bytes = formats::numBytes(toDType(b.type), b.shape);
  if (!bytes.ok())
    return programError(SINTER_HERE, where,
                        absl::StrFormat("shape %s: %s", shapeText(b.shape),
                                        bytes.status().message()));
  b.bytes = *bytes;
  b.numElements = *bytes / sabi::elementBytes(b.type);
  int64_t slabBytes = out->slabBytes[static_cast<int>(b.slab)];
  if (b.offset > slabBytes || b.bytes > slabBytes - b.offset)
    return programError(
        SINTER_HERE, where,
        absl::StrFormat("offset %d + %d bytes exceeds slab '%s' of %d "
                        "bytes",
                        b.offset, b.bytes, sabi::slabName(b.slab), slabBytes));
  if (in.has_view_of()) {
    // A view shares the bytes of an earlier buffer and lies within them.
    int64_t of = in.view_of();
    if (of < 0 || of >= index)
      return programError(SINTER_HERE, where,
                          absl::StrFormat("is a view of buffer %d, not "
                                          "of an earlier buffer",
                                          of));
    const Buffer &owner = out->buffers[of];
    if (owner.slab != b.slab || b.offset < owner.offset ||
        b.offset + b.bytes > owner.offset + owner.bytes)
      return programError(
          SINTER_HERE, where,
          absl::StrFormat("is a view of %s but lies outside its bytes",
                          bufferPlace(*out, of)));
  } else if (b.offset % sabi::kBufferAlignment != 0) {
    return programError(
        SINTER_HERE, where,
        absl::StrFormat("offset %d is not a multiple of %d and the "
                        "buffer is not a view",
                        b.offset, sabi::kBufferAlignment));
  }
  out->buffers.push_back(std::move(b));
  return absl::OkStatus();
}

absl::Status Reader::argument(const sabi::Argument &in, int64_t index) {
  std::string where = absl::StrFormat("argument %d", index);
  if (!sabi::Argument::Kind_IsValid(in.kind()))
    return programError(SINTER_HERE, where,
                        absl::StrFormat("unknown kind %d", in.kind()));
  SINTER_RETURN_IF_ERROR(bufferId(where, "buffer", in.buffer()));
  Argument a;
  a.name = in.name();
  a.kind = static_cast<sabi::ArgumentKind>(in.kind());
  a.buffer = in.buffer();
  const Buffer &b = out->buffers[a.buffer];
  if (a.name.empty())
    return programError(SINTER_HERE, where, "empty name");
  if (out->findArgument(a.name))
    return programError(SINTER_HERE, where,
                        absl::StrFormat("name %s repeats an earlier argument",
                                        formats::quoteForMessage(a.name)));
  if ((a.kind == sabi::Argument::step || a.kind == sabi::Argument::rank) &&
      (b.type != sabi::ElementType::i64 || !b.shape.empty()))
    return programError(
        SINTER_HERE, where,
        absl::StrFormat("the %s argument must be an i64 scalar, not "
                        "%s %s",
                        sabi::argumentKindName(a.kind),
                        sabi::dtypeName(b.type), shapeText(b.shape)));
  if (a.kind == sabi::Argument::accumulator &&
      (b.slab != sabi::Slab::opt_state ||
       (b.type != sabi::ElementType::f32 && b.type != sabi::ElementType::f64)))
    return programError(
        SINTER_HERE, where,
        absl::StrFormat("an accumulator must be an f32 or f64 buffer of the "
                        "opt_state slab, not %s in '%s'",
                        sabi::dtypeName(b.type), sabi::slabName(b.slab)));
  if (in.aliases_size() && a.kind != sabi::Argument::param)
    return programError(SINTER_HERE, where, "only params have 'aliases'");
  for (const std::string &alias : in.aliases()) {
    if (alias.empty())
      return programError(SINTER_HERE, where,
                          "'aliases' must be non-empty names");
    if (alias == a.name || out->findArgument(alias) ||
        std::count(a.aliases.begin(), a.aliases.end(), alias))
      return programError(SINTER_HERE, where,
                          absl::StrFormat("alias %s repeats an argument name",
                                          formats::quoteForMessage(alias)));
    a.aliases.push_back(alias);
  }
  if (in.has_bound()) {
    bool integer = b.type == sabi::ElementType::i64 ||
                   b.type == sabi::ElementType::i32 ||
                   b.type == sabi::ElementType::i8;
    if (a.kind != sabi::Argument::input || !integer)
      return programError(SINTER_HERE, where,
                          "only integer inputs have a 'bound'");
    if (in.bound() < 1)
      return programError(SINTER_HERE, where,
                          "'bound' must be a positive integer");
    a.bound = in.bound();
  }
  if (in.has_ignore()) {
    if (!a.bound)
      return programError(SINTER_HERE, where,
                          "only an input with a 'bound' has an 'ignore'");
    a.ignore = in.ignore();
  }
  if (in.has_default_value() && a.kind != sabi::Argument::hyper)
    return programError(SINTER_HERE, where,
                        "only hyper arguments have a 'default_value'");
  if (a.kind == sabi::Argument::hyper) {
    if ((b.type != sabi::ElementType::f64 &&
         b.type != sabi::ElementType::f32) ||
        !b.shape.empty())
      return programError(
          SINTER_HERE, where,
          absl::StrFormat("a hyper argument must be an f32 or f64 "
                          "scalar, not %s %s",
                          sabi::dtypeName(b.type), shapeText(b.shape)));
    if (!in.has_default_value())
      return programError(SINTER_HERE, where,
                          "a hyper argument needs a 'default_value'");
    double v = in.default_value();
    if (!std::isfinite(v) || (b.type == sabi::ElementType::f32 &&
                              !std::isfinite(static_cast<float>(v))))
      return programError(SINTER_HERE, where,
                          absl::StrFormat("'default_value' must be a finite %s",
                                          sabi::dtypeName(b.type)));
    a.defaultValue = v;
  }
  if (in.has_init()) {
    if (a.kind != sabi::Argument::param)
      return programError(SINTER_HERE, where, "only params have an 'init'");
    const sabi::Initializer &init = in.init();
    Initializer initializer;
    bool given = false;
    switch (init.dist()) {
    case sabi::Initializer::normal:
      initializer.dist = init.dist();
      given = init.has_stddev();
      initializer.value = init.stddev();
      break;
    case sabi::Initializer::uniform:
      initializer.dist = init.dist();
      given = init.has_bound();
      initializer.value = init.bound();
      break;
    case sabi::Initializer::constant:
      initializer.dist = init.dist();
      given = init.has_value();
      initializer.value = init.value();
      break;
    default:
      return programError(SINTER_HERE, where + " init",
                          absl::StrFormat("unknown dist %d", init.dist()));
    }
    if (!given)
      return programError(
          SINTER_HERE, where + " init",
          absl::StrFormat("a %s initializer needs its %s",
                          sabi::Initializer::Dist_Name(init.dist()),
                          init.dist() == sabi::Initializer::normal ? "stddev"
                          : init.dist() == sabi::Initializer::uniform
                              ? "bound"
                              : "value"));
    if (b.type != sabi::ElementType::f32 && b.type != sabi::ElementType::f64 &&
        b.type != sabi::ElementType::f16 && b.type != sabi::ElementType::bf16)
      return programError(
          SINTER_HERE, where,
          absl::StrFormat("an initialized parameter must be a float "
                          "tensor, not %s",
                          sabi::dtypeName(b.type)));
    a.init = initializer;
  }
  out->arguments.push_back(std::move(a));
  return absl::OkStatus();
}

absl::Status Reader::result(const sabi::Result &in, int64_t index) {
  std::string where = absl::StrFormat("result %d", index);
  if (!sabi::Result::Kind_IsValid(in.kind()))
    return programError(SINTER_HERE, where,
                        absl::StrFormat("unknown kind %d", in.kind()));
  SINTER_RETURN_IF_ERROR(bufferId(where, "buffer", in.buffer()));
  Result r;
  r.name = in.name();
  r.kind = static_cast<sabi::ResultKind>(in.kind());
  r.buffer = in.buffer();
  const Buffer &b = out->buffers[r.buffer];
  if (r.name.empty())
    return programError(SINTER_HERE, where, "empty name");
  if (out->findResult(r.name))
    return programError(SINTER_HERE, where,
                        absl::StrFormat("name %s repeats an earlier result",
                                        formats::quoteForMessage(r.name)));
  if (r.kind == sabi::Result::metric && !b.shape.empty())
    return programError(SINTER_HERE, where,
                        absl::StrFormat("metric %s must be a scalar, not %s",
                                        formats::quoteForMessage(r.name),
                                        shapeText(b.shape)));
  if (!in.labels().empty() || in.has_ignore()) {
    // A fraction of labels: the input that holds them, which the runtime
    // reads to weight the metric.
    std::string what = absl::StrFormat("%s %s", sabi::resultKindName(r.kind),
                                       formats::quoteForMessage(r.name));
    const Argument *a = out->findArgument(in.labels());
    if (in.labels().empty())
      return programError(SINTER_HERE, where,
                          absl::StrFormat("%s has an ignore (%d) but no labels",
                                          what, in.ignore()));
    if (r.kind != sabi::Result::metric || !a ||
        a->kind != sabi::Argument::input || !in.has_ignore() ||
        (out->buffers[a->buffer].type != sabi::ElementType::i64 &&
         out->buffers[a->buffer].type != sabi::ElementType::i32))
      return programError(
          SINTER_HERE, where,
          absl::StrFormat("%s counts labels %s: only a metric may, with an "
                          "ignore, of an i64 or i32 input argument",
                          what, formats::quoteForMessage(in.labels())));
    r.labels = in.labels();
    r.ignore = in.ignore();
  }
  if (r.kind == sabi::Result::param || r.kind == sabi::Result::opt_state ||
      r.kind == sabi::Result::accumulator) {
    // The state contract: the argument of the same name holds the new value.
    sabi::ArgumentKind want = r.kind == sabi::Result::param ? sabi::Argument::param
                              : r.kind == sabi::Result::opt_state
                                  ? sabi::Argument::opt_state
                                  : sabi::Argument::accumulator;
    const Argument *a = out->findArgument(r.name);
    if (!a || a->kind != want)
      return programError(
          SINTER_HERE, where,
          absl::StrFormat("%s result %s has no %s argument of the same "
                          "name",
                          sabi::resultKindName(r.kind),
                          formats::quoteForMessage(r.name),
                          sabi::argumentKindName(want)));
    const Buffer &ab = out->buffers[a->buffer];
    if (ab.type != b.type || ab.shape != b.shape)
      return programError(
          SINTER_HERE, where,
          absl::StrFormat("result %s is %s %s but its argument is %s %s",
                          formats::quoteForMessage(r.name),
                          sabi::dtypeName(b.type), shapeText(b.shape),
                          sabi::dtypeName(ab.type), shapeText(ab.shape)));
  }
  out->results.push_back(std::move(r));
  return absl::OkStatus();
}

absl::Status Reader::constant(const sabi::Constant &in, int64_t index,
                              std::vector<bool> &filled) {
  std::string where = absl::StrFormat("constant %d", index);
  SINTER_RETURN_IF_ERROR(bufferId(where, "buffer", in.buffer()));
  const Buffer &b = out->buffers[in.buffer()];
  if (b.slab != sabi::Slab::constants)
    return programError(SINTER_HERE, where,
                        absl::StrFormat("%s is in slab '%s', not 'constants'",
                                        bufferPlace(*out, in.buffer()),
                                        sabi::slabName(b.slab)));
  if (filled[in.buffer()])
    return programError(SINTER_HERE, where,
                        absl::StrFormat("%s already has a constant",
                                        bufferPlace(*out, in.buffer())));
  filled[in.buffer()] = true;
  if (static_cast<int64_t>(in.data().size()) != b.bytes)
    return programError(
        SINTER_HERE, where,
        absl::StrFormat("has %d bytes; %s needs %d", in.data().size(),
                        bufferPlace(*out, in.buffer()), b.bytes));
  Constant c;
  c.buffer = in.buffer();
  c.bytes.assign(in.data().begin(), in.data().end());
  out->constants.push_back(std::move(c));
  return absl::OkStatus();
}

absl::Status Reader::kernel(const sabi::Kernel &in, int64_t index) {
  std::string where = absl::StrFormat("kernel %d", index);
  if (in.name().empty())
    return programError(SINTER_HERE, where, "empty name");
  if (in.extent() < 1)
    return programError(SINTER_HERE, where,
                        absl::StrFormat("extent %d is below 1", in.extent()));
  if (in.bytes() < 0)
    return programError(SINTER_HERE, where,
                        absl::StrFormat("bytes %d is negative", in.bytes()));
  Kernel k;
  k.name = in.name();
  k.symbol = in.symbol();
  k.extent = in.extent();
  k.bytes = in.bytes();
  k.args.assign(in.args().begin(), in.args().end());
  if (in.has_cuda_block()) {
    if (in.cuda_block() < 1 || in.cuda_block() > 1024)
      return programError(
          SINTER_HERE, where,
          absl::StrFormat("cuda_block %d is not 1 to 1024 threads",
                          in.cuda_block()));
    k.cudaBlock = in.cuda_block();
  }
  out->kernels.push_back(std::move(k));
  return absl::OkStatus();
}

bool overlaps(const Buffer &a, const Buffer &b) {
  return a.slab == b.slab && a.bytes > 0 && b.bytes > 0 &&
         a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

absl::Status Reader::matmul(std::string_view where, const sabi::MatmulStep &in,
                            MatmulStep &m) {
  SINTER_RETURN_IF_ERROR(bufferId(where, "lhs", in.lhs()));
  SINTER_RETURN_IF_ERROR(bufferId(where, "rhs", in.rhs()));
  SINTER_RETURN_IF_ERROR(bufferId(where, "out", in.out()));
  if (in.has_bias())
    SINTER_RETURN_IF_ERROR(bufferId(where, "bias", in.bias()));
  if (in.has_workspace())
    SINTER_RETURN_IF_ERROR(bufferId(where, "workspace", in.workspace()));
  if (in.has_aux())
    SINTER_RETURN_IF_ERROR(bufferId(where, "aux", in.aux()));
  if (in.has_bias_grad())
    SINTER_RETURN_IF_ERROR(bufferId(where, "bias_grad", in.bias_grad()));
  m.aux = in.has_aux() ? in.aux() : -1;
  m.biasGrad = in.has_bias_grad() ? in.bias_grad() : -1;
  m.lhs = in.lhs();
  m.rhs = in.rhs();
  m.out = in.out();
  m.bias = in.has_bias() ? in.bias() : -1;
  m.workspace = in.has_workspace() ? in.workspace() : -1;
  m.transposeLhs = in.transpose_lhs();
  m.transposeRhs = in.transpose_rhs();
  m.alpha = in.has_alpha() ? in.alpha() : 1.0;
  if (!sabi::MatmulStep::Activation_IsValid(in.activation()))
    return programError(
        SINTER_HERE, where,
        absl::StrFormat("unknown activation %d", in.activation()));
  m.activation = in.activation();
  if (!sabi::MatmulStep::Triangle_IsValid(in.triangle()))
    return programError(SINTER_HERE, where,
                        absl::StrFormat("unknown triangle %d", in.triangle()));
  m.triangle = in.triangle();
  if (!std::isfinite(static_cast<float>(m.alpha)))
    return programError(SINTER_HERE, where, "alpha is not a finite f32");
  std::pair<const char *, int64_t> operands[] = {
      {"lhs", m.lhs},          {"rhs", m.rhs}, {"out", m.out},
      {"bias", m.bias},        {"aux", m.aux}, {"bias_grad", m.biasGrad}};
  // lhs and rhs have one type; out and bias have it too, or are f32 from
  // half operands (docs/StepProgram.md).
  const sabi::DType type = out->buffers[m.lhs].type,
                    outType = out->buffers[m.out].type;
  const bool wide =
      outType == sabi::ElementType::f32 && type != sabi::ElementType::f32;
  for (auto [what, id] : operands) {
    if (id < 0)
      continue;
    const Buffer &b = out->buffers[id];
    if (b.type != sabi::ElementType::f32 && b.type != sabi::ElementType::bf16 &&
        b.type != sabi::ElementType::f16)
      return programError(
          SINTER_HERE, where,
          absl::StrFormat("%s (%s) is %s; matmul needs f32, bf16 or f16",
                          what, bufferPlace(*out, id),
                          sabi::dtypeName(b.type)));
    const bool ofOut =
        id == m.out || id == m.bias || id == m.aux || id == m.biasGrad;
    if (b.type != (ofOut && wide ? outType : type))
      return programError(
          SINTER_HERE, where,
          absl::StrFormat("%s (%s) is %s but lhs is %s; a matmul's operands "
                          "and out have one type (out and bias may be f32 "
                          "from bf16 or f16 operands)",
                          what, bufferPlace(*out, id), sabi::dtypeName(b.type),
                          sabi::dtypeName(type)));
    if (id != m.out && overlaps(b, out->buffers[m.out]))
      return programError(SINTER_HERE, where,
                          absl::StrFormat("out (%s) overlaps %s (%s)",
                                          bufferPlace(*out, m.out), what,
                                          bufferPlace(*out, id)));
  }
  // aux and bias_grad share no byte with another operand (aux is written
  // but with dgelu_tanh).
  for (auto [name, written] :
       {std::pair{"aux", m.aux}, {"bias_grad", m.biasGrad}}) {
    if (written < 0)
      continue;
    for (auto [what, id] : operands)
      if (id >= 0 && std::string_view(what) != name && id != m.out &&
          overlaps(out->buffers[written], out->buffers[id]))
        return programError(SINTER_HERE, where,
                            absl::StrFormat("%s (%s) overlaps %s (%s)", name,
                                            bufferPlace(*out, written), what,
                                            bufferPlace(*out, id)));
  }
  if (m.workspace >= 0) {
    // Scratch bytes in the arena that none of the call's tensors share.
    const Buffer &w = out->buffers[m.workspace];
    if (w.type != sabi::ElementType::i8 || w.shape.size() != 1 ||
        w.slab != sabi::Slab::arena)
      return programError(
          SINTER_HERE, where,
          absl::StrFormat("workspace (%s) must be a 1-D i8 buffer in the "
                          "arena",
                          bufferPlace(*out, m.workspace)));
    for (auto [what, id] : operands)
      if (id >= 0 && overlaps(w, out->buffers[id]))
        return programError(SINTER_HERE, where,
                            absl::StrFormat("workspace (%s) overlaps %s (%s)",
                                            bufferPlace(*out, m.workspace),
                                            what, bufferPlace(*out, id)));
  }
  absl::StatusOr<MatmulGeometry> g = analyzeMatmul(out->matmulDesc(m));
  if (!g.ok())
    return programError(SINTER_HERE, where,
                        formats::toStd(g.status().message()));
  if (m.aux >= 0 && out->buffers[m.aux].shape != out->buffers[m.out].shape)
    return programError(
        SINTER_HERE, where,
        absl::StrFormat("aux (%s) has shape %s; expected out's %s",
                        bufferPlace(*out, m.aux),
                        shapeText(out->buffers[m.aux].shape),
                        shapeText(out->buffers[m.out].shape)));
  if (m.biasGrad >= 0 &&
      out->buffers[m.biasGrad].shape != std::vector<int64_t>{g->n})
    return programError(
        SINTER_HERE, where,
        absl::StrFormat("bias_grad (%s) has shape %s; expected [%d]",
                        bufferPlace(*out, m.biasGrad),
                        shapeText(out->buffers[m.biasGrad].shape), g->n));
  return absl::OkStatus();
}

absl::Status Reader::lossScaling() {
  const StepProgram &p = *out;
  bool argument = std::any_of(
      p.arguments.begin(), p.arguments.end(), [](const Argument &a) {
        return a.kind == sabi::Argument::hyper &&
               a.name == sabi::kLossScaleHyper;
      });
  if (!in.has_loss_scaling()) {
    if (argument)
      return programError(SINTER_HERE, "loss_scaling",
                          "missing, but the program has a loss_scale argument");
    return absl::OkStatus();
  }
  if (!argument)
    return programError(SINTER_HERE, "loss_scaling",
                        "present, but the program has no loss_scale argument");
  const sabi::LossScaling &s = in.loss_scaling();
  auto bad = [&](std::string_view what) {
    return programError(SINTER_HERE, "loss_scaling",
                        absl::StrFormat("%s is out of range", what));
  };
  if (!(s.init_scale() > 0) || !std::isfinite(s.init_scale()))
    return bad("init_scale");
  if (!(s.growth_factor() >= 1) || !std::isfinite(s.growth_factor()))
    return bad("growth_factor");
  if (!(s.backoff_factor() > 0 && s.backoff_factor() < 1))
    return bad("backoff_factor");
  if (s.growth_interval() < 1)
    return bad("growth_interval");
  if (s.max_consecutive_overflows() < 1)
    return bad("max_consecutive_overflows");
  LossScaling l;
  l.dynamic = s.dynamic();
  l.initScale = s.init_scale();
  l.growthFactor = s.growth_factor();
  l.backoffFactor = s.backoff_factor();
  l.growthInterval = s.growth_interval();
  l.maxConsecutiveOverflows = s.max_consecutive_overflows();
  out->lossScaling = l;
  return absl::OkStatus();
}

absl::Status Reader::step(const sabi::Step &in, int64_t index) {
  Step s;
  switch (in.op_case()) {
  case sabi::Step::kKernel: {
    std::string where = absl::StrFormat("step %d (kernel)", index);
    s.kind = sabi::Step::kKernel;
    int64_t max = static_cast<int64_t>(out->kernels.size()) - 1;
    if (in.kernel().kernel() < 0 || in.kernel().kernel() > max)
      return programError(
          SINTER_HERE, where,
          absl::StrFormat("'kernel' must be a kernel index in [0, %d]", max));
    s.kernel = in.kernel().kernel();
    for (auto [list, field, into] :
         {std::tuple{&in.kernel().inputs(), "inputs", &s.inputs},
          std::tuple{&in.kernel().outputs(), "outputs", &s.outputs}})
      for (int64_t id : *list) {
        SINTER_RETURN_IF_ERROR(bufferId(where, field, id));
        into->push_back(id);
      }
    for (const sabi::KernelMember &m : in.kernel().members()) {
      Step::Member member;
      for (auto [list, field, into] :
           {std::tuple{&m.inputs(), "members.inputs", &member.inputs},
            std::tuple{&m.outputs(), "members.outputs", &member.outputs}})
        for (int64_t id : *list) {
          SINTER_RETURN_IF_ERROR(bufferId(where, field, id));
          into->push_back(id);
        }
      member.origins = m.origins();
      s.members.push_back(std::move(member));
    }
    break;
  }
  case sabi::Step::kMatmul:
    s.kind = sabi::Step::kMatmul;
    SINTER_RETURN_IF_ERROR(matmul(absl::StrFormat("step %d (matmul)", index),
                                  in.matmul(), s.matmul));
    break;
  case sabi::Step::kCopy: {
    std::string where = absl::StrFormat("step %d (copy)", index);
    s.kind = sabi::Step::kCopy;
    SINTER_RETURN_IF_ERROR(bufferId(where, "src", in.copy().src()));
    SINTER_RETURN_IF_ERROR(bufferId(where, "dst", in.copy().dst()));
    s.src = in.copy().src();
    s.dst = in.copy().dst();
    const Buffer &src = out->buffers[s.src], &dst = out->buffers[s.dst];
    if (src.bytes != dst.bytes)
      return programError(
          SINTER_HERE, where,
          absl::StrFormat("src (%s) has %d bytes but dst (%s) has %d",
                          bufferPlace(*out, s.src), src.bytes,
                          bufferPlace(*out, s.dst), dst.bytes));
    break;
  }
  case sabi::Step::kStart:
  case sabi::Step::kDone: {
    bool start = in.op_case() == sabi::Step::kStart;
    std::string where =
        absl::StrFormat("step %d (%s)", index, start ? "start" : "done");
    s.kind = in.op_case();
    s.collective = start ? in.start().collective() : in.done().collective();
    int64_t max = static_cast<int64_t>(out->collectives.size()) - 1;
    if (s.collective < 0 || s.collective > max)
      return programError(SINTER_HERE, where,
                          absl::StrFormat("'collective' must be a collective "
                                          "index in [0, %d]",
                                          max));
    break;
  }
  default:
    return programError(SINTER_HERE, absl::StrFormat("step %d", index),
                        "has no op this runtime knows (kernel, matmul, copy, "
                        "start, done)");
  }
  for (const sabi::Origin &o : in.origins())
    s.origins.push_back({o.op(), o.layer(), o.file(), o.line(), o.column()});
  int64_t memberOrigins = 0;
  for (const Step::Member &m : s.members) {
    if (m.origins < 0)
      return programError(SINTER_HERE,
                          absl::StrFormat("step %d (kernel)", index),
                          "a member's 'origins' is negative");
    memberOrigins += m.origins;
  }
  if (!s.members.empty() &&
      memberOrigins != static_cast<int64_t>(s.origins.size()))
    return programError(
        SINTER_HERE, absl::StrFormat("step %d (kernel)", index),
        absl::StrFormat("its members' origins add up to %d, but the step "
                        "has %d",
                        memberOrigins, s.origins.size()));
  out->steps.push_back(std::move(s));
  return absl::OkStatus();
}

absl::Status Reader::collective(const sabi::Collective &c, int64_t index) {
  std::string where = absl::StrFormat("collective %d", index);
  Collective col;
  if (!sabi::Collective::Op_IsValid(c.op()) ||
      !sabi::Collective::Reduction_IsValid(c.reduction()))
    return programError(SINTER_HERE, where, "has an unknown op or reduction");
  col.op = c.op();
  col.reduction = c.reduction();
  SINTER_RETURN_IF_ERROR(bufferId(where, "buffer", c.buffer()));
  const Buffer &b = out->buffers[c.buffer()];
  if (b.slab != sabi::Slab::arena ||
      (b.type != sabi::ElementType::f32 && b.type != sabi::ElementType::f64))
    return programError(SINTER_HERE, where,
                        absl::StrFormat("%s must be an f32 or f64 "
                                        "buffer of the arena",
                                        bufferPlace(*out, c.buffer())));
  col.buffer = c.buffer();
  if (c.has_comm_dtype()) {
    if ((c.comm_dtype() != sabi::ElementType::bf16 &&
         c.comm_dtype() != sabi::ElementType::f16) ||
        b.type != sabi::ElementType::f32 ||
        (col.reduction != sabi::Collective::sum &&
         col.reduction != sabi::Collective::mean))
      return programError(
          SINTER_HERE, where,
          "'comm_dtype' must be bf16 or f16, on an f32 buffer reduced by sum "
          "or mean");
    col.commType = c.comm_dtype();
  }
  col.name = c.name().empty() ? absl::StrFormat("collective %d", index)
                              : c.name();
  col.tensors.assign(c.tensors().begin(), c.tensors().end());
  out->collectives.push_back(std::move(col));
  return absl::OkStatus();
}

absl::Status Reader::collectiveOrder() const {
  enum class State { before, inFlight, done };
  std::vector<State> state(out->collectives.size(), State::before);
  auto bytesOf = [&](int64_t id) {
    const Buffer &b = out->buffers[id];
    return std::make_pair(b.offset, b.offset + b.bytes);
  };
  auto overlaps = [&](int64_t buffer, int64_t collective) {
    const Buffer &a = out->buffers[buffer];
    const Buffer &c = out->buffers[out->collectives[collective].buffer];
    auto [a0, a1] = bytesOf(buffer);
    auto [c0, c1] = bytesOf(out->collectives[collective].buffer);
    return a.slab == c.slab && a0 < c1 && c0 < a1;
  };
  for (size_t i = 0; i < out->steps.size(); ++i) {
    const Step &s = out->steps[i];
    std::string where = absl::StrFormat("step %d (%s)", i,
                                        sabi::stepKindName(s.kind));
    if (s.kind == sabi::Step::kStart || s.kind == sabi::Step::kDone) {
      State &st = state[s.collective];
      bool start = s.kind == sabi::Step::kStart;
      if (start ? st != State::before : st != State::inFlight)
        return programError(
            SINTER_HERE, where,
            absl::StrFormat(start ? "starts %s, which already started"
                                  : "waits for %s, which is not in flight",
                            out->collectives[s.collective].name));
      st = start ? State::inFlight : State::done;
      continue;
    }
    // The buffers this step touches.
    std::vector<int64_t> touched;
    if (s.kind == sabi::Step::kMatmul) {
      touched = {s.matmul.lhs, s.matmul.rhs, s.matmul.out};
      if (s.matmul.bias >= 0)
        touched.push_back(s.matmul.bias);
      if (s.matmul.workspace >= 0)
        touched.push_back(s.matmul.workspace);
      if (s.matmul.aux >= 0)
        touched.push_back(s.matmul.aux);
      if (s.matmul.biasGrad >= 0)
        touched.push_back(s.matmul.biasGrad);
    } else if (s.kind == sabi::Step::kCopy) {
      touched = {s.src, s.dst};
    }
    for (size_t c = 0; c < state.size(); ++c)
      if (state[c] == State::inFlight)
        for (int64_t id : touched)
          if (overlaps(id, c))
            return programError(
                SINTER_HERE, where,
                absl::StrFormat("touches buffer %s while %s is in flight",
                                bufferPlace(*out, id),
                                out->collectives[c].name));
  }
  for (size_t c = 0; c < state.size(); ++c)
    if (state[c] != State::done)
      return programError(
          SINTER_HERE, "steps",
          absl::StrFormat("%s %s", out->collectives[c].name,
                          state[c] == State::before
                              ? "never starts"
                              : "is still in flight at the end"));
  return absl::OkStatus();
}

absl::Status Reader::read(StepProgram &program) {
  out = &program;
  if (in.version() != sabi::kStepProgramVersion)
    return programError(
        SINTER_HERE, "top level",
        absl::StrFormat("version %d; this runtime reads version %d (recompile "
                        "the model with this release's sinterc)",
                        in.version(), sabi::kStepProgramVersion));
  program.version = in.version();
  program.function = in.function();
  // training.seed is an int64 the interpreter converts to uint64.
  program.seed = static_cast<uint64_t>(in.seed());
  SINTER_RETURN_IF_ERROR(slabs());
  for (int i = 0; i < in.buffers_size(); ++i)
    SINTER_RETURN_IF_ERROR(buffer(in.buffers(i), i));
  for (int i = 0; i < in.arguments_size(); ++i)
    SINTER_RETURN_IF_ERROR(argument(in.arguments(i), i));
  int steps = 0;
  for (const Argument &a : program.arguments)
    if (a.kind == sabi::Argument::step && ++steps > 1)
      return programError(SINTER_HERE, "arguments",
                          "more than one 'step' argument");
  int ranks = 0;
  for (const Argument &a : program.arguments)
    if (a.kind == sabi::Argument::rank && ++ranks > 1)
      return programError(SINTER_HERE, "arguments",
                          "more than one 'rank' argument");
  for (int i = 0; i < in.results_size(); ++i)
    SINTER_RETURN_IF_ERROR(result(in.results(i), i));
  std::vector<bool> filled(program.buffers.size());
  for (int i = 0; i < in.constants_size(); ++i)
    SINTER_RETURN_IF_ERROR(constant(in.constants(i), i, filled));
  for (int i = 0; i < in.kernels_size(); ++i)
    SINTER_RETURN_IF_ERROR(kernel(in.kernels(i), i));
  for (int i = 0; i < in.collectives_size(); ++i)
    SINTER_RETURN_IF_ERROR(collective(in.collectives(i), i));
  for (int i = 0; i < in.steps_size(); ++i)
    SINTER_RETURN_IF_ERROR(step(in.steps(i), i));
  SINTER_RETURN_IF_ERROR(collectiveOrder());
  return lossScaling();
}

} // namespace

absl::StatusOr<StepProgram>
sinter::exec::validateStepProgram(const sabi::StepProgram &message) {
  StepProgram program;
  if (absl::Status s = Reader(message).read(program); !s.ok())
    return s;
  return program;
}

absl::StatusOr<StepProgram> sinter::exec::parseStepProgram(const void *data,
                                                           size_t size) {
  sabi::StepProgram message;
  if (size > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !message.ParseFromArray(data, static_cast<int>(size)))
    return programError(SINTER_HERE, "top level",
                        absl::StrFormat("%d bytes that are not a serialized "
                                        "StepProgram",
                                        size));
  return validateStepProgram(message);
}

absl::StatusOr<StepProgram>
sinter::exec::parseStepProgramJson(std::string_view json) {
  sabi::StepProgram message;
  google::protobuf::util::JsonParseOptions options;
  google::protobuf::util::Status status =
      google::protobuf::util::JsonStringToMessage(
          google::protobuf::StringPiece(json.data(), json.size()), &message,
          options);
  if (!status.ok())
    return programError(SINTER_HERE, "JSON", std::string(status.message()));
  return validateStepProgram(message);
}
