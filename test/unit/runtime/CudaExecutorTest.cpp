// The CUDA executor's host-side decisions, which need no GPU: which image
// of a CUDA module a device loads, the one-line refusal where there is no
// driver, and (on the stand-in driver) how uploads are staged.

#include "runtime/Exec/CudaExecutor.h"

#include "abi/StepProgram.pb.h"
#include "runtime/Exec/StepProgram.h"

#include "absl/strings/str_format.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

using sinter::exec::pickCudaImage;

std::string moduleOf(std::vector<std::pair<std::string, std::string>> chips) {
  sinter::abi::CudaModule m;
  for (auto &[chip, tag] : chips) {
    sinter::abi::CudaImage *image = m.add_images();
    image->set_chip(chip);
    image->set_ptx("ptx-" + tag + std::string(1, '\0'));
    image->set_cubin("cubin-" + tag);
  }
  std::string bytes;
  m.SerializeToString(&bytes);
  return bytes;
}

TEST(CudaImage, ExactArchitectureLoadsItsCubin) {
  std::string m = moduleOf({{"sm_80", "a100"}, {"sm_90", "h100"}});
  bool ptx = true;
  auto image = pickCudaImage(m, 9, 0, &ptx);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(*image, "cubin-h100");
  EXPECT_FALSE(ptx);
  image = pickCudaImage(m, 8, 0, &ptx);
  ASSERT_TRUE(image.ok());
  EXPECT_EQ(*image, "cubin-a100");
}

TEST(CudaImage, NewerArchitectureCompilesTheNewestOlderPtx) {
  std::string m = moduleOf({{"sm_80", "a100"}, {"sm_86", "a10"}});
  bool ptx = false;
  auto image = pickCudaImage(m, 9, 0, &ptx);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_TRUE(ptx);
  EXPECT_EQ(*image, std::string("ptx-a10") + '\0');
  // sm_89 is newer than sm_86 but has no cubin of its own either.
  image = pickCudaImage(m, 8, 9, &ptx);
  ASSERT_TRUE(image.ok());
  EXPECT_EQ(*image, std::string("ptx-a10") + '\0');
}

TEST(CudaImage, ArchitectureSpecificPtxDoesNotRunElsewhere) {
  std::string m = moduleOf({{"sm_90a", "wgmma"}});
  bool ptx = false;
  auto image = pickCudaImage(m, 10, 0, &ptx);
  EXPECT_FALSE(image.ok());
}

TEST(CudaImage, OlderArchitectureIsRefusedNamingTheChips) {
  std::string m = moduleOf({{"sm_80", "a100"}, {"sm_90", "h100"}});
  bool ptx = false;
  auto image = pickCudaImage(m, 7, 5, &ptx);
  ASSERT_FALSE(image.ok());
  EXPECT_NE(image.status().message().find("compiled for sm_80, sm_90"),
            std::string::npos)
      << image.status();
  EXPECT_NE(image.status().message().find("--cuda-arch=sm_75"),
            std::string::npos)
      << image.status();
}

TEST(CudaImage, GarbageModuleIsAnError) {
  bool ptx = false;
  EXPECT_FALSE(pickCudaImage("\xff\xff\xff", 9, 0, &ptx).ok());
}

// The runtime's own kernels (the gradients' bf16/f16 wire conversions) are
// PTX text the driver compiles at load: ptxas must take it for the chips
// the binaries are built for, every kernel present.
TEST(CudaWireKernels, AssembleForSm80AndSm90) {
  std::string ptx = sinter::exec::commConversionPtx();
  for (const char *name : {"sinter_narrow_bf16", "sinter_narrow_f16",
                           "sinter_widen_bf16", "sinter_widen_f16"})
    EXPECT_NE(ptx.find(std::string(".entry ") + name), std::string::npos)
        << name;
  std::string dir = testing::TempDir();
  std::string file = dir + "/sinter_wire.ptx";
  std::ofstream(file) << ptx;
  for (const char *arch : {"sm_80", "sm_90"}) {
    std::string cmd = std::string(SINTER_PTXAS) + " -arch=" + arch + " " +
                      file + " -o " + dir + "/sinter_wire_" + arch +
                      ".cubin 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << ptx;
  }
}

