//===- StepProgramTest.cpp - reading and validating step programs ---------===//
//
// One valid program that uses every feature of docs/StepProgram.md, then
// one mutation per validation rule, each expected to fail with a message
// that names the place and the reason. The schema itself
// (abi/StepProgram.proto) is protobuf's to enforce; what is checked
// here is what a schema cannot say. Every prefix of the serialized program,
// and any bytes at all, must be handled without crashing.
//
//===----------------------------------------------------------------------===//

#include "runtime/Exec/StepProgram.h"

#include "runtime/Formats/AbslCompat.h"

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

#include <functional>

using namespace sinter::exec;
// (Not `abi`: <cxxabi.h> takes that name at global scope.)
namespace sabi = ::sinter::abi;

namespace {

// arena: a [2,3] @0, b [3,4] @64, c [2,4] @128, c_flat [8] @128 (a view of
// c), a_row1 [3] @12 (an unaligned view inside a).
constexpr const char *kValid = R"pb(
  version: 2 function: "train_step" seed: 1337
  slabs { slab: arena bytes: 1024 }
  slabs { slab: params bytes: 256 }
  slabs { slab: opt_state bytes: 64 }
  slabs { slab: io bytes: 256 }
  slabs { slab: constants bytes: 64 }
  buffers { id: 0 name: "a" slab: arena offset: 0 dtype: f32 shape: [2, 3]
            category: activations }
  buffers { id: 1 name: "b" slab: arena offset: 64 dtype: f32 shape: [3, 4]
            category: activations }
  buffers { id: 2 name: "c" slab: arena offset: 128 dtype: f32 shape: [2, 4]
            category: activations }
  buffers { id: 3 name: "bias" slab: constants offset: 0 dtype: f32
            shape: [4] category: constants }
  buffers { id: 4 name: "w" slab: params offset: 0 dtype: f32 shape: [3, 4]
            category: parameters }
  buffers { id: 5 name: "m" slab: opt_state offset: 0 dtype: f32 shape: [4]
            category: optimizer_state }
  buffers { id: 6 name: "idx" slab: io offset: 0 dtype: i64 shape: [2]
            category: inputs }
  buffers { id: 7 name: "step" slab: io offset: 64 dtype: i64 }
  buffers { id: 8 name: "loss" slab: io offset: 128 dtype: f32
            category: outputs }
  buffers { id: 9 name: "c_flat" slab: arena offset: 128 dtype: f32
            shape: [8] view_of: 2 }
  buffers { id: 10 name: "a_row1" slab: arena offset: 12 dtype: f32
            shape: [3] view_of: 0 }
  buffers { id: 11 slab: params offset: 64 dtype: bf16 shape: [2, 2] }
  buffers { id: 12 name: "lr" slab: io offset: 192 dtype: f64
            category: inputs }
  arguments { name: "w" kind: param buffer: 4
              init { dist: normal stddev: 0.02 } }
  arguments { name: "e" kind: param buffer: 11
              init { dist: uniform bound: 1 } aliases: "head.weight" }
  arguments { name: "m" kind: opt_state buffer: 5 }
  arguments { name: "idx" kind: input buffer: 6 bound: 65 }
  arguments { name: "step" kind: step buffer: 7 }
  arguments { name: "lr" kind: hyper buffer: 12 default_value: 0.003 }
  results { name: "loss" kind: metric buffer: 8 }
  results { name: "w" kind: param buffer: 4 }
  results { name: "m" kind: opt_state buffer: 5 }
  results { name: "c" kind: tensor buffer: 2 }
  constants { buffer: 3 data: "\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40" }
  kernels { name: "k0_fill" extent: 4 }
  kernels { name: "k1_loss" extent: 1 }
  steps { kernel { kernel: 0 } }
  steps { matmul { lhs: 0 rhs: 1 out: 2 alpha: 0.5 bias: 3
                   activation: gelu_tanh } }
  steps { copy { src: 1 dst: 4 } }
  steps { kernel { kernel: 1 } }
)pb";

