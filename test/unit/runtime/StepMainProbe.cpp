//===- StepMainProbe.cpp - a stand-in for the object sinterc -o writes ----===//
//
// Defines sinter_program_json and sinter_kernels the way a compiled object
// does, with two hand-written kernels, so that StepMainTest.sh can link it
// with lib/SinterRuntimeLink.txt exactly as sinterc -o will and run it.
//
//   w    param  f32 [4]  init constant 0.5
//   x    input  f32 [4]
//   step step   i64 []
//   k0 "update" (extent 4):  w[i] += x[i]
//   k1 "loss"   (extent 1):  loss = sum(w) + step
//
//===----------------------------------------------------------------------===//

#include "runtime/Abi/KernelAbi.h"

#include <cstring>

using sinter::abi::SlabRef;

extern "C" const char sinter_program_json[] = R"({
  "version": 1, "function": "train_step", "seed": 7,
  "slabs": {"arena": 0, "params": 64, "opt_state": 0, "io": 192,
            "constants": 0},
  "buffers": [
    {"id": 0, "name": "w", "slab": "params", "offset": 0, "dtype": "f32",
     "shape": [4], "category": "parameters"},
    {"id": 1, "name": "step", "slab": "io", "offset": 0, "dtype": "i64",
     "shape": [], "category": "inputs"},
    {"id": 2, "name": "loss", "slab": "io", "offset": 64, "dtype": "f32",
     "shape": [], "category": "outputs"},
    {"id": 3, "name": "x", "slab": "io", "offset": 128, "dtype": "f32",
     "shape": [4], "category": "inputs"}],
  "arguments": [
    {"name": "w", "kind": "param", "buffer": 0,
     "init": {"dist": "constant", "value": 0.5}},
    {"name": "x", "kind": "input", "buffer": 3},
    {"name": "step", "kind": "step", "buffer": 1}],
  "results": [
    {"name": "loss", "kind": "metric", "buffer": 2},
    {"name": "w", "kind": "param", "buffer": 0}],
  "constants": [],
  "kernels": [{"name": "update", "extent": 4}, {"name": "loss", "extent": 1}],
  "steps": [{"op": "kernel", "kernel": 0}, {"op": "kernel", "kernel": 1}]
})";

static float *f32(const SlabRef *slab, int64_t offset) {
  return reinterpret_cast<float *>(slab->aligned + slab->offset + offset);
}

static void update(const SlabRef *, const SlabRef *params, const SlabRef *,
                   const SlabRef *io, const SlabRef *, int64_t begin,
                   int64_t end) {
  for (int64_t i = begin; i < end; ++i)
    f32(params, 0)[i] += f32(io, 128)[i];
}

static void loss(const SlabRef *, const SlabRef *params, const SlabRef *,
                 const SlabRef *io, const SlabRef *, int64_t, int64_t) {
  int64_t step;
  std::memcpy(&step, io->aligned, sizeof(step));
  float sum = 0;
  for (int i = 0; i < 4; ++i)
    sum += f32(params, 0)[i];
  *f32(io, 64) = sum + static_cast<float>(step);
}

extern "C" const SinterKernelFn sinter_kernels[] = {update, loss};
