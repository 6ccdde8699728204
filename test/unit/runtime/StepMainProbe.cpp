//===- StepMainProbe.cpp - a stand-in for the object sinterc -o writes ----===//
//
// Defines the step program's symbols the way a compiled object does (the
// program is StepMainProbe.txtpb), with two hand-written kernels, so that
// StepMainTest.sh can link it with lib/SinterRuntimeLink.txt exactly as
// sinterc -o will and run it.
//
//===----------------------------------------------------------------------===//

#include "abi/KernelAbi.h"

#include <cstring>

using sinter::abi::SlabRef;
using sinter::abi::WordsRef;

// StepMainTest.sh encodes StepMainProbe.txtpb into probe_program.inc: the
// bytes and their count.
extern "C" const unsigned char SINTER_ABI_STEP_PROGRAM[] = {
#include "probe_program.inc"
};
extern "C" const uint64_t SINTER_ABI_STEP_PROGRAM_SIZE =
    sizeof(SINTER_ABI_STEP_PROGRAM);


static float *f32(const SlabRef *slab, int64_t offset) {
  return reinterpret_cast<float *>(slab->aligned + slab->offset + offset);
}

static void update(const SlabRef *, const SlabRef *params, const SlabRef *,
                   const SlabRef *io, const SlabRef *, const WordsRef *,
                   int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i)
    f32(params, 0)[i] += f32(io, 128)[i];
}

static void loss(const SlabRef *, const SlabRef *params, const SlabRef *,
                 const SlabRef *io, const SlabRef *, const WordsRef *, int64_t,
                 int64_t) {
  int64_t step;
  std::memcpy(&step, io->aligned, sizeof(step));
  float sum = 0;
  for (int i = 0; i < 4; ++i)
    sum += f32(params, 0)[i];
  *f32(io, 64) = sum + static_cast<float>(step);
}

extern "C" const SinterKernelFn SINTER_ABI_STEP_KERNELS[] = {update, loss};
