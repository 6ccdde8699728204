// The CUDA executor's host-side decisions, which need no GPU: which image
// of a CUDA module a device loads, and the one-line refusal where there is
// no driver.

#include "runtime/Exec/CudaExecutor.h"

#include "abi/StepProgram.pb.h"

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