/// Gives step 1's matmul a 64-byte workspace at `offset` in the arena.
void addWorkspace(sabi::StepProgram &p, int64_t offset) {
  sabi::Buffer *b = p.add_buffers();
  b->set_id(p.buffers_size() - 1);
  b->set_name("scratch");
  b->set_slab(sabi::Slab::arena);
  b->set_offset(offset);
  b->set_dtype(sabi::ElementType::i8);
  b->add_shape(64);
  p.mutable_steps(1)->mutable_matmul()->set_workspace(b->id());
}

/// Adds an f32 arena buffer of `shape` at `offset`; returns its id.
int64_t addArenaBuffer(sabi::StepProgram &p, const char *name, int64_t offset,
                       std::initializer_list<int64_t> shape) {
  sabi::Buffer *b = p.add_buffers();
  b->set_id(p.buffers_size() - 1);
  b->set_name(name);
  b->set_slab(sabi::Slab::arena);
  b->set_offset(offset);
  b->set_dtype(sabi::ElementType::f32);
  for (int64_t d : shape)
    b->add_shape(d);
  return b->id();
}

/// Makes step 1's matmul the tanh GELU's backward (DGELU): no bias, aux
/// read from an [2,4] buffer at 256, and with `biasGrad` a [4] bias
/// gradient at 320.
void makeDgelu(sabi::StepProgram &p, bool biasGrad) {
  sabi::MatmulStep *m = p.mutable_steps(1)->mutable_matmul();
  m->clear_bias();
  m->set_activation(sabi::MatmulStep::dgelu_tanh);
  m->set_aux(addArenaBuffer(p, "pre_gelu", 256, {2, 4}));
  if (biasGrad)
    m->set_bias_grad(addArenaBuffer(p, "fc.bias.grad", 320, {4}));
}

sabi::StepProgram valid() {
  sabi::StepProgram p;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(kValid, &p));
  return p;
}

TEST(StepProgramTest, ReadsValidProgram) {
  std::string bytes = valid().SerializeAsString();
  absl::StatusOr<StepProgram> p = parseStepProgram(bytes.data(), bytes.size());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->function, "train_step");
  EXPECT_EQ(p->seed, 1337u);
  EXPECT_EQ(p->slabBytes[static_cast<int>(sabi::Slab::io)], 256);
  ASSERT_EQ(p->buffers.size(), 13u);
  EXPECT_EQ(p->buffers[1].bytes, 48);
  EXPECT_EQ(p->buffers[11].bytes, 8); // bf16: 2 bytes per element
  EXPECT_EQ(p->buffers[11].type, sabi::ElementType::bf16);
  EXPECT_EQ(p->buffers[10].offset, 12);
  EXPECT_EQ(p->buffers[4].category, "parameters");
  ASSERT_EQ(p->arguments.size(), 6u);
  ASSERT_TRUE(p->arguments[0].init.has_value());
  EXPECT_EQ(p->arguments[0].init->dist, sabi::Initializer::normal);
  EXPECT_DOUBLE_EQ(p->arguments[0].init->value, 0.02);
  EXPECT_EQ(p->arguments[1].init->dist, sabi::Initializer::uniform);
  EXPECT_EQ(p->arguments[4].kind, sabi::Argument::step);
  EXPECT_EQ(p->arguments[5].kind, sabi::Argument::hyper);
  EXPECT_EQ(p->arguments[5].defaultValue, 0.003);
  EXPECT_FALSE(p->arguments[0].defaultValue.has_value());
  EXPECT_EQ(p->arguments[3].bound, 65);
  EXPECT_FALSE(p->arguments[0].bound.has_value());
  // A tied parameter is found by its alias too.
  EXPECT_EQ(p->findArgument("head.weight"), &p->arguments[1]);
  EXPECT_EQ(p->findArgument("e"), &p->arguments[1]);
  EXPECT_EQ(p->results[3].kind, sabi::Result::tensor);
  ASSERT_EQ(p->constants.size(), 1u);
  EXPECT_EQ(p->constants[0].bytes[3], 0x3f);
  ASSERT_EQ(p->steps.size(), 4u);
  const MatmulStep &m = p->steps[1].matmul;
  EXPECT_EQ(p->steps[1].kind, sabi::Step::kMatmul);
  EXPECT_EQ(m.bias, 3);
  EXPECT_EQ(m.activation, sabi::MatmulStep::gelu_tanh);
  EXPECT_DOUBLE_EQ(m.alpha, 0.5);
  EXPECT_EQ(p->steps[2].kind, sabi::Step::kCopy);
  EXPECT_EQ(sabi::stepKindName(p->steps[2].kind), "copy");
  EXPECT_NE(p->findResult("loss"), nullptr);
  EXPECT_EQ(p->findArgument("nope"), nullptr);
}

