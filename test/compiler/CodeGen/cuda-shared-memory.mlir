// REQUIRES: cuda-toolkit
// RUN: rm -rf %t.ptx && sinterc %s --entry=colsum --target=cuda --cuda-ptx-dir=%t.ptx -o %t.bin
// RUN: FileCheck %s < %t.ptx/sm_90.ptx

// A column kernel's shared array (cuda-kernels.mlir, COLUMNS), marked
// sched.cuda_workgroup in the lowered phase, becomes a workgroup
// attribution of the outlined gpu.func: the kernel's static shared memory
// in PTX, written, synchronized, read.
// CHECK: .shared .align 4 .b8 __wg_sinter_k0_0[1024];
// CHECK: st.shared.f32
// CHECK: bar.sync
// CHECK: ld.shared.f32

func.func @colsum(%x: tensor<64x96xf32> {sgraph.input = "x"})
    -> (tensor<96xf32> {sgraph.name = "s"}) {
  %s = sgraph.reduce_sum %x axes = [0] : (tensor<64x96xf32>) -> tensor<96xf32>
  return %s : tensor<96xf32>
}
