//===- ExecutorTest.cpp - running a hand-written step program -------------===//
//
// A small program with hand-written kernels (KernelAbi signature, reading
// and writing through slab base + offset and honouring [begin, end)), a
// matmul and a copy:
//
//   x2   = 2 * x + step            kernel "scale" (extent 6)
//   y    = gelu_tanh(x2 @ w + b)   matmul, x2 (2,3), w (3,4), b (4)
//   z    = y                       copy
//   loss = sum(z)                  kernel "sum" (extent 1)
//   cover[i] += 1 for i in range   kernel "cover" (extent 7)
//
// Checked through the Executor interface: the values against an
// independent computation, that 1 and 2 threads give identical bytes, how
// kernels are split, parameter initialization against numbers computed here
// from Random.h, loading arguments by name, and that upload and download
// check the buffer id and the byte count. The slab layout is checked on the
// CPU executor's host descriptors.
//
//===----------------------------------------------------------------------===//

#include "runtime/Exec/Executor.h"

#include "abi/Random.h"
#include "runtime/Exec/CpuExecutor.h"

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <mutex>
#include <regex>
#include <thread>

using namespace sinter;
using namespace sinter::exec;
namespace sabi = sinter::abi;
using sinter::abi::SlabRef;
using sinter::abi::WordsRef;

namespace {

// Byte offsets, as in the program below.
constexpr int64_t kX = 0, kStep = 64, kLoss = 128;          // io
constexpr int64_t kX2 = 0, kY = 64, kZ = 128, kCover = 192; // arena
constexpr int64_t kW = 0, kE = 64, kD = 128;                // params

constexpr const char *kProgram = R"({
    "version": 2, "function": "train_step", "seed": 42,
    "slabs": [
      {"slab": "arena", "bytes": 256},
      {"slab": "params", "bytes": 192},
      {"slab": "opt_state", "bytes": 64},
      {"slab": "io", "bytes": 192},
      {"slab": "constants", "bytes": 64}
    ],
    "buffers": [
      {"id": 0, "name": "x", "slab": "io", "offset": 0, "dtype": "f32", "shape": [2, 3]},
      {"id": 1, "name": "step", "slab": "io", "offset": 64, "dtype": "i64", "shape": []},
      {"id": 2, "name": "loss", "slab": "io", "offset": 128, "dtype": "f32", "shape": []},
      {"id": 3, "name": "x2", "slab": "arena", "offset": 0, "dtype": "f32", "shape": [2, 3]},
      {"id": 4, "name": "y", "slab": "arena", "offset": 64, "dtype": "f32", "shape": [2, 4]},
      {"id": 5, "name": "z", "slab": "arena", "offset": 128, "dtype": "f32", "shape": [2, 4]},
      {"id": 6, "name": "cover", "slab": "arena", "offset": 192, "dtype": "i32", "shape": [7]},
      {"id": 7, "name": "w", "slab": "params", "offset": 0, "dtype": "f32", "shape": [3, 4]},
      {"id": 8, "name": "e", "slab": "params", "offset": 64, "dtype": "bf16", "shape": [5]},
      {"id": 9, "name": "d", "slab": "params", "offset": 128, "dtype": "f64", "shape": [3]},
      {"id": 10, "name": "b", "slab": "constants", "offset": 0, "dtype": "f32", "shape": [4]},
      {"id": 11, "name": "m", "slab": "opt_state", "offset": 0, "dtype": "f32", "shape": [2]}
    ],
    "arguments": [
      {"name": "w", "kind": "param", "buffer": 7, "init": {"dist": "uniform", "bound": 0.5}},
      {"name": "e", "kind": "param", "buffer": 8, "init": {"dist": "normal", "stddev": 1.0}},
      {"name": "d", "kind": "param", "buffer": 9, "init": {"dist": "constant", "value": 0.1}},
      {"name": "m", "kind": "opt_state", "buffer": 11},
      {"name": "x", "kind": "input", "buffer": 0},
      {"name": "step", "kind": "step", "buffer": 1}
    ],
    "results": [
      {"name": "loss", "kind": "metric", "buffer": 2},
      {"name": "w", "kind": "param", "buffer": 7},
      {"name": "y", "kind": "tensor", "buffer": 4}
    ],
    "constants": [
      {"buffer": 10, "data": "AACAPwAAAL8AAAAAAAAgQA=="}
    ],
    "kernels": [
      {"name": "scale", "extent": 6, "args": [0, 0, 64]},
      {"name": "sum", "extent": 1},
      {"name": "cover", "extent": 7}
    ],
    "steps": [
      {"kernel": {"kernel": 0}},
      {"matmul": {"lhs": 3, "rhs": 7, "out": 4, "bias": 10, "activation": "gelu_tanh"}},
      {"copy": {"src": 4, "dst": 5}},
      {"kernel": {"kernel": 1}},
      {"kernel": {"kernel": 2}}
    ]
  })";
