// RUN: sinter-opt %s --sinter-lower-cpu-kernels | sinter-opt --sinter-convert-cpu-to-llvm="expand-bf16=1" | FileCheck %s
// RUN: sinter-opt %s --sinter-lower-cpu-kernels | sinter-opt --sinter-convert-cpu-to-llvm | FileCheck %s --check-prefix=NATIVE
// RUN: sinter-opt %s -split-input-file --sinter-lower-cpu-kernels | sinter-opt -split-input-file --sinter-convert-cpu-to-llvm | FileCheck %s --check-prefix=WIDEN
// RUN: sinter-opt %s -split-input-file --sinter-lower-cpu-kernels | sinter-opt -split-input-file --sinter-convert-cpu-to-llvm="expand-bf16=1" | FileCheck %s --check-prefix=WIDEN

// Tests that with expand-bf16 (the CPU target's setting on a host without
// AVX-512 BF16) an f32 to bf16 cast is integer code, rounding to nearest
// even (add 0x7fff plus the kept part's lowest bit, keep the high half) and
// a NaN the quiet NaN 0x7fc0, so that LLVM never calls __truncsfbf2 (which
// Debian 12's libgcc lacks: the binary would not link); and that without
// it the cast is LLVM's own.
// CHECK-LABEL: llvm.func internal @sinter_k0_body
// CHECK-NOT: llvm.fptrunc
// CHECK-DAG: llvm.mlir.constant(32767 : i32)
// CHECK-DAG: llvm.mlir.constant(32704 : i16)
// CHECK-DAG: llvm.lshr
// CHECK-DAG: llvm.fcmp "une"
// CHECK: llvm.return
// NATIVE-LABEL: llvm.func internal @sinter_k0_body
// NATIVE: llvm.fptrunc %{{.*}} : f32 to bf16
sched.kernel @k0(%a: tensor<64xf32>) -> tensor<64xbf16> attributes {kind = "loop"} {
  %0 = sgraph.cast %a : tensor<64xf32> to tensor<64xbf16>
  sched.yield %0 : tensor<64xbf16>
}
sched.program @f attributes {role = "step", seed = 0 : i64} {
  %arena = sched.slab "arena" size 384 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<64xf32>
  %b = sched.view %arena[256] : !sched.buffer<64xbf16>
  sched.launch @k0(%a : !sched.buffer<64xf32>) -> (%b : !sched.buffer<64xbf16>)
}

// -----

// Tests that a bf16 to f32 cast is always integer code, with or without
// expand-bf16: the 16 bits zero-extended and shifted to the top of the f32
// (exact, and what the instructions do), since LLVM 19's cost model prices
// a vector fpext of bf16 so high on AVX-512 BF16 hosts that a loop reading
// two bf16 operands was vectorized 4 wide instead of 16.
// WIDEN-LABEL: llvm.func internal @sinter_k1_body
// WIDEN-NOT: llvm.fpext
// WIDEN: llvm.bitcast %{{.*}} : bf16 to i16
// WIDEN: llvm.zext %{{.*}} : i16 to i32
// WIDEN: llvm.shl
// WIDEN: llvm.bitcast %{{.*}} : i32 to f32
// WIDEN: llvm.return
sched.kernel @k1(%a: tensor<64xbf16>) -> tensor<64xf32> attributes {kind = "loop"} {
  %0 = sgraph.cast %a : tensor<64xbf16> to tensor<64xf32>
  sched.yield %0 : tensor<64xf32>
}
sched.program @g attributes {role = "step", seed = 0 : i64} {
  %arena = sched.slab "arena" size 384 : !sched.slab
  %a = sched.view %arena[0] : !sched.buffer<64xbf16>
  %b = sched.view %arena[128] : !sched.buffer<64xf32>
  sched.launch @k1(%a : !sched.buffer<64xbf16>) -> (%b : !sched.buffer<64xf32>)
}
