//===- StepProgramTest.cpp - parsing and validating step programs ---------===//
//
// One valid program that uses every feature of docs/StepProgram.md, then
// one mutation per validation rule, each expected to fail with a message
// that names the place and the reason. Finally every prefix of the valid
// text, which must fail cleanly (never crash).
//
//===----------------------------------------------------------------------===//

#include "runtime/Exec/StepProgram.h"

#include "runtime/Formats/AbslCompat.h"
#include "runtime/Formats/Json.h"

#include "gtest/gtest.h"

#include <functional>

using namespace sinter::exec;
using sinter::formats::JsonValue;

namespace {

// arena: a [2,3] @0, b [3,4] @64, c [2,4] @128, c_flat [8] @128 (a view),
// a_row1 [3] @12 (an unaligned view inside a).
constexpr const char *kValid = R"({
  "version": 1, "function": "train_step", "seed": 1337,
  "slabs": {"arena": 1024, "params": 256, "opt_state": 64, "io": 256,
            "constants": 64},
  "buffers": [
    {"id": 0, "name": "a", "slab": "arena", "offset": 0, "dtype": "f32",
     "shape": [2, 3], "category": "activations"},
    {"id": 1, "name": "b", "slab": "arena", "offset": 64, "dtype": "f32",
     "shape": [3, 4], "category": "activations"},
    {"id": 2, "name": "c", "slab": "arena", "offset": 128, "dtype": "f32",
     "shape": [2, 4], "category": "activations"},
    {"id": 3, "name": "bias", "slab": "constants", "offset": 0,
     "dtype": "f32", "shape": [4], "category": "constants"},
    {"id": 4, "name": "w", "slab": "params", "offset": 0, "dtype": "f32",
     "shape": [3, 4], "category": "parameters"},
    {"id": 5, "name": "m", "slab": "opt_state", "offset": 0, "dtype": "f32",
     "shape": [4], "category": "optimizer_state"},
    {"id": 6, "name": "idx", "slab": "io", "offset": 0, "dtype": "i64",
     "shape": [2], "category": "inputs"},
    {"id": 7, "name": "step", "slab": "io", "offset": 64, "dtype": "i64",
     "shape": []},
    {"id": 8, "name": "loss", "slab": "io", "offset": 128, "dtype": "f32",
     "shape": [], "category": "outputs"},
    {"id": 9, "name": "c_flat", "slab": "arena", "offset": 128,
     "dtype": "f32", "shape": [8]},
    {"id": 10, "name": "a_row1", "slab": "arena", "offset": 12,
     "dtype": "f32", "shape": [3]},
    {"id": 11, "slab": "params", "offset": 64, "dtype": "bf16",
     "shape": [2, 2]},
    {"id": 12, "name": "lr", "slab": "io", "offset": 192, "dtype": "f64",
     "shape": [], "category": "inputs"}],
  "arguments": [
    {"name": "w", "kind": "param", "buffer": 4,
     "init": {"dist": "normal", "std": 0.02}},
    {"name": "e", "kind": "param", "buffer": 11,
     "init": {"dist": "uniform", "bound": 1}, "aliases": ["head.weight"]},
    {"name": "m", "kind": "opt_state", "buffer": 5},
    {"name": "idx", "kind": "input", "buffer": 6, "bound": 65},
    {"name": "step", "kind": "step", "buffer": 7},
    {"name": "lr", "kind": "hyper", "buffer": 12, "default": 0.003}],
  "results": [
    {"name": "loss", "kind": "metric", "buffer": 8},
    {"name": "w", "kind": "param", "buffer": 4},
    {"name": "m", "kind": "opt_state", "buffer": 5},
    {"name": "c", "kind": "tensor", "buffer": 2}],
  "constants": [{"buffer": 3, "hex": "0000803f000000400000404000008040"}],
  "kernels": [{"name": "k0_fill", "extent": 4},
              {"name": "k1_loss", "extent": 1}],
  "steps": [
    {"op": "kernel", "kernel": 0},
    {"op": "matmul", "lhs": 0, "rhs": 1, "out": 2, "transpose_lhs": false,
     "transpose_rhs": false, "alpha": 0.5, "bias": 3,
     "activation": "gelu_tanh"},
    {"op": "copy", "src": 1, "dst": 4},
    {"op": "kernel", "kernel": 1}]
})";