constexpr float kBias[] = {1.0f, -0.5f, 0.0f, 2.5f}; // the data above

template <typename T> T *at(const SlabRef *slab, int64_t offset) {
  return reinterpret_cast<T *>(slab->aligned + slab->offset + offset);
}

// Finds its buffers from the launch's words, as compiled kernels do: x, x2
// and step's offsets.
void scaleKernel(const SlabRef *arena, const SlabRef *, const SlabRef *,
                 const SlabRef *io, const SlabRef *, const WordsRef *args,
                 int64_t begin, int64_t end) {
  ASSERT_EQ(args->size, 3);
  const int64_t *words = args->aligned + args->offset;
  float step = static_cast<float>(*at<int64_t>(io, words[2]));
  for (int64_t i = begin; i < end; ++i)
    at<float>(arena, words[1])[i] = 2 * at<float>(io, words[0])[i] + step;
}

void sumKernel(const SlabRef *arena, const SlabRef *, const SlabRef *,
               const SlabRef *io, const SlabRef *, const WordsRef *,
               int64_t begin, int64_t end) {
  ASSERT_EQ(begin, 0); // extent 1: called once with [0, 1)
  ASSERT_EQ(end, 1);
  float sum = 0;
  for (int i = 0; i < 8; ++i)
    sum += at<float>(arena, kZ)[i];
  *at<float>(io, kLoss) = sum;
}

std::mutex rangesMutex;
std::vector<std::pair<int64_t, int64_t>> coverRanges;

void coverKernel(const SlabRef *arena, const SlabRef *, const SlabRef *,
                 const SlabRef *, const SlabRef *, const WordsRef *,
                 int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i)
    ++at<int32_t>(arena, kCover)[i];
  std::lock_guard<std::mutex> lock(rangesMutex);
  coverRanges.push_back({begin, end});
}

const SinterKernelFn kKernels[] = {scaleKernel, sumKernel, coverKernel};

std::unique_ptr<Executor> makeExecutor(int threads) {
  absl::StatusOr<StepProgram> program = parseStepProgramJson(kProgram);
  EXPECT_TRUE(program.ok()) << program.status();
  ExecutorOptions options;
  options.threads = threads;
  options.profile = true;
  absl::StatusOr<std::unique_ptr<Executor>> ex =
      Executor::create(std::move(*program), kKernels, options);
  EXPECT_TRUE(ex.ok()) << ex.status();
  return std::move(*ex);
}

