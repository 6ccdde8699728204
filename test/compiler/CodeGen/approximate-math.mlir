// RUN: sinter-opt %s --sinter-approximate-math | FileCheck %s

// Tests that f32 exp, tanh and erf become polynomial approximations (plain
// arithmetic LLVM vectorizes) and no libm call is left.
// CHECK-LABEL: func.func @f(
// CHECK-NOT: math.exp
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK: math.fma
// CHECK: return
func.func @f(%x: f32) -> (f32, f32, f32) {
  %0 = math.exp %x : f32
  %1 = math.tanh %x : f32
  %2 = math.erf %x : f32
  return %0, %1, %2 : f32, f32, f32
}
