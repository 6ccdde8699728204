// RUN: sinter-opt %S/lower-cpu-kernels.mlir --sinter-lower-cpu-kernels | sinter-opt --sinter-convert-cpu-to-llvm | FileCheck %s

// Tests that the CPU kernels of lower-cpu-kernels.mlir come out in the LLVM
// dialect with nothing of linalg, SCF, memref, math or func left; that a
// kernel body is internal with every pointer argument noalias, and the one
// two entries share also no_inline (compiled once, called); that each
// entry keeps its C-interface wrapper (the symbol the launch names); and
// that the program is left for sinter-lower-step.
// CHECK-NOT: linalg.
// CHECK-NOT: scf.
// CHECK-NOT: math.
// CHECK-NOT: memref.
// CHECK-NOT: func.func
// CHECK: sched.program @f
// CHECK: sched.launch @sinter_k0({{.*}}symbol = "_mlir_ciface_sinter_k0"}
// CHECK: llvm.func internal @sinter_k0_body(%arg0: !llvm.ptr {llvm.noalias}, %arg1: !llvm.ptr {llvm.noalias},
// CHECK-SAME: attributes {no_inline, sinter.shared_body
// CHECK: llvm.intr.fma
// CHECK: llvm.func @_mlir_ciface_sinter_k0(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr, %arg3: !llvm.ptr, %arg4: !llvm.ptr, %arg5: !llvm.ptr, %arg6: i64, %arg7: i64)
// CHECK: llvm.func internal @sinter_k2_body(%arg0: !llvm.ptr {llvm.noalias}
// CHECK-NOT: no_inline
// CHECK: llvm.func @_mlir_ciface_sinter_k2(