formats::HostTensor f32Tensor(std::vector<int64_t> shape,
                              const std::vector<float> &values) {
  formats::HostTensor t;
  t.dtype = formats::DType::F32;
  t.shape = std::move(shape);
  t.data.resize(values.size() * 4);
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

/// Buffer `id` (f32) downloaded.
std::vector<float> floats(const Executor &ex, int64_t id) {
  const Buffer &b = ex.program().buffers[id];
  std::vector<float> v(b.numElements);
  absl::Status s = ex.download(id, v.data(), b.bytes);
  EXPECT_TRUE(s.ok()) << s;
  return v;
}

/// Buffer `id` downloaded as `T`s.
template <typename T> std::vector<T> elements(const Executor &ex, int64_t id) {
  const Buffer &b = ex.program().buffers[id];
  std::vector<T> v(b.bytes / sizeof(T));
  absl::Status s = ex.download(id, v.data(), b.bytes);
  EXPECT_TRUE(s.ok()) << s;
  return v;
}

const std::vector<float> kXValues = {0.5f, -1, 0.25f, 2, 0, -0.75f};

/// Inits params, sets x, runs one step with counter `step`.
void runOnce(Executor &ex, int64_t step) {
  ASSERT_TRUE(ex.initializeParameters().ok());
  formats::SafeTensorsFile in;
  in.tensors.push_back({"x", f32Tensor({2, 3}, kXValues)});
  absl::StatusOr<std::vector<std::string>> unused = ex.setArguments(in);
  ASSERT_TRUE(unused.ok()) << unused.status();
  EXPECT_TRUE(unused->empty());
  ASSERT_TRUE(ex.setStep(step).ok());
  ASSERT_TRUE(ex.run().ok());
}

TEST(ExecutorTest, ComputesTheProgram) {
  std::unique_ptr<Executor> ex = makeExecutor(2);
  ASSERT_TRUE(ex);
  runOnce(*ex, 3);

  // x2 = 2x + 3, exact in f32.
  std::vector<float> x2 = floats(*ex, 3);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(x2[i], 2 * kXValues[i] + 3);
  // y against the reference matmul on the same (initialized) w.
  MatmulDesc desc = ex->program().matmulDesc(ex->program().steps[1].matmul);
  std::vector<float> w = floats(*ex, 7), want(8);
  ASSERT_TRUE(
      referenceMatmul(desc, x2.data(), w.data(), kBias, want.data()).ok());
  std::vector<float> y = floats(*ex, 4), z = floats(*ex, 5);
  for (int i = 0; i < 8; ++i)
    EXPECT_NEAR(y[i], want[i], 1e-5 * (std::fabs(want[i]) + 1)) << i;
  EXPECT_EQ(y, z); // the copy
  float sum = 0;
  for (float v : z)
    sum += v;
  EXPECT_EQ(floats(*ex, 2)[0], sum);
  EXPECT_EQ(*ex->step(), 3);

  // Results by name; "w" reads the argument buffer (the state contract).
  absl::StatusOr<formats::SafeTensorsFile> out = ex->readResults();
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->tensors.size(), 3u);
  EXPECT_EQ(out->tensors[0].first, "loss");
  EXPECT_EQ(out->tensors[1].second, *ex->readBuffer(7));
  EXPECT_EQ(out->tensors[2].second.shape, (std::vector<int64_t>{2, 4}));

  std::string profile = ex->formatProfile();
  EXPECT_NE(profile.find("matmul"), std::string::npos) << profile;
  EXPECT_NE(profile.find("scale"), std::string::npos) << profile;
  EXPECT_EQ(ex->profile().runs, 1);
  EXPECT_EQ(ex->profile().perKernelCalls[0], 1);
  // The matmul step's own row: its index, its shapes as stored (2x3 times
  // 3x4), its type and its rate; only step 1 has matmul time.
  EXPECT_NE(profile.find("top matmuls:\n    step 1    2x3 * 3x4"),
            std::string::npos)
      << profile;
  EXPECT_NE(profile.find("f32"), std::string::npos) << profile;
  EXPECT_NE(profile.find("GFLOP/s"), std::string::npos) << profile;
  const std::vector<double> &perMatmul = ex->profile().perStepSeconds;
  ASSERT_EQ(perMatmul.size(), 5u);
  EXPECT_GT(perMatmul[1], 0);
  EXPECT_EQ(perMatmul[0] + perMatmul[2] + perMatmul[3] + perMatmul[4], 0);
}

TEST(ExecutorTest, ProfileLeavesOutTheFirstRun) {
  std::unique_ptr<Executor> ex = makeExecutor(1);
  ASSERT_TRUE(ex);
  runOnce(*ex, 0);
  EXPECT_EQ(ex->profile().runs, 1); // alone, the first run is reported
  EXPECT_GE(ex->profile().firstRunSeconds, 0);
  EXPECT_NE(ex->formatProfile().find("the first run only"), std::string::npos);
  double first = ex->profile().firstRunSeconds;
  for (int step = 1; step < 4; ++step)
    runOnce(*ex, step);
  const sinter::exec::Profile &p = ex->profile();
  EXPECT_EQ(p.runs, 3);
  EXPECT_EQ(p.perKernelCalls[0], 3);
  EXPECT_EQ(p.firstRunSeconds, first);
  EXPECT_GE(p.totalSeconds, p.kernelSeconds + p.matmulSeconds + p.copySeconds);
  std::string text = ex->formatProfile();
  EXPECT_NE(text.find("profile: 3 runs"), std::string::npos) << text;
  EXPECT_NE(text.find("after the first run"), std::string::npos) << text;
}

/// A rank whose collectives take `startMs` to hand over and `doneMs` to
/// finish, and change no bytes.
class SlowCollectives : public CollectiveRunner {
public:
  SlowCollectives(int startMs, int doneMs) : startMs(startMs), doneMs(doneMs) {}
  absl::Status start(int64_t, const Collective &, void *, int64_t,
                     sabi::DType) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(startMs));
    return absl::OkStatus();
  }
  absl::Status done(int64_t, const Collective &) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(doneMs));
    return absl::OkStatus();
  }

private:
  int startMs, doneMs;
};