JsonValue validJson() {
  absl::StatusOr<JsonValue> v = sinter::formats::parseJson(kValid);
  EXPECT_TRUE(v.ok()) << v.status();
  return *v;
}

/// The member `key` of `object`, added (null) if absent.
JsonValue &at(JsonValue &object, const std::string &key) {
  for (auto &[name, value] : object.mutableMembers())
    if (name == key)
      return value;
  object.mutableMembers().push_back({key, JsonValue()});
  return object.mutableMembers().back().second;
}
JsonValue &at(JsonValue &array, size_t index) {
  return array.mutableItems()[index];
}
void erase(JsonValue &object, const std::string &key) {
  auto &members = object.mutableMembers();
  for (size_t i = 0; i < members.size(); ++i)
    if (members[i].first == key) {
      members.erase(members.begin() + i);
      return;
    }
}
JsonValue shape(std::vector<int64_t> dims) {
  std::vector<JsonValue> items;
  for (int64_t d : dims)
    items.push_back(JsonValue::makeInt(d));
  return JsonValue::makeArray(items);
}

TEST(StepProgramTest, ParsesValidProgram) {
  absl::StatusOr<StepProgram> p = parseStepProgram(kValid);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->function, "train_step");
  EXPECT_EQ(p->seed, 1337u);
  EXPECT_EQ(p->slabBytes[static_cast<int>(sinter::abi::SlabId::Io)], 256);
  ASSERT_EQ(p->buffers.size(), 13u);
  EXPECT_EQ(p->buffers[1].bytes, 48);
  EXPECT_EQ(p->buffers[11].bytes, 8); // bf16: 2 bytes per element
  EXPECT_EQ(p->buffers[10].offset, 12);
  ASSERT_EQ(p->arguments.size(), 6u);
  ASSERT_TRUE(p->arguments[0].init.has_value());
  EXPECT_EQ(p->arguments[0].init->dist, Initializer::Dist::Normal);
  EXPECT_DOUBLE_EQ(p->arguments[0].init->value, 0.02);
  EXPECT_EQ(p->arguments[4].kind, ArgumentKind::Step);
  EXPECT_EQ(p->arguments[5].kind, ArgumentKind::Hyper);
  EXPECT_EQ(p->arguments[5].defaultValue, 0.003);
  EXPECT_FALSE(p->arguments[0].defaultValue.has_value());
  EXPECT_EQ(p->arguments[3].bound, 65);
  EXPECT_FALSE(p->arguments[0].bound.has_value());
  // A tied parameter is found by its alias too.
  EXPECT_EQ(p->findArgument("head.weight"), &p->arguments[1]);
  EXPECT_EQ(p->findArgument("e"), &p->arguments[1]);
  EXPECT_EQ(p->results[3].kind, ResultKind::Tensor);
  ASSERT_EQ(p->constants.size(), 1u);
  EXPECT_EQ(p->constants[0].bytes[3], 0x3f);
  ASSERT_EQ(p->steps.size(), 4u);
  const MatmulStep &m = p->steps[1].matmul;
  EXPECT_EQ(p->steps[1].kind, StepKind::Matmul);
  EXPECT_EQ(m.bias, 3);
  EXPECT_EQ(m.activation, Activation::GeluTanh);
  EXPECT_DOUBLE_EQ(m.alpha, 0.5);
  EXPECT_EQ(p->steps[2].kind, StepKind::Copy);
  EXPECT_NE(p->findResult("loss"), nullptr);
  EXPECT_EQ(p->findArgument("nope"), nullptr);
}

