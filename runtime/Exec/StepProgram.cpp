//===- StepProgram.cpp - parse and validate a step program ----------------===//
//
// One pass over the JSON tree per section, in dependency order: slabs, then
// buffers (which need slab sizes), then everything that names buffers. Each
// object goes through a MemberReader, which fetches typed members and, when
// done, rejects any member it was not asked for. Errors are built by
// programError() so they all read "step program: <where>: <why>".
//
//===----------------------------------------------------------------------===//

#include "runtime/Exec/StepProgram.h"

#include "runtime/Formats/AbslCompat.h"
#include "runtime/Formats/FileIO.h"
#include "runtime/Formats/Json.h"
#include "runtime/Support/Status.h"

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

using namespace sinter::exec;
using sinter::abi::SlabId;
using sinter::formats::JsonValue;
namespace formats = sinter::formats;

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

namespace {
constexpr std::pair<ElementType, std::string_view> kTypeNames[] = {
    {ElementType::F32, "f32"}, {ElementType::F64, "f64"},
    {ElementType::F16, "f16"}, {ElementType::BF16, "bf16"},
    {ElementType::I64, "i64"}, {ElementType::I32, "i32"},
    {ElementType::I8, "i8"},   {ElementType::I1, "i1"}};
constexpr std::pair<SlabId, std::string_view> kSlabNames[] = {
    {SlabId::Arena, "arena"},
    {SlabId::Params, "params"},
    {SlabId::OptState, "opt_state"},
    {SlabId::Io, "io"},
    {SlabId::Constants, "constants"}};
constexpr std::pair<ArgumentKind, std::string_view> kArgumentKinds[] = {
    {ArgumentKind::Param, "param"},
    {ArgumentKind::OptState, "opt_state"},
    {ArgumentKind::Input, "input"},
    {ArgumentKind::Step, "step"},
    {ArgumentKind::Hyper, "hyper"}};
constexpr std::pair<ResultKind, std::string_view> kResultKinds[] = {
    {ResultKind::Metric, "metric"},
    {ResultKind::Param, "param"},
    {ResultKind::OptState, "opt_state"},
    {ResultKind::Tensor, "tensor"}};
constexpr std::string_view kCategories[] = {
    "parameters", "gradients", "optimizer_state", "activations",
    "workspace",  "inputs",    "outputs",         "constants"};

template <typename E, size_t N>
std::string_view nameOf(const std::pair<E, std::string_view> (&table)[N],
                        E value) {
  for (const auto &[e, name] : table)
    if (e == value)
      return name;
  return "?";
}

template <typename E, size_t N>
std::optional<E> lookup(const std::pair<E, std::string_view> (&table)[N],
                        std::string_view name) {
  for (const auto &[e, n] : table)
    if (n == name)
      return e;
  return std::nullopt;
}

template <typename E, size_t N>
std::string choices(const std::pair<E, std::string_view> (&table)[N]) {
  std::vector<std::string> names;
  for (const auto &entry : table)
    names.emplace_back(entry.second);
  return absl::StrJoin(names, ", ");
}
} // namespace

std::string_view sinter::exec::elementTypeName(ElementType type) {
  return nameOf(kTypeNames, type);
}
std::string_view sinter::exec::slabName(SlabId slab) {
  return nameOf(kSlabNames, slab);
}
std::string_view sinter::exec::argumentKindName(ArgumentKind kind) {
  return nameOf(kArgumentKinds, kind);
}
std::string_view sinter::exec::resultKindName(ResultKind kind) {
  return nameOf(kResultKinds, kind);
}
std::string_view sinter::exec::stepKindName(StepKind kind) {
  switch (kind) {
  case StepKind::Kernel:
    return "kernel";
  case StepKind::Matmul:
    return "matmul";
  case StepKind::Copy:
    return "copy";
  }
  return "?";
}

sinter::formats::DType sinter::exec::toDType(ElementType type) {
  using formats::DType;
  switch (type) {
  case ElementType::F32:
    return DType::F32;
  case ElementType::F64:
    return DType::F64;
  case ElementType::F16:
    return DType::F16;
  case ElementType::BF16:
    return DType::BF16;
  case ElementType::I64:
    return DType::I64;
  case ElementType::I32:
    return DType::I32;
  case ElementType::I8:
    return DType::I8;
  case ElementType::I1:
    return DType::Bool;
  }
  return DType::F32;
}