// The profile says which collective the step waited for, and whether at
// its start or its done.
TEST(ExecutorTest, ProfileNamesEachCollectivesWait) {
  std::string json = kProgram;
  auto replace = [&](std::string_view from, std::string_view to) {
    size_t at = json.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    json.replace(at, from.size(), to);
  };
  // y all-reduced between the matmul that writes it and the copy that
  // reads it.
  replace(R"("kernels": [)",
          R"("collectives": [{"buffer": 4, "name": "bucket 0",
                              "tensors": ["w", "e", "d"]}],
             "kernels": [)");
  replace(R"({"copy": {"src": 4, "dst": 5}},)",
          R"({"start": {"collective": 0}}, {"done": {"collective": 0}},
             {"copy": {"src": 4, "dst": 5}},)");
  absl::StatusOr<StepProgram> program = parseStepProgramJson(json);
  ASSERT_TRUE(program.ok()) << program.status();
  ExecutorOptions options;
  options.threads = 1;
  options.profile = true;
  absl::StatusOr<std::unique_ptr<Executor>> ex =
      Executor::create(std::move(*program), kKernels, options);
  ASSERT_TRUE(ex.ok()) << ex.status();
  SlowCollectives slow(/*startMs=*/2, /*doneMs=*/30);
  (*ex)->setCollectives(&slow);
  for (int step = 0; step < 3; ++step)
    runOnce(**ex, step);

  const Profile &p = (*ex)->profile();
  ASSERT_EQ(p.perStepSeconds.size(), 7u);
  EXPECT_GE(p.perStepSeconds[2], 2 * 2e-3);  // the start, twice
  EXPECT_GE(p.perStepSeconds[3], 2 * 30e-3); // the done, twice
  EXPECT_GE(p.perStepSeconds[3], 5 * p.perStepSeconds[2]);
  EXPECT_NEAR(p.collectiveSeconds, p.perStepSeconds[2] + p.perStepSeconds[3],
              1e-9);
  std::string text = (*ex)->formatProfile();
  // "    bucket 0            32 bytes  start    2.1  done   30.1 ms/run ..."
  std::smatch row;
  ASSERT_TRUE(std::regex_search(
      text, row,
      std::regex(R"(collectives \(the step's wait at each start and done\):
    bucket 0 +32 bytes  start +([0-9.]+)  done +([0-9.]+) ms/run +[0-9.]+%  w and 2 more
)"))) << text;
  EXPECT_GE(std::stod(row[1]), 2.0) << text;
  EXPECT_LT(std::stod(row[1]), 30.0) << text;
  EXPECT_GE(std::stod(row[2]), 30.0) << text;

  // With no wait (one rank), no section.
  std::unique_ptr<Executor> solo = makeExecutor(1);
  ASSERT_TRUE(solo);
  runOnce(*solo, 0);
  EXPECT_EQ(solo->formatProfile().find("collectives"), std::string::npos);
}

TEST(ExecutorTest, ThreadCountDoesNotChangeBytes) {
  std::unique_ptr<Executor> one = makeExecutor(1), two = makeExecutor(2);
  ASSERT_TRUE(one && two);
  for (int step = 0; step < 3; ++step) {
    runOnce(*one, step);
    runOnce(*two, step);
  }
  for (int64_t id = 0; id < static_cast<int64_t>(one->program().buffers.size());
       ++id)
    EXPECT_EQ(*one->readBuffer(id), *two->readBuffer(id)) << "buffer " << id;
}

TEST(ExecutorTest, KernelRangesCoverTheExtentOnce) {
  for (int threads : {1, 2, 3, 16}) {
    std::unique_ptr<Executor> ex = makeExecutor(threads);
    ASSERT_TRUE(ex);
    coverRanges.clear();
    runOnce(*ex, 0);
    std::vector<int32_t> cover = elements<int32_t>(*ex, 6);
    for (int i = 0; i < 7; ++i)
      EXPECT_EQ(cover[i], 1) << "threads " << threads << " index " << i;
    // min(threads, extent) contiguous chunks.
    EXPECT_EQ(coverRanges.size(), static_cast<size_t>(std::min(threads, 7)));
    for (auto [begin, end] : coverRanges)
      EXPECT_LT(begin, end);
  }
}

// The values are recomputed here from Random.h and the docs/Random.md
// formulas; bf16 rounding is round-to-nearest-even done with integers.
TEST(ExecutorTest, InitializesParametersLikeTheInterpreter) {
  std::unique_ptr<Executor> ex = makeExecutor(1);
  ASSERT_TRUE(ex);
  ASSERT_TRUE(ex->initializeParameters().ok());

  uint64_t wKey = random::key(42, random::nameHash("w"));
  std::vector<float> w = floats(*ex, 7);
  for (int k = 0; k < 12; ++k)
    EXPECT_EQ(w[k], static_cast<float>(
                        0.5 * (2.0 * random::uniform53(wKey, k) - 1.0)))
        << k;
  EXPECT_NE(w[0], w[1]);

  uint64_t eKey = random::key(42, random::nameHash("e"));
  std::vector<uint16_t> e = elements<uint16_t>(*ex, 8);
  for (int k = 0; k < 5; ++k) {
    float f = static_cast<float>(1.0 * random::normal(eKey, k));
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    uint32_t lsb = (bits >> 16) & 1;
    EXPECT_EQ(e[k], static_cast<uint16_t>((bits + 0x7FFF + lsb) >> 16)) << k;
  }

  std::vector<double> d = elements<double>(*ex, 9);
  for (int k = 0; k < 3; ++k)
    EXPECT_EQ(d[k], 0.1);
  // The opt_state slab is untouched: zero.
  EXPECT_EQ(floats(*ex, 11), (std::vector<float>{0, 0}));
}

// Parameters large enough to be initialized on several threads: every
// element as the one-thread formula gives it, on 1, 2 and 3 threads.
TEST(ExecutorTest, InitializesLargeParametersOnAnyThreadCount) {
  constexpr int64_t kRows = 300, kCols = 301; // 90,300 elements each
  constexpr const char *kLarge = R"({
    "version": 2, "function": "train_step", "seed": 7,
    "slabs": [{"slab": "params", "bytes": 542208}],
    "buffers": [
      {"id": 0, "name": "n", "slab": "params", "offset": 0, "dtype": "f32", "shape": [300, 301]},
      {"id": 1, "name": "h", "slab": "params", "offset": 361216, "dtype": "bf16", "shape": [300, 301]}
    ],
    "arguments": [
      {"name": "n", "kind": "param", "buffer": 0, "init": {"dist": "normal", "stddev": 0.02}},
      {"name": "h", "kind": "param", "buffer": 1, "init": {"dist": "uniform", "bound": 0.1}}
    ],
    "steps": []
  })";
  const uint64_t nKey = random::key(7, random::nameHash("n"));
  const uint64_t hKey = random::key(7, random::nameHash("h"));
  std::vector<float> wantN(kRows * kCols);
  std::vector<uint16_t> wantH(kRows * kCols);
  for (int64_t k = 0; k < kRows * kCols; ++k) {
    wantN[k] = static_cast<float>(0.02 * random::normal(nKey, k));
    float f =
        static_cast<float>(0.1 * (2.0 * random::uniform53(hKey, k) - 1.0));
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    wantH[k] =
        static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
  }
  for (int threads : {1, 2, 3}) {
    absl::StatusOr<StepProgram> program = parseStepProgramJson(kLarge);
    ASSERT_TRUE(program.ok()) << program.status();
    ExecutorOptions options;
    options.threads = threads;
    absl::StatusOr<std::unique_ptr<Executor>> ex =
        Executor::create(std::move(*program), nullptr, options);
    ASSERT_TRUE(ex.ok()) << ex.status();
    ASSERT_TRUE((*ex)->initializeParameters().ok());
    EXPECT_TRUE(floats(**ex, 0) == wantN) << threads << " threads";
    EXPECT_TRUE(elements<uint16_t>(**ex, 1) == wantH) << threads << " threads";
  }
}