TEST(CudaExecutor, NoDriverIsOneClearError) {
  // A driver that cannot be loaded: the toolkit's stub, or a path that
  // does not exist. Either way creation fails with a sentence, not a crash.
  setenv("SINTER_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  sinter::exec::StepProgram program;
  auto ex = sinter::exec::createCudaExecutor(program, moduleOf({}), {});
  ASSERT_FALSE(ex.ok());
  EXPECT_NE(ex.status().message().find("CUDA driver cannot be loaded"),
            std::string::npos)
      << ex.status();
  unsetenv("SINTER_LIBCUDA");
}

} // namespace

#ifdef SINTER_FAKE_CUDA_LIB
namespace {

// An io buffer of 3 MiB and a parameter, no kernels: enough for the
// executor's transfers on the stand-in driver (FakeCuda.cpp), whose log
// says which copies came from pinned memory and where the executor waited.
constexpr int64_t kBig = 3 << 20;
std::string transferProgram() {
  return absl::StrFormat(R"({
    "version": 2, "function": "train_step", "seed": 1,
    "slabs": [
      {"slab": "arena", "bytes": 64},
      {"slab": "params", "bytes": 64},
      {"slab": "opt_state", "bytes": 64},
      {"slab": "io", "bytes": %d},
      {"slab": "constants", "bytes": 64}
    ],
    "buffers": [
      {"id": 0, "name": "x", "slab": "io", "offset": 0, "dtype": "f32", "shape": [%d]},
      {"id": 1, "name": "w", "slab": "params", "offset": 0, "dtype": "f32", "shape": [4]}
    ],
    "arguments": [
      {"name": "w", "kind": "param", "buffer": 1},
      {"name": "x", "kind": "input", "buffer": 0}
    ],
    "results": [], "constants": [], "kernels": [], "steps": []
  })",
                         kBig, kBig / 4);
}

std::vector<std::string> lines(const std::string &path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

TEST(CudaExecutor, StagedUploadsNeverReuseMemoryACopyMayStillRead) {
  std::string log = ::testing::TempDir() + "/staging.log";
  std::remove(log.c_str());
  setenv("SINTER_LIBCUDA", SINTER_FAKE_CUDA_LIB, 1);
  setenv("SINTER_FAKE_CUDA_LOG", log.c_str(), 1);
  unsetenv("RANK");
  absl::StatusOr<sinter::exec::StepProgram> program =
      sinter::exec::parseStepProgramJson(transferProgram());
  ASSERT_TRUE(program.ok()) << program.status();
  auto ex = sinter::exec::createCudaExecutor(*program,
                                             moduleOf({{"sm_90", "90"}}), {});
  ASSERT_TRUE(ex.ok()) << ex.status();

  // Three batches into the same io buffer without a run: the 8 MiB of
  // pinned memory hold two; the third must wait for the compute stream
  // before it reuses the first's bytes.
  std::vector<float> batch(kBig / 4);
  for (float value : {1.0f, 2.0f, 3.0f}) {
    std::fill(batch.begin(), batch.end(), value);
    ASSERT_TRUE((*ex)->upload(0, batch.data(), kBig).ok());
  }
  std::vector<float> back(kBig / 4);
  ASSERT_TRUE((*ex)->download(0, back.data(), kBig).ok());
  EXPECT_EQ(back.front(), 3.0f);
  EXPECT_EQ(back.back(), 3.0f);
  // A parameter (params slab, shared with an accumulate program's
  // executor) is copied from pageable memory and waited for.
  float w[4] = {1, 2, 3, 4};
  ASSERT_TRUE((*ex)->upload(1, w, sizeof w).ok());

  std::vector<std::string> calls;
  for (const std::string &line : lines(log))
    if (line.rfind("cuMemcpyHtoDAsync", 0) == 0 ||
        line.rfind("cuStreamSynchronize S1", 0) == 0)
      calls.push_back(line);
  std::string big = absl::StrFormat("cuMemcpyHtoDAsync bytes=%d S1 pinned",
                                    kBig);
  std::vector<std::string> want = {big,
                                   big,
                                   "cuStreamSynchronize S1",
                                   big,
                                   "cuStreamSynchronize S1", // the download
                                   "cuMemcpyHtoDAsync bytes=16 S1",
                                   "cuStreamSynchronize S1"};
  // The slabs' zeroing comes first; compare the tail.
  ASSERT_GE(calls.size(), want.size());
  std::vector<std::string> tail(calls.end() - want.size(), calls.end());
  EXPECT_EQ(tail, want);
  unsetenv("SINTER_LIBCUDA");
  unsetenv("SINTER_FAKE_CUDA_LOG");
}

} // namespace
#endif