TEST(StepProgramTest, ReadsTheDumpsJson) {
  // What sinterc --dump-dir writes (codegen::stepProgramJson's options):
  // int64 values as strings, every field present.
  std::string json = R"({"version": "2", "function": "f", "seed": "-1",
    "slabs": [{"slab": "arena", "bytes": "64"}],
    "buffers": [{"id": "0", "name": "x", "slab": "arena", "offset": "0",
                 "dtype": "f32", "shape": ["4"], "category": "inputs"}],
    "arguments": [{"name": "x", "kind": "input", "buffer": "0",
                   "aliases": []}],
    "results": [], "constants": [], "kernels": [], "steps": []})";
  absl::StatusOr<StepProgram> p = parseStepProgramJson(json);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->buffers[0].numElements, 4);
  EXPECT_EQ(p->seed, ~uint64_t{0}); // the int64's bit pattern
}

TEST(StepProgramTest, MatmulDefaults) {
  sabi::StepProgram v = valid();
  sabi::MatmulStep *mm = v.mutable_steps(1)->mutable_matmul();
  mm->clear_alpha();
  mm->clear_bias();
  mm->clear_activation();
  absl::StatusOr<StepProgram> p = validateStepProgram(v);
  ASSERT_TRUE(p.ok()) << p.status();
  const MatmulStep &m = p->steps[1].matmul;
  EXPECT_EQ(m.bias, -1);
  EXPECT_FALSE(m.transposeLhs);
  EXPECT_DOUBLE_EQ(m.alpha, 1.0);
  EXPECT_EQ(m.activation, sabi::MatmulStep::none);
}

struct BadCase {
  const char *name;
  std::function<void(sabi::StepProgram &)> mutate;
  const char *message; // expected substring
};

class StepProgramErrorTest : public testing::TestWithParam<BadCase> {};

TEST_P(StepProgramErrorTest, Rejects) {
  sabi::StepProgram v = valid();
  GetParam().mutate(v);
  std::string bytes = v.SerializeAsString();
  absl::StatusOr<StepProgram> p = parseStepProgram(bytes.data(), bytes.size());
  ASSERT_FALSE(p.ok()) << "accepted";
  std::string message(p.status().message());
  EXPECT_NE(message.find(GetParam().message), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << "not one line";
  EXPECT_EQ(message.rfind("step program: ", 0), 0u) << message;
}

// Shorthands for the mutations.
#define BUF(i) (*v.mutable_buffers(i))
#define STEP(i) (*v.mutable_steps(i))
#define ARG(i) (*v.mutable_arguments(i))
#define RES(i) (*v.mutable_results(i))
#define CASE(name, body, message)                                              \
  BadCase {                                                                    \
    name, [](sabi::StepProgram &v) { body; }, message                          \
  }

/// A collective on buffer `buffer` and the steps `kinds` ('s' start, 'd'
/// done, 'c' a copy of step 2's copy) appended to the program.
void addCollective(sabi::StepProgram &v, int64_t buffer, const char *kinds) {
  sabi::Collective *c = v.add_collectives();
  c->set_op(sabi::Collective::all_reduce);
  c->set_reduction(sabi::Collective::mean);
  c->set_buffer(buffer);
  c->set_name("bucket 0");
  for (const char *k = kinds; *k; ++k) {
    if (*k == 's')
      v.add_steps()->mutable_start()->set_collective(0);
    else if (*k == 'd')
      v.add_steps()->mutable_done()->set_collective(0);
    else
      *v.add_steps() = v.steps(2);
  }
}

void setShape(sabi::Buffer &b, std::vector<int64_t> dims) {
  b.clear_shape();
  for (int64_t d : dims)
    b.add_shape(d);
}

TEST(StepProgramTest, ReadsCollectives) {
  sabi::StepProgram v = valid();
  addCollective(v, v.steps(2).copy().src(), "sd");
  v.mutable_collectives(0)->add_tensors("h.0.mlp.c_fc.weight");
  absl::StatusOr<StepProgram> p = validateStepProgram(v);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->collectives.size(), 1u);
  EXPECT_EQ(p->collectives[0].reduction, sabi::Collective::mean);
  EXPECT_EQ(p->collectives[0].tensors.front(), "h.0.mlp.c_fc.weight");
  EXPECT_EQ(p->steps[p->steps.size() - 2].kind, sabi::Step::kStart);
  EXPECT_EQ(p->steps.back().kind, sabi::Step::kDone);
  EXPECT_EQ(p->steps.back().collective, 0);
}