TEST(ExecutorTest, SetArgumentsChecksDtypeAndShape) {
  std::unique_ptr<Executor> ex = makeExecutor(1);
  ASSERT_TRUE(ex);
  formats::SafeTensorsFile in;
  in.tensors.push_back({"x", f32Tensor({3, 2}, kXValues)});
  absl::StatusOr<std::vector<std::string>> r = ex->setArguments(in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "input argument 'x': given F32 [3,2], expected F32 [2,3]");

  in.tensors[0].second.dtype = formats::DType::I32;
  in.tensors[0].second.shape = {2, 3};
  r = ex->setArguments(in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "input argument 'x': given I32 [2,3], expected F32 [2,3]");

  in.tensors[0] = {"unknown", f32Tensor({1}, {1})};
  r = ex->setArguments(in);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, std::vector<std::string>{"unknown"});
}

TEST(ExecutorTest, ParameterWithoutInit) {
  absl::StatusOr<StepProgram> program = parseStepProgramJson(kProgram);
  ASSERT_TRUE(program.ok());
  program->arguments[0].init.reset();
  auto ex = Executor::create(std::move(*program), kKernels);
  ASSERT_TRUE(ex.ok());
  absl::Status s = (*ex)->initializeParameters();
  EXPECT_EQ(s.message(), "parameter 'w' has no initializer and no given value");
}

