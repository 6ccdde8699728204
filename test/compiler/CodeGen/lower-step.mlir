// RUN: sinter-opt %s --sinter-lower-step --sinter-verify-binary | FileCheck %s
// RUN: sinter-opt %S/Inputs/one-program.mlir --sinter-lower-step --sinter-verify-binary | FileCheck %s --check-prefix=EMPTY
// RUN: sinter-opt %s --sinter-lower-step="table-row=1" --sinter-verify-binary | FileCheck %s --check-prefix=ROWS

// Tests that each program becomes the three symbols of its role, as
// constant globals: the serialized step program (its labels and symbols
// are in the bytes), its size, and the kernel table (the address of each
// launch's symbol, in order, in rows of table-row entries: one row here);
// the evaluation program gets the sinter_eval_ ones; the module's default
// data folder becomes a null-terminated string; and no program is left.
// CHECK-NOT: sched.program
// CHECK: llvm.mlir.global external constant @sinter_program("\08\02{{.*}}k0_tanh{{.*}}_mlir_ciface_sinter_k0{{.*}}")
// CHECK: llvm.mlir.global external constant @sinter_program_size({{[0-9]+}} : i64)
// CHECK: llvm.mlir.global external constant @sinter_kernels() {{.*}} : !llvm.struct<(array<2 x ptr>)> {
// CHECK: llvm.mlir.addressof @_mlir_ciface_sinter_k0 : !llvm.ptr
// CHECK: llvm.insertvalue %{{.*}}, %{{.*}}[0] : !llvm.array<2 x ptr>
// CHECK: llvm.mlir.addressof @_mlir_ciface_sinter_k1 : !llvm.ptr
// CHECK: llvm.insertvalue %{{.*}}, %{{.*}}[1] : !llvm.array<2 x ptr>
// CHECK: llvm.insertvalue %{{.*}}, %{{.*}}[0] : !llvm.struct<(array<2 x ptr>)>
// CHECK: llvm.return
// CHECK: llvm.mlir.global external constant @sinter_eval_program("{{.*}}eval_step{{.*}}")
// CHECK: llvm.mlir.global external constant @sinter_eval_program_size(
// CHECK: llvm.mlir.global external constant @sinter_eval_kernels() {{.*}} : !llvm.struct<(array<1 x ptr>)> {
// CHECK: llvm.mlir.addressof @_mlir_ciface_sinter_eval_k0
// CHECK: llvm.mlir.global external constant @sinter_default_data("/data/mini\00")
// CHECK-NOT: sched.program

// Tests that a table longer than a row is several rows, each filled on its
// own and then put in its place: with rows of one entry, the two kernels'
// addresses are rows 0 and 1.
// ROWS: llvm.mlir.global external constant @sinter_kernels() {{.*}} : !llvm.struct<(array<1 x ptr>, array<1 x ptr>)> {
// ROWS: llvm.mlir.addressof @_mlir_ciface_sinter_k0 : !llvm.ptr
// ROWS: llvm.insertvalue %{{.*}}, %{{.*}}[0] : !llvm.array<1 x ptr>
// ROWS: llvm.insertvalue %{{.*}}, %{{.*}}[0] : !llvm.struct<(array<1 x ptr>, array<1 x ptr>)>
// ROWS: llvm.mlir.addressof @_mlir_ciface_sinter_k1 : !llvm.ptr
// ROWS: llvm.insertvalue %{{.*}}, %{{.*}}[0] : !llvm.array<1 x ptr>
// ROWS: llvm.insertvalue %{{.*}}, %{{.*}}[1] : !llvm.struct<(array<1 x ptr>, array<1 x ptr>)>
// ROWS: llvm.return
module attributes {sinter.default_data = "/data/mini"} {
  llvm.func @sinter_k0(%arg0: !llvm.ptr) {
    llvm.return
  }
  llvm.func @_mlir_ciface_sinter_k0(%arg0: !llvm.ptr) {
    llvm.return
  }
  llvm.func @sinter_k1(%arg0: !llvm.ptr) {
    llvm.return
  }
  llvm.func @_mlir_ciface_sinter_k1(%arg0: !llvm.ptr) {
    llvm.return
  }
  llvm.func @sinter_eval_k0(%arg0: !llvm.ptr) {
    llvm.return
  }
  llvm.func @_mlir_ciface_sinter_eval_k0(%arg0: !llvm.ptr) {
    llvm.return
  }
  sched.program @train_step attributes {role = "step", seed = 1 : i64} {
    %arena = sched.slab "arena" size 128 : !sched.slab
    %a = sched.view %arena[0] : !sched.buffer<4xf32>
    %b = sched.view %arena[64] : !sched.buffer<4xf32>
    sched.launch @sinter_k0(%a : !sched.buffer<4xf32>) -> (%b : !sched.buffer<4xf32>) {bytes = 32 : i64, extent = 1 : i64, label = "k0_tanh", symbol = "_mlir_ciface_sinter_k0"}
    sched.launch @sinter_k1(%b : !sched.buffer<4xf32>) -> (%a : !sched.buffer<4xf32>) {bytes = 32 : i64, extent = 1 : i64, label = "k1_exp", symbol = "_mlir_ciface_sinter_k1"}
    sched.result "y" "tensor" %a : !sched.buffer<4xf32>
  }
  sched.program @eval_step attributes {role = "eval", seed = 1 : i64} {
    %arena = sched.slab "arena" size 128 : !sched.slab
    %a = sched.view %arena[0] : !sched.buffer<4xf32>
    %b = sched.view %arena[64] : !sched.buffer<4xf32>
    sched.launch @sinter_eval_k0(%a : !sched.buffer<4xf32>) -> (%b : !sched.buffer<4xf32>) {bytes = 32 : i64, extent = 1 : i64, label = "k0_tanh", symbol = "_mlir_ciface_sinter_eval_k0"}
  }
}


// Tests that an object without an evaluation program has none of its
// symbols, and that the default data folder is "" without the attribute.
// EMPTY-NOT: sinter_eval
// EMPTY: llvm.mlir.global external constant @sinter_default_data("\00")
// EMPTY-NOT: sinter_eval