const BadCase kBadCases[] = {
    CASE("version", v.set_version(1),
         "top level: version 1; this runtime reads version 2"),
    CASE("slab_twice", *v.add_slabs() = v.slabs(0),
         "slabs: slab 'arena' is sized twice"),
    CASE("unknown_slab_kind", v.mutable_slabs(0)->set_slab(sabi::Slab::Kind(9)),
         "slabs: unknown slab 9"),
    CASE("negative_slab", v.mutable_slabs(3)->set_bytes(-1),
         "slabs: slab 'io' has -1 bytes"),
    CASE("buffer_id_order", BUF(2).set_id(5),
         "buffer 2: has id 5; ids must be 0, 1, 2, ... in order"),
    CASE("unknown_dtype", BUF(0).set_dtype(sabi::ElementType::Kind(42)),
         "buffer 0: unknown dtype 42"),
    CASE("unknown_slab", BUF(0).set_slab(sabi::Slab::Kind(7)),
         "buffer 0: unknown slab 7"),
    CASE("negative_dim", setShape(BUF(1), {3, -4}),
         "buffer 1: shape entries must be non-negative"),
    CASE("shape_overflow",
         setShape(BUF(1), {int64_t(1) << 40, int64_t(1) << 40}),
         "buffer 1: shape"),
    CASE("negative_offset", BUF(2).set_offset(-64),
         "buffer 2: offset -64 is negative"),
    CASE("past_slab_end", BUF(2).set_offset(1024),
         "buffer 2: offset 1024 + 32 bytes exceeds slab 'arena' of 1024"),
    CASE("unaligned", BUF(2).set_offset(136),
         "buffer 2: offset 136 is not a multiple of 64 and the buffer is not "
         "a view"),
    CASE("view_too_long", setShape(BUF(10), {5}),
         "buffer 10: is a view of buffer 0 'a' but lies outside its bytes"),
    CASE("view_of_later", BUF(9).set_view_of(9),
         "buffer 9: is a view of buffer 9, not of an earlier buffer"),
    CASE("bad_category", BUF(0).set_category(sabi::Category::Kind(99)),
         "buffer 0: unknown category 99"),
    CASE("argument_buffer_range", ARG(0).set_buffer(99),
         "argument 0: 'buffer' is buffer 99, but there are 13 buffers"),
    CASE("argument_kind", ARG(2).set_kind(sabi::Argument::Kind(11)),
         "argument 2: unknown kind 11"),
    CASE("duplicate_argument", ARG(2).set_name("w"),
         "argument 2: name 'w' repeats an earlier argument"),
    CASE("empty_argument_name", ARG(2).set_name(""), "argument 2: empty name"),
    CASE("step_not_i64", ARG(4).set_buffer(8),
         "argument 4: the step argument must be an i64 scalar, not f32 []"),
    CASE("second_step",
         (ARG(3).set_kind(sabi::Argument::step), ARG(3).clear_bound(),
          ARG(3).set_buffer(7)),
         "arguments: more than one 'step' argument"),
    CASE("init_on_input", *ARG(3).mutable_init() = ARG(0).init(),
         "argument 3: only params have an 'init'"),
    CASE("hyper_without_default", ARG(5).clear_default_value(),
         "argument 5: a hyper argument needs a 'default_value'"),
    CASE("default_on_input", ARG(3).set_default_value(1),
         "argument 3: only hyper arguments have a 'default_value'"),
    CASE("hyper_not_float_scalar", ARG(5).set_buffer(6),
         "argument 5: a hyper argument must be an f32 or f64 scalar, not i64 "
         "[2]"),
    CASE("hyper_default_not_finite", ARG(5).set_default_value(1.0 / 0.0),
         "argument 5: 'default_value' must be a finite f64"),
    CASE("aliases_on_input", ARG(3).add_aliases("x"),
         "argument 3: only params have 'aliases'"),
    CASE("alias_empty", ARG(1).set_aliases(0, ""),
         "argument 1: 'aliases' must be non-empty names"),
    CASE("alias_repeats_argument", ARG(1).set_aliases(0, "w"),
         "argument 1: alias 'w' repeats an argument name"),
    CASE("later_argument_repeats_alias", ARG(2).set_name("head.weight"),
         "argument 2: name 'head.weight' repeats an earlier argument"),
    CASE("bound_on_float_input", ARG(5).set_bound(3),
         "argument 5: only integer inputs have a 'bound'"),
    CASE("bound_zero", ARG(3).set_bound(0),
         "argument 3: 'bound' must be a positive integer"),
    CASE("init_dist",
         ARG(0).mutable_init()->set_dist(sabi::Initializer::Dist(5)),
         "argument 0 init: unknown dist 5"),
    CASE("init_missing_stddev", ARG(0).mutable_init()->clear_stddev(),
         "argument 0 init: a normal initializer needs its stddev"),
    CASE("init_on_integer_param", (ARG(0).set_buffer(6), RES(1).set_buffer(6)),
         "argument 0: an initialized parameter must be a float tensor, not "
         "i64"),
    CASE("metric_not_scalar", RES(0).set_buffer(2),
         "result 0: metric 'loss' must be a scalar, not [2,4]"),
    CASE("labels_on_tensor", (RES(3).set_labels("idx"), RES(3).set_ignore(-1)),
         "result 3: tensor 'c' counts labels 'idx': only a metric may, with "
         "an ignore, of an i64 or i32 input argument"),
    CASE("labels_of_a_param", (RES(0).set_labels("w"), RES(0).set_ignore(-1)),
         "result 0: metric 'loss' counts labels 'w': only a metric may"),
    CASE("labels_without_ignore", RES(0).set_labels("idx"),
         "result 0: metric 'loss' counts labels 'idx': only a metric may"),
    CASE("ignore_without_labels", RES(0).set_ignore(-1),
         "result 0: metric 'loss' has an ignore (-1) but no labels"),
    CASE("param_result_without_argument", RES(1).set_name("v"),
         "result 1: param result 'v' has no param argument of the same name"),
    CASE("accumulator_in_arena",
         (ARG(2).set_kind(sabi::Argument::accumulator), ARG(2).set_buffer(0)),
         "argument 2: an accumulator must be an f32 or f64 buffer of the "
         "opt_state slab, not f32 in 'arena'"),
    CASE("accumulator_not_float",
         (ARG(2).set_kind(sabi::Argument::accumulator),
          BUF(5).set_dtype(sabi::ElementType::i32)),
         "argument 2: an accumulator must be an f32 or f64 buffer of the "
         "opt_state slab, not i32 in 'opt_state'"),
    CASE("accumulator_result_without_argument",
         RES(2).set_kind(sabi::Result::accumulator),
         "result 2: accumulator result 'm' has no accumulator argument of the "
         "same name"),
    CASE("param_result_shape", RES(1).set_buffer(2),
         "result 1: result 'w' is f32 [2,4] but its argument is f32 [3,4]"),
    CASE("duplicate_result", RES(2).set_name("loss"),
         "result 2: name 'loss' repeats an earlier result"),
    CASE("constant_length", v.mutable_constants(0)->set_data("\0\0", 2),
         "constant 0: has 2 bytes; buffer 3 'bias' needs 16"),
    CASE("constant_wrong_slab", v.mutable_constants(0)->set_buffer(0),
         "constant 0: buffer 0 'a' is in slab 'arena', not 'constants'"),
    CASE("constant_twice", *v.add_constants() = v.constants(0),
         "constant 1: buffer 3 'bias' already has a constant"),
    CASE("kernel_extent", v.mutable_kernels(0)->set_extent(0),
         "kernel 0: extent 0 is below 1"),
    CASE("kernel_name", v.mutable_kernels(0)->set_name(""),
         "kernel 0: empty name"),
    CASE("step_kernel_range", STEP(0).mutable_kernel()->set_kernel(2),
         "step 0 (kernel): 'kernel' must be a kernel index in [0, 1]"),
    CASE("member_buffer_range",
         STEP(0).mutable_kernel()->add_members()->add_inputs(99),
         "step 0 (kernel): 'members.inputs'"),
    CASE("member_origins",
         STEP(0).mutable_kernel()->add_members()->set_origins(5),
         "step 0 (kernel): its members' origins add up to 5, but the step has "
         "0"),
    CASE("member_negative_origins",
         STEP(0).mutable_kernel()->add_members()->set_origins(-1),
         "step 0 (kernel): a member's 'origins' is negative"),
    CASE("empty_step", STEP(0).Clear(),
         "step 0: has no op this runtime knows (kernel, matmul, copy, start, "
         "done)"),
    CASE("collective_started_twice",
         addCollective(v, v.steps(2).copy().src(), "ssd"),
         "starts bucket 0, which already started"),
    CASE("collective_never_done",
         addCollective(v, v.steps(2).copy().src(), "s"),
         "bucket 0 is still in flight at the end"),
    CASE("collective_never_started",
         addCollective(v, v.steps(2).copy().src(), ""),
         "bucket 0 never starts"),
    CASE("collective_done_first",
         addCollective(v, v.steps(2).copy().src(), "ds"),
         "waits for bucket 0, which is not in flight"),
    CASE("collective_touched", addCollective(v, v.steps(2).copy().src(), "scd"),
         "while bucket 0 is in flight"),
    CASE("collective_constant_buffer", addCollective(v, 3, "sd"),
         "collective 0: buffer 3 'bias' must be an f32 or f64 buffer of the "
         "arena"),
    CASE("collective_range", addCollective(v, 0, "sd");
         v.mutable_steps(v.steps_size() - 1)->mutable_done()->set_collective(4),
         "'collective' must be a collective index in [0, 0]"),
    CASE("matmul_k", STEP(1).mutable_matmul()->set_transpose_rhs(true),
         "step 1 (matmul): rhs [3,4] gives K=4 but lhs [2,3] gives K=3"),
    CASE("matmul_bias_shape", STEP(1).mutable_matmul()->set_bias(10),
         "step 1 (matmul): bias has shape [3]; expected [4]"),
    CASE("matmul_out_shape", STEP(1).mutable_matmul()->set_out(9),
         "step 1 (matmul): out has rank 1; matmul needs rank >= 2"),
    CASE("matmul_dtype", STEP(1).mutable_matmul()->set_lhs(6),
         "step 1 (matmul): lhs (buffer 6 'idx') is i64; matmul needs f32"),
    CASE("matmul_overlap",
         (setShape(BUF(9), {2, 4}), STEP(1).mutable_matmul()->set_lhs(9),
          STEP(1).mutable_matmul()->set_rhs(4)),
         "step 1 (matmul): out (buffer 2 'c') overlaps lhs (buffer 9"),
    CASE("matmul_workspace_type", STEP(1).mutable_matmul()->set_workspace(0),
         "step 1 (matmul): workspace (buffer 0 'a') must be a 1-D i8 buffer "
         "in the arena"),
    CASE("matmul_workspace_overlap", addWorkspace(v, 128),
         "step 1 (matmul): workspace (buffer 13 'scratch') overlaps out "
         "(buffer 2 'c'"),
    CASE("matmul_aux_activation",
         STEP(1).mutable_matmul()->set_activation(sabi::MatmulStep::relu);
         STEP(1).mutable_matmul()->set_aux(
             addArenaBuffer(v, "pre", 256, {2, 4})),
         "step 1 (matmul): aux goes with gelu_tanh or dgelu_tanh, not relu"),
    CASE("matmul_aux_shape",
         STEP(1).mutable_matmul()->set_aux(
             addArenaBuffer(v, "pre", 256, {4, 2})),
         "step 1 (matmul): aux (buffer 13 'pre') has shape [4,2]; expected "
         "out's [2,4]"),
    CASE(
        "matmul_aux_overlaps_rhs",
        STEP(1).mutable_matmul()->set_aux(addArenaBuffer(v, "pre", 64, {2, 4})),
        "step 1 (matmul): aux (buffer 13 'pre') overlaps rhs (buffer 1 'b'"),
    CASE("matmul_dgelu_bias", makeDgelu(v, false);
         STEP(1).mutable_matmul()->set_bias(3),
         "step 1 (matmul): dgelu_tanh needs aux (the activation's input) and "
         "no bias"),
    CASE("matmul_dgelu_without_aux", makeDgelu(v, false);
         STEP(1).mutable_matmul()->clear_aux(),
         "step 1 (matmul): dgelu_tanh needs aux"),
    CASE("matmul_bias_grad_alone",
         STEP(1).mutable_matmul()->set_bias_grad(
             addArenaBuffer(v, "g", 320, {4})),
         "step 1 (matmul): bias_grad goes with dgelu_tanh only"),
    CASE("matmul_bias_grad_shape", makeDgelu(v, false);
         STEP(1).mutable_matmul()->set_bias_grad(
             addArenaBuffer(v, "g", 320, {2})),
         "step 1 (matmul): bias_grad (buffer 14 'g') has shape [2]; expected "
         "[4]"),
    CASE("matmul_activation",
         STEP(1).mutable_matmul()->set_activation(
             sabi::MatmulStep::Activation(17)),
         "step 1 (matmul): unknown activation 17"),
    CASE("matmul_alpha", STEP(1).mutable_matmul()->set_alpha(1e300),
         "step 1 (matmul): alpha is not a finite f32"),
    CASE("matmul_missing_buffer", STEP(1).mutable_matmul()->set_rhs(13),
         "step 1 (matmul): 'rhs' is buffer 13, but there are 13 buffers"),
    CASE("copy_bytes", STEP(2).mutable_copy()->set_dst(5),
         "step 2 (copy): src (buffer 1 'b') has 48 bytes but dst (buffer 5 "
         "'m') has 16"),
};