TEST(StepProgramTest, MatmulDefaults) {
  JsonValue v = validJson();
  JsonValue &mm = at(at(v, "steps"), 1);
  for (const char *key :
       {"transpose_lhs", "transpose_rhs", "alpha", "bias", "activation"})
    erase(mm, key);
  absl::StatusOr<StepProgram> p =
      parseStepProgram(sinter::formats::printJson(v));
  ASSERT_TRUE(p.ok()) << p.status();
  const MatmulStep &m = p->steps[1].matmul;
  EXPECT_EQ(m.bias, -1);
  EXPECT_FALSE(m.transposeLhs);
  EXPECT_DOUBLE_EQ(m.alpha, 1.0);
  EXPECT_EQ(m.activation, Activation::None);
}

struct BadCase {
  const char *name;
  std::function<void(JsonValue &)> mutate;
  const char *message; // expected substring
};

class StepProgramErrorTest : public testing::TestWithParam<BadCase> {};

TEST_P(StepProgramErrorTest, Rejects) {
  JsonValue v = validJson();
  GetParam().mutate(v);
  absl::StatusOr<StepProgram> p =
      parseStepProgram(sinter::formats::printJson(v));
  ASSERT_FALSE(p.ok()) << "accepted";
  std::string message(p.status().message());
  EXPECT_NE(message.find(GetParam().message), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << "not one line";
  EXPECT_EQ(message.rfind("step program: ", 0), 0u) << message;
}

// Shorthands for the mutations.
#define BUF(i) at(at(v, "buffers"), i)
#define STEP(i) at(at(v, "steps"), i)
#define ARG(i) at(at(v, "arguments"), i)
#define RES(i) at(at(v, "results"), i)
#define CASE(name, body, message)                                              \
  BadCase {                                                                    \
    name, [](JsonValue &v) { body; }, message                                  \
  }

const BadCase kBadCases[] = {
    CASE("version", at(v, "version") = JsonValue::makeInt(2),
         "top level: 'version' is 2; must be in [1, 1]"),
    CASE("missing_slabs", erase(v, "slabs"),
         "top level: missing member 'slabs'"),
    CASE("unknown_top_member", at(v, "extra") = JsonValue::makeInt(1),
         "top level: unknown member 'extra'"),
    CASE("negative_slab", at(at(v, "slabs"), "io") = JsonValue::makeInt(-1),
         "slabs: 'io' is -1"),
    CASE("buffer_id_order", at(BUF(2), "id") = JsonValue::makeInt(5),
         "buffer 2: has id 5; ids must be 0, 1, 2, ... in order"),
    CASE("unknown_dtype", at(BUF(0), "dtype") = JsonValue::makeString("f8"),
         "buffer 0: unknown dtype 'f8'"),
    CASE("unknown_slab", at(BUF(0), "slab") = JsonValue::makeString("heap"),
         "buffer 0: unknown slab 'heap'"),
    CASE("negative_dim", at(BUF(1), "shape") = shape({3, -4}),
         "buffer 1: shape entries must be non-negative integers"),
    CASE("shape_overflow",
         at(BUF(1), "shape") = shape({int64_t(1) << 40, int64_t(1) << 40}),
         "buffer 1: shape"),
    CASE("past_slab_end", at(BUF(2), "offset") = JsonValue::makeInt(1024),
         "buffer 2: offset 1024 + 32 bytes exceeds slab 'arena' of 1024"),
    CASE("unaligned", at(BUF(2), "offset") = JsonValue::makeInt(136),
         "buffer 2 'c': offset 136 is not a multiple of 64"),
    CASE("unaligned_view_too_long", at(BUF(10), "shape") = shape({5}),
         "buffer 10 'a_row1': offset 12 is not a multiple of 64"),
    CASE("bad_category", at(BUF(0), "category") = JsonValue::makeString("misc"),
         "buffer 0: unknown category 'misc'"),
    CASE("argument_buffer_range", at(ARG(0), "buffer") = JsonValue::makeInt(99),
         "argument 0: 'buffer' is buffer 99, but there are 13 buffers"),
    CASE("argument_kind", at(ARG(2), "kind") = JsonValue::makeString("state"),
         "argument 2: unknown kind 'state'"),
    CASE("duplicate_argument", at(ARG(2), "name") = JsonValue::makeString("w"),
         "argument 2: name 'w' repeats an earlier argument"),
    CASE("step_not_i64", at(ARG(4), "buffer") = JsonValue::makeInt(8),
         "argument 4: the step argument must be an i64 scalar, not f32 []"),
    CASE("init_on_input", at(ARG(3), "init") = at(ARG(0), "init"),
         "argument 3: only params have an 'init'"),
    CASE("hyper_without_default", erase(ARG(5), "default"),
         "argument 5: a hyper argument needs a 'default'"),
    CASE("default_on_input", at(ARG(3), "default") = JsonValue::makeNumber(1),
         "argument 3: only hyper arguments have a 'default'"),
    CASE("hyper_not_float_scalar", at(ARG(5), "buffer") = JsonValue::makeInt(6),
         "argument 5: a hyper argument must be an f32 or f64 scalar, not i64 "
         "[2]"),
    CASE("hyper_default_not_number",
         at(ARG(5), "default") = JsonValue::makeString("1e-3"),
         "argument 5: 'default' must be a finite f64"),
    CASE("aliases_on_input",
         at(ARG(3), "aliases") = JsonValue::makeArray({JsonValue::makeString("x")}),
         "argument 3: only params have 'aliases'"),
    CASE("aliases_not_array", at(ARG(1), "aliases") = JsonValue::makeString("x"),
         "argument 1: 'aliases' must be an array of names"),
    CASE("alias_empty",
         at(ARG(1), "aliases") = JsonValue::makeArray({JsonValue::makeString("")}),
         "argument 1: 'aliases' must be an array of non-empty names"),
    CASE("alias_repeats_argument",
         at(ARG(1), "aliases") = JsonValue::makeArray({JsonValue::makeString("w")}),
         "argument 1: alias 'w' repeats an argument name"),
    CASE("later_argument_repeats_alias",
         at(ARG(2), "name") = JsonValue::makeString("head.weight"),
         "argument 2: name 'head.weight' repeats an earlier argument"),
    CASE("bound_on_float_input", at(ARG(5), "bound") = JsonValue::makeInt(3),
         "argument 5: only integer inputs have a 'bound'"),
    CASE("bound_zero", at(ARG(3), "bound") = JsonValue::makeInt(0),
         "argument 3: 'bound' must be a positive integer"),
    CASE("init_dist",
         at(at(ARG(0), "init"), "dist") = JsonValue::makeString("xavier"),
         "argument 0 init: unknown dist 'xavier'"),
    CASE("init_missing_std", erase(at(ARG(0), "init"), "std"),
         "argument 0 init: missing member 'std'"),
    CASE("metric_not_scalar", at(RES(0), "buffer") = JsonValue::makeInt(2),
         "result 0: metric 'loss' must be a scalar, not [2,4]"),
    CASE("param_result_without_argument",
         at(RES(1), "name") = JsonValue::makeString("v"),
         "result 1: param result 'v' has no param argument of the same name"),
    CASE("param_result_shape", at(RES(1), "buffer") = JsonValue::makeInt(2),
         "result 1: result 'w' is f32 [2,4] but its argument is f32 [3,4]"),
    CASE("constant_hex_length",
         at(at(at(v, "constants"), 0), "hex") = JsonValue::makeString("00"),
         "constant 0: hex has 2 digits; buffer 3 'bias' needs 32"),
    CASE("constant_uppercase",
         at(at(at(v, "constants"), 0), "hex") =
             JsonValue::makeString("0000803F000000400000404000008040"),
         "constant 0: hex digit 7 is not lowercase hexadecimal"),
    CASE("constant_wrong_slab",
         at(at(at(v, "constants"), 0), "buffer") = JsonValue::makeInt(0),
         "constant 0: buffer 0 'a' is in slab 'arena', not 'constants'"),
    CASE("kernel_extent",
         at(at(at(v, "kernels"), 0), "extent") = JsonValue::makeInt(0),
         "kernel 0: 'extent' is 0"),
    CASE("step_kernel_range", at(STEP(0), "kernel") = JsonValue::makeInt(2),
         "step 0 (kernel): 'kernel' must be a kernel index in [0, 1]"),
    CASE("unknown_op", at(STEP(0), "op") = JsonValue::makeString("conv"),
         "step 0: unknown op 'conv'"),
    CASE("step_typo", at(STEP(1), "transpose_b") = JsonValue::makeBool(true),
         "step 1 (matmul): unknown member 'transpose_b'"),
    CASE("matmul_k", at(STEP(1), "transpose_rhs") = JsonValue::makeBool(true),
         "step 1 (matmul): rhs [3,4] gives K=4 but lhs [2,3] gives K=3"),
    CASE("matmul_bias_shape", at(STEP(1), "bias") = JsonValue::makeInt(10),
         "step 1 (matmul): bias has shape [3]; expected [4]"),
    CASE("matmul_out_shape", at(STEP(1), "out") = JsonValue::makeInt(9),
         "step 1 (matmul): out has rank 1; matmul needs rank >= 2"),
    CASE("matmul_dtype", at(STEP(1), "lhs") = JsonValue::makeInt(6),
         "step 1 (matmul): lhs (buffer 6 'idx') is i64; matmul needs f32"),
    CASE("matmul_overlap", at(STEP(1), "lhs") = JsonValue::makeInt(9),
         "step 1 (matmul): out (buffer 2 'c') overlaps lhs (buffer 9"),
    CASE("matmul_activation",
         at(STEP(1), "activation") = JsonValue::makeString("swish"),
         "step 1 (matmul): unknown activation 'swish'"),
    CASE("matmul_broadcast",
         (at(BUF(0), "shape") = shape({2, 2, 3}),
          at(BUF(1), "shape") = shape({3, 3, 4}),
          at(at(v, "slabs"), "arena") = JsonValue::makeInt(4096),
          at(BUF(1), "offset") = JsonValue::makeInt(1024),
          at(STEP(2), "src") = JsonValue::makeInt(2),
          at(STEP(2), "dst") = JsonValue::makeInt(9)),
         "step 1 (matmul): batch axis 0: lhs [2,2,3] and rhs [3,3,4] do not "
         "broadcast (2 vs 3)"),
    CASE("copy_bytes", at(STEP(2), "dst") = JsonValue::makeInt(5),
         "step 2 (copy): src (buffer 1 'b') has 48 bytes but dst (buffer 5 "
         "'m') has 16"),
    CASE("copy_missing_dst", erase(STEP(2), "dst"),
         "step 2 (copy): missing member 'dst'"),
    CASE("steps_not_array", at(v, "steps") = JsonValue::makeInt(3),
         "top level: 'steps' must be an array"),
    CASE("buffer_not_object", BUF(3) = JsonValue::makeString("x"),
         "buffer 3: expected a JSON object"),
};

INSTANTIATE_TEST_SUITE_P(Malformed, StepProgramErrorTest,
                         testing::ValuesIn(kBadCases),
                         [](const testing::TestParamInfo<BadCase> &info) {
                           return std::string(info.param.name);
                         });

TEST(StepProgramTest, RejectsNonJson) {
  absl::StatusOr<StepProgram> p = parseStepProgram("{\"version\": 1,");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(std::string(p.status().message()).find("step program: JSON:"),
            std::string::npos)
      << p.status();
}

// Every prefix of a valid program is invalid and must be reported, not
// crash (the parser runs before anything else in the training binary).
TEST(StepProgramTest, EveryPrefixFailsCleanly) {
  std::string text = kValid;
  for (size_t n = 0; n + 1 < text.size(); ++n)
    EXPECT_FALSE(parseStepProgram(std::string_view(text.data(), n)).ok()) << n;
}

} // namespace