TEST(ExecutorTest, MissingKernelFunction) {
  absl::StatusOr<StepProgram> program = parseStepProgramJson(kProgram);
  ASSERT_TRUE(program.ok());
  const SinterKernelFn partial[] = {scaleKernel, nullptr, coverKernel};
  auto ex = Executor::create(std::move(*program), partial);
  ASSERT_FALSE(ex.ok());
  EXPECT_EQ(ex.status().message(),
            "kernel 1 'sum' has no function in the kernel table");
}

// Hyper arguments (e.g. the peak learning rate) hold their program default
// from creation on; setHyper changes one by name, rounded to its dtype, and
// rejects names that are not hyper arguments and non-finite values.
TEST(ExecutorTest, HyperArgumentsStartAtTheirDefault) {
  const char *text = R"({
      "version": 2, "function": "train_step", "seed": 0,
      "slabs": [
        {"slab": "arena", "bytes": 0},
        {"slab": "params", "bytes": 0},
        {"slab": "opt_state", "bytes": 0},
        {"slab": "io", "bytes": 192},
        {"slab": "constants", "bytes": 0}
      ],
      "buffers": [
        {"id": 0, "name": "lr", "slab": "io", "offset": 0, "dtype": "f64", "shape": []},
        {"id": 1, "name": "wd", "slab": "io", "offset": 64, "dtype": "f32", "shape": []},
        {"id": 2, "name": "x", "slab": "io", "offset": 128, "dtype": "f32", "shape": []}
      ],
      "arguments": [
        {"name": "lr", "kind": "hyper", "buffer": 0, "default_value": 0.003},
        {"name": "wd", "kind": "hyper", "buffer": 1, "default_value": 0.1},
        {"name": "x", "kind": "input", "buffer": 2}
      ],
      "results": [], "constants": [], "kernels": [], "steps": []
    })";
  absl::StatusOr<StepProgram> program = parseStepProgramJson(text);
  ASSERT_TRUE(program.ok()) << program.status();
  auto created = Executor::create(std::move(*program), nullptr);
  ASSERT_TRUE(created.ok()) << created.status();
  Executor &ex = **created;
  auto f64At = [&](int64_t id) { return elements<double>(ex, id).at(0); };
  auto f32At = [&](int64_t id) { return elements<float>(ex, id).at(0); };
  EXPECT_EQ(f64At(0), 0.003);
  EXPECT_EQ(f32At(1), 0.1f);

  ASSERT_TRUE(ex.setHyper("lr", 6e-4).ok());
  EXPECT_EQ(f64At(0), 6e-4);
  ASSERT_TRUE(ex.setHyper("wd", 0.25).ok());
  EXPECT_EQ(f32At(1), 0.25f);

  absl::Status s = ex.setHyper("nope", 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "@train_step has no hyper argument 'nope'");
  s = ex.setHyper("x", 1); // an input, not a hyper argument
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  s = ex.setHyper("lr", std::nan(""));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  s = ex.setHyper("wd", 1e300); // finite in f64, not in f32
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f64At(0), 6e-4); // unchanged by the failed calls
  EXPECT_EQ(f32At(1), 0.25f);
}

TEST(ExecutorTest, SlabsAreAlignedAndDescribed) {
  absl::StatusOr<StepProgram> program = parseStepProgramJson(kProgram);
  ASSERT_TRUE(program.ok()) << program.status();
  absl::StatusOr<std::unique_ptr<CpuExecutor>> created =
      CpuExecutor::create(std::move(*program), kKernels);
  ASSERT_TRUE(created.ok()) << created.status();
  std::unique_ptr<CpuExecutor> &ex = *created;
  for (int s = 0; s < sinter::abi::kNumSlabs; ++s) {
    const SlabRef &r = ex->hostSlab(static_cast<sabi::SlabKind>(s));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(r.aligned) % 64, 0u);
    EXPECT_EQ(r.allocated, r.aligned);
    EXPECT_EQ(r.offset, 0);
    EXPECT_EQ(r.stride, 1);
    EXPECT_EQ(r.size, ex->program().slabBytes[s]);
  }
  // Constants are filled at creation.
  EXPECT_EQ(floats(*ex, 10),
            std::vector<float>(std::begin(kBias), std::end(kBias)));
}

