//===- Abi.cpp - names of the ABI's enumerations --------------------------===//
//
// The names are the proto's own enum value names (StepProgram.proto), read
// through the generated descriptors, so no second table exists.
//
//===----------------------------------------------------------------------===//

#include "abi/Abi.h"

using namespace sinter::abi;

namespace {

template <typename Kind>
std::string_view nameOf(const google::protobuf::EnumDescriptor *descriptor,
                        Kind value) {
  const google::protobuf::EnumValueDescriptor *v =
      descriptor->FindValueByNumber(static_cast<int>(value));
  return v ? std::string_view(v->name()) : std::string_view();
}

template <typename Kind>
std::optional<Kind> parseOf(const google::protobuf::EnumDescriptor *descriptor,
                            std::string_view name) {
  const google::protobuf::EnumValueDescriptor *v =
      descriptor->FindValueByName(std::string(name));
  if (!v)
    return std::nullopt;
  return static_cast<Kind>(v->number());
}

} // namespace

std::string_view sinter::abi::slabName(SlabKind slab) {
  return nameOf(Slab::Kind_descriptor(), slab);
}
std::string_view sinter::abi::dtypeName(DType type) {
  return nameOf(ElementType::Kind_descriptor(), type);
}
std::string_view sinter::abi::categoryName(CategoryKind category) {
  return nameOf(Category::Kind_descriptor(), category);
}
std::string_view sinter::abi::argumentKindName(ArgumentKind kind) {
  return nameOf(Argument::Kind_descriptor(), kind);
}
std::string_view sinter::abi::resultKindName(ResultKind kind) {
  return nameOf(Result::Kind_descriptor(), kind);
}

std::string_view
sinter::abi::activationName(MatmulStep::Activation activation) {
  return nameOf(MatmulStep::Activation_descriptor(), activation);
}
std::string_view sinter::abi::triangleName(MatmulStep::Triangle triangle) {
  return nameOf(MatmulStep::Triangle_descriptor(), triangle);
}
std::string_view sinter::abi::stepKindName(StepKind kind) {
  const google::protobuf::FieldDescriptor *field =
      Step::descriptor()->FindFieldByNumber(static_cast<int>(kind));
  return field ? std::string_view(field->name()) : "?";
}

std::optional<SlabKind> sinter::abi::parseSlab(std::string_view name) {
  return parseOf<SlabKind>(Slab::Kind_descriptor(), name);
}
std::optional<DType> sinter::abi::parseDType(std::string_view name) {
  return parseOf<DType>(ElementType::Kind_descriptor(), name);
}
std::optional<CategoryKind> sinter::abi::parseCategory(std::string_view name) {
  return parseOf<CategoryKind>(Category::Kind_descriptor(), name);
}
std::optional<ArgumentKind>
sinter::abi::parseArgumentKind(std::string_view name) {
  return parseOf<ArgumentKind>(Argument::Kind_descriptor(), name);
}
std::optional<ResultKind> sinter::abi::parseResultKind(std::string_view name) {
  return parseOf<ResultKind>(Result::Kind_descriptor(), name);
}

std::optional<MatmulStep::Activation>
sinter::abi::parseActivation(std::string_view name) {
  return parseOf<MatmulStep::Activation>(MatmulStep::Activation_descriptor(),
                                         name);
}
std::optional<MatmulStep::Triangle>
sinter::abi::parseTriangle(std::string_view name) {
  return parseOf<MatmulStep::Triangle>(MatmulStep::Triangle_descriptor(), name);
}

const ProgramSymbols *sinter::abi::programSymbols(std::string_view role) {
  for (const ProgramSymbols *p : kPrograms)
    if (p->role == role)
      return p;
  return nullptr;
}

std::string sinter::abi::traceWriteName(int64_t step, int64_t write) {
  return "@step/" + std::to_string(step) + "/" + std::to_string(write);
}

bool sinter::abi::isTraceWriteName(std::string_view name) {
  return name.substr(0, 6) == "@step/";
}

bool sinter::abi::isTraceArgumentName(std::string_view name) {
  return name.substr(0, 1) != "@";
}