INSTANTIATE_TEST_SUITE_P(Malformed, StepProgramErrorTest,
                         testing::ValuesIn(kBadCases),
                         [](const testing::TestParamInfo<BadCase> &info) {
                           return std::string(info.param.name);
                         });

// A matmul's workspace: i8 arena bytes none of its tensors share.
// A metric that is a fraction of an input's labels (accuracy) names them.
TEST(StepProgramTest, ReadsAMetricsLabels) {
  sabi::StepProgram p = valid();
  p.mutable_results(0)->set_labels("idx");
  p.mutable_results(0)->set_ignore(-100);
  absl::StatusOr<StepProgram> r = validateStepProgram(p);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->results[0].labels, "idx");
  EXPECT_EQ(r->results[0].ignore, -100);
  EXPECT_EQ(validateStepProgram(valid())->results[0].labels, "");
}

TEST(StepProgramTest, MatmulWorkspace) {
  sabi::StepProgram p = valid();
  addWorkspace(p, 256);
  absl::StatusOr<StepProgram> r = validateStepProgram(p);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->steps[1].matmul.workspace, 13);
  EXPECT_EQ(validateStepProgram(valid())->steps[1].matmul.workspace, -1);
}

// The tanh GELU's training forms: GELU_AUX writes aux; DGELU reads it and
// DGELU_BGRAD writes the bias gradient too. Checked runs and the device
// queue see those accesses.
TEST(StepProgramTest, MatmulGeluTrainingForms) {
  sabi::StepProgram p = valid();
  p.mutable_steps(1)->mutable_matmul()->set_aux(
      addArenaBuffer(p, "pre_gelu", 256, {2, 4}));
  absl::StatusOr<StepProgram> r = validateStepProgram(p);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<int64_t> reads, writes;
  r->stepBuffers(1, reads, writes);
  EXPECT_EQ(reads, (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(writes, (std::vector<int64_t>{2, 13}));

  sabi::StepProgram q = valid();
  makeDgelu(q, /*biasGrad=*/true);
  r = validateStepProgram(q);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->steps[1].matmul.aux, 13);
  EXPECT_EQ(r->steps[1].matmul.biasGrad, 14);
  r->stepBuffers(1, reads, writes);
  EXPECT_EQ(reads, (std::vector<int64_t>{0, 1, 13}));
  EXPECT_EQ(writes, (std::vector<int64_t>{2, 14}));
  MatmulDesc desc = r->matmulDesc(r->steps[1].matmul);
  EXPECT_TRUE(desc.hasAux);
  EXPECT_TRUE(desc.hasBiasGrad);
}

// loss_scaling comes with a loss_scale hyper argument and only with one,
// its numbers in range.
TEST(StepProgramTest, LossScaling) {
  sabi::StepProgram p = valid();
  p.mutable_arguments(5)->set_name("loss_scale");
  auto errorOf = [](const sabi::StepProgram &m) {
    absl::StatusOr<StepProgram> r = validateStepProgram(m);
    return r.ok() ? std::string("ok") : std::string(r.status().message());
  };
  EXPECT_NE(errorOf(p).find("loss_scaling: missing, but the program has a "
                            "loss_scale argument"),
            std::string::npos)
      << errorOf(p);
  sabi::LossScaling *s = p.mutable_loss_scaling();
  s->set_dynamic(true);
  s->set_init_scale(65536);
  s->set_growth_factor(2);
  s->set_backoff_factor(0.5);
  s->set_growth_interval(2000);
  s->set_max_consecutive_overflows(20);
  absl::StatusOr<StepProgram> ok = validateStepProgram(p);
  ASSERT_TRUE(ok.ok()) << ok.status();
  ASSERT_TRUE(ok->lossScaling.has_value());
  EXPECT_TRUE(ok->lossScaling->dynamic);
  EXPECT_EQ(ok->lossScaling->growthInterval, 2000);
  s->set_backoff_factor(1);
  EXPECT_NE(errorOf(p).find("loss_scaling: backoff_factor is out of range"),
            std::string::npos)
      << errorOf(p);
  s->set_backoff_factor(0.5);
  s->set_growth_interval(0);
  EXPECT_NE(errorOf(p).find("growth_interval is out of range"),
            std::string::npos);
  s->set_growth_interval(2000);
  p.mutable_arguments(5)->set_name("lr");
  EXPECT_NE(errorOf(p).find("present, but the program has no loss_scale "
                            "argument"),
            std::string::npos)
      << errorOf(p);
}

TEST(StepProgramTest, RejectsBytesThatAreNoProgram) {
  const char junk[] = "\xff\xff\xff\xff not a StepProgram";
  absl::StatusOr<StepProgram> p = parseStepProgram(junk, sizeof(junk) - 1);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(std::string(p.status().message())
                .find("step program: top level: 22 bytes that are not a "
                      "serialized StepProgram"),
            std::string::npos)
      << p.status();
}

TEST(StepProgramTest, RejectsMalformedJson) {
  absl::StatusOr<StepProgram> p = parseStepProgramJson("{\"version\": 2,");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(std::string(p.status().message()).rfind("step program: JSON:", 0),
            0u)
      << p.status();
  p = parseStepProgramJson(R"({"version": 2, "stepz": []})");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(std::string(p.status().message()).find("stepz"), std::string::npos)
      << p.status();
}

// The bytes are the first thing the training binary reads: every prefix of
// a valid program is reported or read, never a crash. (A prefix that ends
// between fields is a valid message with fewer entries; the validation
// above still holds for it.)
TEST(StepProgramTest, EveryPrefixIsHandled) {
  std::string bytes = valid().SerializeAsString();
  int rejected = 0;
  for (size_t n = 0; n < bytes.size(); ++n)
    rejected += !parseStepProgram(bytes.data(), n).ok();
  EXPECT_GT(rejected, static_cast<int>(bytes.size()) / 2);
}

} // namespace