// upload and download move exactly a buffer's bytes: an unknown id or any
// other count is one clear error and copies nothing.
TEST(ExecutorTest, TransfersCheckTheBufferAndTheByteCount) {
  std::unique_ptr<Executor> ex = makeExecutor(1);
  ASSERT_TRUE(ex);
  std::vector<float> w(12, 1.5f), back(12);
  ASSERT_TRUE(ex->upload(7, w.data(), 48).ok());

  absl::Status s = ex->upload(12, w.data(), 48);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "upload to buffer 12: @train_step has no such buffer (it has 12)");
  s = ex->download(-1, back.data(), 48);
  EXPECT_EQ(s.message(),
            "download from buffer -1: @train_step has no such buffer (it has "
            "12)");
  s = ex->upload(7, std::vector<float>(13, 9.0f).data(), 52);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "upload to buffer 7 'w': 52 bytes given, the buffer holds 48");
  s = ex->download(7, back.data(), 44);
  EXPECT_EQ(s.message(),
            "download from buffer 7 'w': 44 bytes given, the buffer holds 48");
  EXPECT_EQ(back, std::vector<float>(12, 0.0f)); // nothing copied
  // The failed upload left w as it was.
  ASSERT_TRUE(ex->download(7, back.data(), 48).ok());
  EXPECT_EQ(back, w);

  // The helpers built on them report the same way.
  EXPECT_EQ(ex->readBuffer(40).status().message(),
            "download from buffer 40: @train_step has no such buffer (it has "
            "12)");
  EXPECT_EQ(ex->scalarValue(12).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ex->writeBuffer(99, f32Tensor({1}, {1}), "t").message(),
            "upload to buffer 99: @train_step has no such buffer (it has 12)");

  // A part of a buffer (what a streamed checkpoint reads) lies in it.
  float two[2] = {0, 0};
  ASSERT_TRUE(ex->downloadPart(7, 40, two, 8).ok());
  EXPECT_EQ(two[0], 1.5f);
  EXPECT_EQ(two[1], 1.5f);
  s = ex->downloadPart(7, 44, two, 8);
  EXPECT_EQ(s.message(), "download from buffer 7 'w': bytes [44, 52) asked "
                         "for, the buffer holds 48");
  s = ex->downloadPart(7, ~size_t(0), two, 8);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  s = ex->downloadPart(12, 0, two, 8);
  EXPECT_EQ(s.message(),
            "download from buffer 12: @train_step has no such buffer (it has "
            "12)");
  EXPECT_FALSE(ex->bufferSource(12, "x").ok());
  absl::StatusOr<formats::TensorSource> source = ex->bufferSource(7, "w");
  ASSERT_TRUE(source.ok());
  EXPECT_EQ(source->shape, ex->program().buffers[7].shape);
  EXPECT_FALSE(source->read(40, 12, two).ok());
}

// What goes in by upload comes out of run() by download: parameters and
// inputs set directly (no initializers), the results read back.
TEST(ExecutorTest, DownloadAfterRunReturnsWhatTheProgramComputed) {
  std::unique_ptr<Executor> ex = makeExecutor(2);
  ASSERT_TRUE(ex);
  std::vector<float> w(12);
  for (int i = 0; i < 12; ++i)
    w[i] = 0.25f * static_cast<float>(i - 5); // exact in f32
  ASSERT_TRUE(ex->upload(7, w.data(), w.size() * 4).ok());
  ASSERT_TRUE(ex->upload(0, kXValues.data(), kXValues.size() * 4).ok());
  ASSERT_TRUE(ex->setStep(-2).ok());
  ASSERT_TRUE(ex->run().ok());

  std::vector<float> x2(6);
  for (int i = 0; i < 6; ++i)
    x2[i] = 2 * kXValues[i] - 2;
  EXPECT_EQ(floats(*ex, 3), x2);
  MatmulDesc desc = ex->program().matmulDesc(ex->program().steps[1].matmul);
  std::vector<float> want(8);
  ASSERT_TRUE(
      referenceMatmul(desc, x2.data(), w.data(), kBias, want.data()).ok());
  std::vector<float> y(8);
  ASSERT_TRUE(ex->download(4, y.data(), 32).ok());
  float sum = 0;
  for (int i = 0; i < 8; ++i) {
    EXPECT_NEAR(y[i], want[i], 1e-5 * (std::fabs(want[i]) + 1)) << i;
    sum += y[i];
  }
  float loss = 0;
  ASSERT_TRUE(ex->download(2, &loss, sizeof(loss)).ok());
  EXPECT_EQ(loss, sum);
  EXPECT_EQ(*ex->scalarValue(2), sum);
  int64_t step = 0;
  ASSERT_TRUE(ex->download(1, &step, sizeof(step)).ok());
  EXPECT_EQ(step, -2);
  EXPECT_EQ(*ex->step(), -2);
}