int64_t sinter::exec::elementByteSize(ElementType type) {
  return formats::dtypeByteSize(toDType(type));
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

//===----------------------------------------------------------------------===//
// Parsing helpers
//===----------------------------------------------------------------------===//

namespace {

absl::Status programError(std::string_view where, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrFormat("step program: %s: %s", where, why));
}

/// Typed access to one JSON object's members; finish() rejects members
/// nobody asked for. `where` prefixes every message ("buffer 3").
class MemberReader {
public:
  MemberReader(const JsonValue &object, std::string where)
      : object(object), where(std::move(where)) {}

  absl::Status checkObject() const {
    if (!object.isObject())
      return programError(where, "expected a JSON object");
    return absl::OkStatus();
  }
  const std::string &place() const { return where; }
  absl::Status error(std::string_view why) const {
    return programError(where, why);
  }

  /// The member `key`, or null when absent (then an error if `required`).
  absl::StatusOr<const JsonValue *> get(std::string_view key, bool required) {
    seen.insert(std::string(key));
    const JsonValue *value = object.find(key);
    if (!value && required)
      return error(absl::StrFormat("missing member '%s'", key));
    return value;
  }

  absl::StatusOr<int64_t> getInt(std::string_view key, int64_t min, int64_t max,
                                 std::optional<int64_t> fallback = {}) {
    absl::StatusOr<const JsonValue *> v = get(key, !fallback);
    if (!v.ok())
      return v.status();
    if (!*v)
      return *fallback;
    if (!(*v)->isInt())
      return error(absl::StrFormat("'%s' must be an integer", key));
    int64_t x = (*v)->asInt();
    if (x < min || x > max)
      return error(
          absl::StrFormat("'%s' is %d; must be in [%d, %d]", key, x, min, max));
    return x;
  }

  absl::StatusOr<std::string> getString(std::string_view key,
                                        std::optional<std::string> fallback) {
    absl::StatusOr<const JsonValue *> v = get(key, !fallback);
    if (!v.ok())
      return v.status();
    if (!*v)
      return *fallback;
    if (!(*v)->isString())
      return error(absl::StrFormat("'%s' must be a string", key));
    return (*v)->asString();
  }

  absl::StatusOr<bool> getBool(std::string_view key, bool fallback) {
    absl::StatusOr<const JsonValue *> v = get(key, false);
    if (!v.ok())
      return v.status();
    if (!*v)
      return fallback;
    if (!(*v)->isBool())
      return error(absl::StrFormat("'%s' must be true or false", key));
    return (*v)->asBool();
  }

  absl::StatusOr<double> getNumber(std::string_view key,
                                   std::optional<double> fallback) {
    absl::StatusOr<const JsonValue *> v = get(key, !fallback);
    if (!v.ok())
      return v.status();
    if (!*v)
      return *fallback;
    if (!(*v)->isNumber())
      return error(absl::StrFormat("'%s' must be a number", key));
    return (*v)->asNumber();
  }

  absl::StatusOr<const std::vector<JsonValue> *>
  getArray(std::string_view key) {
    absl::StatusOr<const JsonValue *> v = get(key, true);
    if (!v.ok())
      return v.status();
    if (!(*v)->isArray())
      return error(absl::StrFormat("'%s' must be an array", key));
    return &(*v)->items();
  }

  absl::Status finish() const {
    for (const auto &[key, value] : object.members())
      if (!seen.count(key))
        return error(absl::StrFormat("unknown member %s",
                                     formats::quoteForMessage(key)));
    return absl::OkStatus();
  }

private:
  const JsonValue &object;
  std::string where;
  std::set<std::string> seen;
};

std::string bufferPlace(const StepProgram &program, int64_t id) {
  const Buffer &b = program.buffers[id];
  if (b.name.empty())
    return absl::StrFormat("buffer %d", id);
  return absl::StrFormat("buffer %d %s", id, formats::quoteForMessage(b.name));
}

std::string shapeText(const std::vector<int64_t> &shape) {
  return absl::StrFormat("[%s]", absl::StrJoin(shape, ","));
}

//===----------------------------------------------------------------------===//
// Sections
//===----------------------------------------------------------------------===//

absl::Status parseSlabs(MemberReader &top, StepProgram &program) {
  const JsonValue *slabs;
  SINTER_ASSIGN_OR_RETURN(slabs, top.get("slabs", true));
  MemberReader reader(*slabs, "slabs");
  SINTER_RETURN_IF_ERROR(reader.checkObject());
  for (const auto &[slab, name] : kSlabNames) {
    SINTER_ASSIGN_OR_RETURN(
        program.slabBytes[static_cast<int>(slab)],
        reader.getInt(name, 0, std::numeric_limits<int64_t>::max()));
  }
  return reader.finish();
}

absl::Status parseBuffer(const JsonValue &json, int64_t index,
                         StepProgram &program) {
  MemberReader reader(json, absl::StrFormat("buffer %d", index));
  SINTER_RETURN_IF_ERROR(reader.checkObject());
  Buffer b;
  SINTER_ASSIGN_OR_RETURN(
      b.id, reader.getInt("id", 0, std::numeric_limits<int64_t>::max()));
  if (b.id != index)
    return reader.error(
        absl::StrFormat("has id %d; ids must be 0, 1, 2, ... in order", b.id));
  SINTER_ASSIGN_OR_RETURN(b.name, reader.getString("name", std::string()));
  std::string slab, dtype;
  SINTER_ASSIGN_OR_RETURN(slab, reader.getString("slab", std::nullopt));
  std::optional<SlabId> slabId = lookup(kSlabNames, slab);
  if (!slabId)
    return reader.error(absl::StrFormat("unknown slab %s (expected %s)",
                                        formats::quoteForMessage(slab),
                                        choices(kSlabNames)));
  b.slab = *slabId;
  SINTER_ASSIGN_OR_RETURN(
      b.offset,
      reader.getInt("offset", 0, std::numeric_limits<int64_t>::max()));
  SINTER_ASSIGN_OR_RETURN(dtype, reader.getString("dtype", std::nullopt));
  std::optional<ElementType> type = lookup(kTypeNames, dtype);
  if (!type)
    return reader.error(absl::StrFormat("unknown dtype %s (expected %s)",
                                        formats::quoteForMessage(dtype),
                                        choices(kTypeNames)));
  b.type = *type;
  const std::vector<JsonValue> *shape;
  SINTER_ASSIGN_OR_RETURN(shape, reader.getArray("shape"));
  if (shape->size() > formats::kMaxRank)
    return reader.error(absl::StrFormat("rank %d exceeds the maximum %d",
                                        shape->size(), formats::kMaxRank));
  for (const JsonValue &dim : *shape) {
    if (!dim.isInt() || dim.asInt() < 0)
      return reader.error("shape entries must be non-negative integers");
    b.shape.push_back(dim.asInt());
  }
  SINTER_ASSIGN_OR_RETURN(b.category,
                          reader.getString("category", std::string()));
  if (!b.category.empty() &&
      std::find(std::begin(kCategories), std::end(kCategories), b.category) ==
          std::end(kCategories))
    return reader.error(absl::StrFormat("unknown category %s",
                                        formats::quoteForMessage(b.category)));
  SINTER_RETURN_IF_ERROR(reader.finish());

  absl::StatusOr<int64_t> bytes = formats::numBytes(toDType(b.type), b.shape);
  if (!bytes.ok())
    return reader.error(absl::StrFormat("shape %s: %s", shapeText(b.shape),
                                        bytes.status().message()));
  b.bytes = *bytes;
  b.numElements = *bytes / elementByteSize(b.type);
  int64_t slabBytes = program.slabBytes[static_cast<int>(b.slab)];
  if (b.offset > slabBytes || b.bytes > slabBytes - b.offset)
    return reader.error(
        absl::StrFormat("offset %d + %d bytes exceeds slab '%s' of %d bytes",
                        b.offset, b.bytes, slabName(b.slab), slabBytes));
  program.buffers.push_back(std::move(b));
  return absl::OkStatus();
}

/// An offset that is not a multiple of 64 is only legal for a view: its
/// bytes must lie inside an aligned buffer of the same slab.
absl::Status checkAlignment(const StepProgram &program) {
  for (int s = 0; s < sinter::abi::kNumSlabs; ++s) {
    // Aligned buffers by offset, with the furthest end reached so far.
    std::vector<std::pair<int64_t, int64_t>> spans;
    for (const Buffer &b : program.buffers)
      if (static_cast<int>(b.slab) == s &&
          b.offset % sinter::abi::kBufferAlignment == 0)
        spans.push_back({b.offset, b.offset + b.bytes});
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i)
      spans[i].second = std::max(spans[i].second, spans[i - 1].second);
    for (const Buffer &b : program.buffers) {
      if (static_cast<int>(b.slab) != s ||
          b.offset % sinter::abi::kBufferAlignment == 0)
        continue;
      auto it =
          std::upper_bound(spans.begin(), spans.end(),
                           std::pair<int64_t, int64_t>{
                               b.offset, std::numeric_limits<int64_t>::max()});
      if (it == spans.begin() || std::prev(it)->second < b.offset + b.bytes)
        return programError(
            bufferPlace(program, b.id),
            absl::StrFormat("offset %d is not a multiple of %d and the buffer "
                            "is not a view inside an aligned buffer",
                            b.offset, sinter::abi::kBufferAlignment));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> getBufferId(MemberReader &reader, std::string_view key,
                                    const StepProgram &program,
                                    bool required = true) {
  int64_t max = static_cast<int64_t>(program.buffers.size()) - 1;
  absl::StatusOr<const JsonValue *> v = reader.get(key, required);
  if (!v.ok())
    return v.status();
  if (!*v)
    return -1;
  if (!(*v)->isInt())
    return reader.error(absl::StrFormat("'%s' must be a buffer id", key));
  int64_t id = (*v)->asInt();
  if (id < 0 || id > max)
    return reader.error(
        absl::StrFormat("'%s' is buffer %d, but there are %d buffers", key, id,
                        program.buffers.size()));
  return id;
}

absl::Status parseArgument(const JsonValue &json, int64_t index,
                           StepProgram &program) {
  MemberReader reader(json, absl::StrFormat("argument %d", index));
  SINTER_RETURN_IF_ERROR(reader.checkObject());
  Argument a;
  std::string kind;
  SINTER_ASSIGN_OR_RETURN(a.name, reader.getString("name", std::nullopt));
  SINTER_ASSIGN_OR_RETURN(kind, reader.getString("kind", std::nullopt));
  SINTER_ASSIGN_OR_RETURN(a.buffer, getBufferId(reader, "buffer", program));
  std::optional<ArgumentKind> k = lookup(kArgumentKinds, kind);
  if (!k)
    return reader.error(absl::StrFormat("unknown kind %s (expected %s)",
                                        formats::quoteForMessage(kind),
                                        choices(kArgumentKinds)));
  a.kind = *k;
  const Buffer &b = program.buffers[a.buffer];
  if (a.name.empty())
    return reader.error("empty name");
  if (program.findArgument(a.name))
    return reader.error(absl::StrFormat("name %s repeats an earlier argument",
                                        formats::quoteForMessage(a.name)));
  if (a.kind == ArgumentKind::Step &&
      (b.type != ElementType::I64 || !b.shape.empty()))
    return reader.error(
        absl::StrFormat("the step argument must be an i64 scalar, not %s %s",
                        elementTypeName(b.type), shapeText(b.shape)));

  const JsonValue *aliases;
  SINTER_ASSIGN_OR_RETURN(aliases, reader.get("aliases", false));
  if (aliases) {
    if (a.kind != ArgumentKind::Param)
      return reader.error("only params have 'aliases'");
    if (!aliases->isArray())
      return reader.error("'aliases' must be an array of names");
    for (const JsonValue &alias : aliases->items()) {
      if (!alias.isString() || alias.asString().empty())
        return reader.error("'aliases' must be an array of non-empty names");
      if (alias.asString() == a.name || program.findArgument(alias.asString()) ||
          std::count(a.aliases.begin(), a.aliases.end(), alias.asString()))
        return reader.error(absl::StrFormat(
            "alias %s repeats an argument name",
            formats::quoteForMessage(alias.asString())));
      a.aliases.push_back(alias.asString());
    }
  }
  const JsonValue *bound;
  SINTER_ASSIGN_OR_RETURN(bound, reader.get("bound", false));
  if (bound) {
    bool integer = b.type == ElementType::I64 || b.type == ElementType::I32 ||
                   b.type == ElementType::I8;
    if (a.kind != ArgumentKind::Input || !integer)
      return reader.error("only integer inputs have a 'bound'");
    if (!bound->isInt() || bound->asInt() < 1)
      return reader.error("'bound' must be a positive integer");
    a.bound = bound->asInt();
  }

  const JsonValue *defaultValue;
  SINTER_ASSIGN_OR_RETURN(defaultValue, reader.get("default", false));
  if (defaultValue && a.kind != ArgumentKind::Hyper)
    return reader.error("only hyper arguments have a 'default'");
  if (a.kind == ArgumentKind::Hyper) {
    if ((b.type != ElementType::F64 && b.type != ElementType::F32) ||
        !b.shape.empty())
      return reader.error(absl::StrFormat(
          "a hyper argument must be an f32 or f64 scalar, not %s %s",
          elementTypeName(b.type), shapeText(b.shape)));
    if (!defaultValue)
      return reader.error("a hyper argument needs a 'default'");
    if (!defaultValue->isNumber() ||
        !std::isfinite(defaultValue->asNumber()) ||
        (b.type == ElementType::F32 &&
         !std::isfinite(static_cast<float>(defaultValue->asNumber()))))
      return reader.error(absl::StrFormat(
          "'default' must be a finite %s", elementTypeName(b.type)));
    a.defaultValue = defaultValue->asNumber();
  }

  const JsonValue *init;
  SINTER_ASSIGN_OR_RETURN(init, reader.get("init", false));
  if (init) {
    if (a.kind != ArgumentKind::Param)
      return reader.error("only params have an 'init'");
    MemberReader initReader(*init, reader.place() + " init");
    SINTER_RETURN_IF_ERROR(initReader.checkObject());
    std::string dist;
    SINTER_ASSIGN_OR_RETURN(dist, initReader.getString("dist", std::nullopt));
    Initializer initializer;
    std::string_view key;
    if (dist == "normal") {
      initializer.dist = Initializer::Dist::Normal;
      key = "std";
    } else if (dist == "uniform") {
      initializer.dist = Initializer::Dist::Uniform;
      key = "bound";
    } else if (dist == "constant") {
      initializer.dist = Initializer::Dist::Constant;
      key = "value";
    } else {
      return initReader.error(absl::StrFormat(
          "unknown dist %s (expected normal, uniform, constant)",
          formats::quoteForMessage(dist)));
    }
    SINTER_ASSIGN_OR_RETURN(initializer.value,
                            initReader.getNumber(key, std::nullopt));
    SINTER_RETURN_IF_ERROR(initReader.finish());
    if (b.type != ElementType::F32 && b.type != ElementType::F64 &&
        b.type != ElementType::F16 && b.type != ElementType::BF16)
      return reader.error(absl::StrFormat(
          "an initialized parameter must be a float tensor, not %s",
          elementTypeName(b.type)));
    a.init = initializer;
  }
  SINTER_RETURN_IF_ERROR(reader.finish());
  program.arguments.push_back(std::move(a));
  return absl::OkStatus();
}

absl::Status parseResult(const JsonValue &json, int64_t index,
                         StepProgram &program) {
  MemberReader reader(json, absl::StrFormat("result %d", index));
  SINTER_RETURN_IF_ERROR(reader.checkObject());
  Result r;
  std::string kind;
  SINTER_ASSIGN_OR_RETURN(r.name, reader.getString("name", std::nullopt));
  SINTER_ASSIGN_OR_RETURN(kind, reader.getString("kind", std::nullopt));
  SINTER_ASSIGN_OR_RETURN(r.buffer, getBufferId(reader, "buffer", program));
  SINTER_RETURN_IF_ERROR(reader.finish());
  std::optional<ResultKind> k = lookup(kResultKinds, kind);
  if (!k)
    return reader.error(absl::StrFormat("unknown kind %s (expected %s)",
                                        formats::quoteForMessage(kind),
                                        choices(kResultKinds)));
  r.kind = *k;
  const Buffer &b = program.buffers[r.buffer];
  if (r.name.empty())
    return reader.error("empty name");
  if (program.findResult(r.name))
    return reader.error(absl::StrFormat("name %s repeats an earlier result",
                                        formats::quoteForMessage(r.name)));
  if (r.kind == ResultKind::Metric && !b.shape.empty())
    return reader.error(absl::StrFormat("metric %s must be a scalar, not %s",
                                        formats::quoteForMessage(r.name),
                                        shapeText(b.shape)));
  if (r.kind == ResultKind::Param || r.kind == ResultKind::OptState) {
    // The state contract: the argument of the same name holds the new value.
    ArgumentKind want = r.kind == ResultKind::Param ? ArgumentKind::Param
                                                    : ArgumentKind::OptState;
    const Argument *a = program.findArgument(r.name);
    if (!a || a->kind != want)
      return reader.error(absl::StrFormat(
          "%s result %s has no %s argument of the same name",
          resultKindName(r.kind), formats::quoteForMessage(r.name),
          argumentKindName(want)));
    const Buffer &ab = program.buffers[a->buffer];
    if (ab.type != b.type || ab.shape != b.shape)
      return reader.error(absl::StrFormat(
          "result %s is %s %s but its argument is %s %s",
          formats::quoteForMessage(r.name), elementTypeName(b.type),
          shapeText(b.shape), elementTypeName(ab.type), shapeText(ab.shape)));
  }
  program.results.push_back(std::move(r));
  return absl::OkStatus();
}

absl::Status parseConstant(const JsonValue &json, int64_t index,
                           StepProgram &program, std::vector<bool> &filled) {
  MemberReader reader(json, absl::StrFormat("constant %d", index));
  SINTER_RETURN_IF_ERROR(reader.checkObject());
  Constant c;
  std::string hex;
  SINTER_ASSIGN_OR_RETURN(c.buffer, getBufferId(reader, "buffer", program));
  SINTER_ASSIGN_OR_RETURN(hex, reader.getString("hex", std::nullopt));
  SINTER_RETURN_IF_ERROR(reader.finish());
  const Buffer &b = program.buffers[c.buffer];
  if (b.slab != SlabId::Constants)
    return reader.error(absl::StrFormat("%s is in slab '%s', not 'constants'",
                                        bufferPlace(program, c.buffer),
                                        slabName(b.slab)));
  if (filled[c.buffer])
    return reader.error(absl::StrFormat("%s already has a constant",
                                        bufferPlace(program, c.buffer)));
  filled[c.buffer] = true;
  if (static_cast<int64_t>(hex.size()) != 2 * b.bytes)
    return reader.error(absl::StrFormat(
        "hex has %d digits; %s needs %d (2 per byte)", hex.size(),
        bufferPlace(program, c.buffer), 2 * b.bytes));
  c.bytes.resize(b.bytes);
  auto digit = [](char ch) -> int {
    if (ch >= '0' && ch <= '9')
      return ch - '0';
    if (ch >= 'a' && ch <= 'f')
      return ch - 'a' + 10;
    return -1;
  };
  for (int64_t i = 0; i < b.bytes; ++i) {
    int hi = digit(hex[2 * i]), lo = digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return reader.error(
          absl::StrFormat("hex digit %d is not lowercase hexadecimal",
                          hi < 0 ? 2 * i : 2 * i + 1));
    c.bytes[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  program.constants.push_back(std::move(c));
  return absl::OkStatus();
}

absl::Status parseKernel(const JsonValue &json, int64_t index,
                         StepProgram &program) {
  MemberReader reader(json, absl::StrFormat("kernel %d", index));
  SINTER_RETURN_IF_ERROR(reader.checkObject());
  Kernel k;
  SINTER_ASSIGN_OR_RETURN(k.name, reader.getString("name", std::nullopt));
  SINTER_ASSIGN_OR_RETURN(k.symbol, reader.getString("symbol", std::string()));
  SINTER_ASSIGN_OR_RETURN(
      k.extent,
      reader.getInt("extent", 1, std::numeric_limits<int64_t>::max()));
  SINTER_ASSIGN_OR_RETURN(
      k.bytes, reader.getInt("bytes", 0, std::numeric_limits<int64_t>::max(),
                             int64_t{0}));
  SINTER_RETURN_IF_ERROR(reader.finish());
  program.kernels.push_back(std::move(k));
  return absl::OkStatus();
}

bool overlaps(const Buffer &a, const Buffer &b) {
  return a.slab == b.slab && a.bytes > 0 && b.bytes > 0 &&
         a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

absl::Status parseMatmul(MemberReader &reader, StepProgram &program,
                         MatmulStep &m) {
  SINTER_ASSIGN_OR_RETURN(m.lhs, getBufferId(reader, "lhs", program));
  SINTER_ASSIGN_OR_RETURN(m.rhs, getBufferId(reader, "rhs", program));
  SINTER_ASSIGN_OR_RETURN(m.out, getBufferId(reader, "out", program));
  SINTER_ASSIGN_OR_RETURN(m.bias, getBufferId(reader, "bias", program, false));
  SINTER_ASSIGN_OR_RETURN(m.transposeLhs,
                          reader.getBool("transpose_lhs", false));
  SINTER_ASSIGN_OR_RETURN(m.transposeRhs,
                          reader.getBool("transpose_rhs", false));
  SINTER_ASSIGN_OR_RETURN(m.alpha, reader.getNumber("alpha", 1.0));
  std::string activation;
  SINTER_ASSIGN_OR_RETURN(activation, reader.getString("activation", "none"));
  std::optional<Activation> act = parseActivation(activation);
  if (!act)
    return reader.error(absl::StrFormat(
        "unknown activation %s (expected none, relu, gelu_erf, gelu_tanh)",
        formats::quoteForMessage(activation)));
  m.activation = *act;
  if (!std::isfinite(static_cast<float>(m.alpha)))
    return reader.error("alpha is not a finite f32");
  std::pair<const char *, int64_t> operands[] = {
      {"lhs", m.lhs}, {"rhs", m.rhs}, {"out", m.out}, {"bias", m.bias}};
  for (auto [what, id] : operands) {
    if (id < 0)
      continue;
    const Buffer &b = program.buffers[id];
    if (b.type != ElementType::F32)
      return reader.error(absl::StrFormat("%s (%s) is %s; matmul needs f32",
                                          what, bufferPlace(program, id),
                                          elementTypeName(b.type)));
    if (id != m.out && overlaps(b, program.buffers[m.out]))
      return reader.error(absl::StrFormat("out (%s) overlaps %s (%s)",
                                          bufferPlace(program, m.out), what,
                                          bufferPlace(program, id)));
  }
  absl::StatusOr<MatmulGeometry> g = analyzeMatmul(program.matmulDesc(m));
  if (!g.ok())
    return reader.error(formats::toStd(g.status().message()));
  return absl::OkStatus();
}

absl::Status parseStep(const JsonValue &json, int64_t index,
                       StepProgram &program) {
  MemberReader reader(json, absl::StrFormat("step %d", index));
  SINTER_RETURN_IF_ERROR(reader.checkObject());
  std::string op;
  SINTER_ASSIGN_OR_RETURN(op, reader.getString("op", std::nullopt));
  MemberReader named(json, absl::StrFormat("step %d (%s)", index, op));
  named.get("op", true).IgnoreError();
  Step s;
  if (op == "kernel") {
    s.kind = StepKind::Kernel;
    int64_t max = static_cast<int64_t>(program.kernels.size()) - 1;
    absl::StatusOr<const JsonValue *> v = named.get("kernel", true);
    if (!v.ok())
      return v.status();
    if (!(*v)->isInt() || (*v)->asInt() < 0 || (*v)->asInt() > max)
      return named.error(
          absl::StrFormat("'kernel' must be a kernel index in [0, %d]", max));
    s.kernel = (*v)->asInt();
  } else if (op == "matmul") {
    s.kind = StepKind::Matmul;
    SINTER_RETURN_IF_ERROR(parseMatmul(named, program, s.matmul));
  } else if (op == "copy") {
    s.kind = StepKind::Copy;
    SINTER_ASSIGN_OR_RETURN(s.src, getBufferId(named, "src", program));
    SINTER_ASSIGN_OR_RETURN(s.dst, getBufferId(named, "dst", program));
    const Buffer &src = program.buffers[s.src], &dst = program.buffers[s.dst];
    if (src.bytes != dst.bytes)
      return named.error(
          absl::StrFormat("src (%s) has %d bytes but dst (%s) has %d",
                          bufferPlace(program, s.src), src.bytes,
                          bufferPlace(program, s.dst), dst.bytes));
  } else {
    return reader.error(
        absl::StrFormat("unknown op %s (expected kernel, matmul, copy)",
                        formats::quoteForMessage(op)));
  }
  SINTER_RETURN_IF_ERROR(named.finish());
  program.steps.push_back(s);
  return absl::OkStatus();
}

/// Runs `parse` on every element of the array member `key`.
template <typename Fn>
absl::Status parseEach(MemberReader &top, std::string_view key, Fn parse) {
  const std::vector<JsonValue> *items;
  SINTER_ASSIGN_OR_RETURN(items, top.getArray(key));
  for (size_t i = 0; i < items->size(); ++i)
    SINTER_RETURN_IF_ERROR(parse((*items)[i], static_cast<int64_t>(i)));
  return absl::OkStatus();
}

} // namespace

absl::StatusOr<StepProgram>
sinter::exec::parseStepProgram(std::string_view json) {
  absl::StatusOr<JsonValue> root = formats::parseJson(json);
  if (!root.ok())
    return programError("JSON", formats::toStd(root.status().message()));
  MemberReader top(*root, "top level");
  SINTER_RETURN_IF_ERROR(top.checkObject());
  StepProgram program;
  SINTER_ASSIGN_OR_RETURN(program.version, top.getInt("version", 1, 1));
  SINTER_ASSIGN_OR_RETURN(program.function,
                          top.getString("function", std::nullopt));
  int64_t seed;
  SINTER_ASSIGN_OR_RETURN(
      seed, top.getInt("seed", std::numeric_limits<int64_t>::min(),
                       std::numeric_limits<int64_t>::max()));
  // training.seed is an int64 the interpreter converts to uint64.
  program.seed = static_cast<uint64_t>(seed);
  SINTER_RETURN_IF_ERROR(parseSlabs(top, program));
  SINTER_RETURN_IF_ERROR(parseEach(top, "buffers", [&](auto &j, int64_t i) {
    return parseBuffer(j, i, program);
  }));
  SINTER_RETURN_IF_ERROR(checkAlignment(program));
  SINTER_RETURN_IF_ERROR(parseEach(top, "arguments", [&](auto &j, int64_t i) {
    return parseArgument(j, i, program);
  }));
  int steps = 0;
  for (const Argument &a : program.arguments)
    if (a.kind == ArgumentKind::Step && ++steps > 1)
      return programError("arguments", "more than one 'step' argument");
  SINTER_RETURN_IF_ERROR(parseEach(top, "results", [&](auto &j, int64_t i) {
    return parseResult(j, i, program);
  }));
  std::vector<bool> filled(program.buffers.size());
  SINTER_RETURN_IF_ERROR(parseEach(top, "constants", [&](auto &j, int64_t i) {
    return parseConstant(j, i, program, filled);
  }));
  SINTER_RETURN_IF_ERROR(parseEach(top, "kernels", [&](auto &j, int64_t i) {
    return parseKernel(j, i, program);
  }));
  SINTER_RETURN_IF_ERROR(parseEach(top, "steps", [&](auto &j, int64_t i) {
    return parseStep(j, i, program);
  }));
  SINTER_RETURN_IF_ERROR(top.finish());
  return program;
}