// Gradient accumulation: the accumulate program's executor runs in the
// training executor's params and opt_state slabs, so what one writes there
// the other reads, with no copy; a layout that differs is refused by name.
std::string stateProgram(const char *function, int64_t optStateBytes,
                         int64_t accumulatorOffset, bool withMoment) {
  std::string moment =
      withMoment ? R"(, {"id": 2, "name": "optimizer.w.exp_avg", "slab":
                   "opt_state", "offset": 64, "dtype": "f32", "shape": [4]})"
                 : "";
  std::string momentArg =
      withMoment
          ? R"(, {"name": "optimizer.w.exp_avg", "kind": "opt_state", "buffer": 2})"
          : "";
  return absl::StrFormat(
      R"({"version": 2, "function": "%s", "seed": 0,
          "slabs": [{"slab": "arena", "bytes": 0},
                    {"slab": "params", "bytes": 64},
                    {"slab": "opt_state", "bytes": %d},
                    {"slab": "io", "bytes": 0},
                    {"slab": "constants", "bytes": 0}],
          "buffers": [
            {"id": 0, "name": "w", "slab": "params", "offset": 0,
             "dtype": "f32", "shape": [4]},
            {"id": 1, "name": "grad_accum.w", "slab": "opt_state",
             "offset": %d, "dtype": "f32", "shape": [4]}%s],
          "arguments": [
            {"name": "w", "kind": "param", "buffer": 0},
            {"name": "grad_accum.w", "kind": "accumulator", "buffer": 1}%s],
          "results": [], "constants": [], "kernels": [], "steps": []})",
      function, optStateBytes, accumulatorOffset, moment, momentArg);
}

TEST(ExecutorTest, AccumulateProgramSharesTheTrainingState) {
  absl::StatusOr<StepProgram> train =
      parseStepProgramJson(stateProgram("train_step", 128, 0, true));
  ASSERT_TRUE(train.ok()) << train.status();
  auto trainer = Executor::create(std::move(*train), nullptr);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  absl::StatusOr<StepProgram> acc =
      parseStepProgramJson(stateProgram("accumulate_step", 64, 0, false));
  ASSERT_TRUE(acc.ok()) << acc.status();
  ExecutorOptions options;
  options.shareStateWith = trainer->get();
  auto accumulate = Executor::create(std::move(*acc), nullptr, options);
  ASSERT_TRUE(accumulate.ok()) << accumulate.status();

  std::vector<float> w = {1, 2, 3, 4}, g = {0.5f, -1, 2, 8};
  ASSERT_TRUE((*trainer)->upload(0, w.data(), 16).ok());
  ASSERT_TRUE((*accumulate)->upload(1, g.data(), 16).ok());
  EXPECT_EQ(elements<float>(**accumulate, 0), w);
  EXPECT_EQ(elements<float>(**trainer, 1), g);
  ASSERT_TRUE((*trainer)->zeroBuffer(1).ok());
  EXPECT_EQ(elements<float>(**accumulate, 1), std::vector<float>(4, 0.f));
  EXPECT_EQ(elements<float>(**accumulate, 0), w); // the param is untouched
  accumulate->reset();                            // the trainer's slabs stay
  EXPECT_EQ(elements<float>(**trainer, 0), w);

  // The accumulator elsewhere in the slab; a slab larger than the trainer's.
  absl::StatusOr<StepProgram> moved =
      parseStepProgramJson(stateProgram("accumulate_step", 128, 64, false));
  ASSERT_TRUE(moved.ok()) << moved.status();
  auto refused = Executor::create(std::move(*moved), nullptr, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "program 'accumulate_step' cannot share state with 'train_step': "
            "its accumulator 'grad_accum.w' is not laid out there as it is "
            "here");
  absl::StatusOr<StepProgram> larger =
      parseStepProgramJson(stateProgram("accumulate_step", 192, 0, false));
  ASSERT_TRUE(larger.ok()) << larger.status();
  refused = Executor::create(std::move(*larger), nullptr, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "program 'accumulate_step' cannot share the 'opt_state' slab of "
            "'train_step': it needs 192 bytes, that one has 128");
}

// The link line sinterc -o uses is generated with the libraries.
TEST(RuntimeLinkTest, LinkFileExists) {
  std::ifstream file(SINTER_RUNTIME_LINK_FILE);
  ASSERT_TRUE(file.good()) << SINTER_RUNTIME_LINK_FILE;
  std::string line;
  std::getline(file, line);
  EXPECT_NE(line.find("libSinterStepMain.a"), std::string::npos) << line;
  EXPECT_NE(line.find("libSinterRuntime.a"), std::string::npos) << line;
  EXPECT_NE(line.find("dnnl"), std::string::npos) << line;
  EXPECT_NE(line.find("-fopenmp"), std::string::npos) << line;
}

} // namespace
