// RUN: sinter-opt %s --sinter-lower-cpu-kernels --sinter-verify-lowered | FileCheck %s
// RUN: sinter-opt %s --sinter-lower-cpu-kernels="min-elements-to-split=1024" | FileCheck %s --check-prefix=SPLIT

// Tests that each launch becomes a kernel entry with the uniform signature
// (one byte buffer per slab, the launch's words, then begin and end) that
// cuts the launch's buffers out of the slabs at the offsets its words give
// and calls a body; that the launch then names the entry and carries its
// extent, bytes, label, the symbol the runtime calls, the ops it computes
// (sched.origins) and its words (`args`: its places' offsets); that the
// bodies of the 16K-element tanh kernels (k0 twice, and k1, which computes
// the same) are one body, marked shared because two entries call it: k0's
// first launch reads the io slab, the other two run arena to arena and name
// one entry; that the small reduction launched twice on the same slabs has
// one entry and a body of its own (not shared: it is inlined there); and
// that the sched.kernels are gone.
// The origins, printed first as aliases: each kernel's ops, named, at
// their own places.
// CHECK: #[[TANH0:loc[0-9]*]] = loc("tanh"(#loc{{[0-9]*}}))
// CHECK: #[[SUM:loc[0-9]*]] = loc("reduce_sum"(#loc{{[0-9]*}}))
// CHECK-NOT: sched.kernel
// CHECK-LABEL: sched.program @f
// CHECK: sched.launch @sinter_k0(%x : {{.*}}) -> (%[[A:.*]] : {{.*}}) {args = array<i64: 0, 0>, bytes = 131072 : i64, extent = 1 : i64, label = "k0_tanh", sched.origins = [#[[TANH0]]], symbol = "_mlir_ciface_sinter_k0"}
// CHECK: sched.launch @sinter_k1({{.*}}) {args = array<i64: 0, 65536>, bytes = 131072 : i64, extent = 1 : i64, label = "k1_tanh", sched.origins = [#loc{{[0-9]*}}], symbol = "_mlir_ciface_sinter_k1"}
// CHECK: sched.launch @sinter_k1({{.*}}) {args = array<i64: 65536, 131072>, {{.*}}label = "k0_tanh", sched.origins = [#[[TANH0]]], symbol = "_mlir_ciface_sinter_k1"}
// CHECK: sched.launch @sinter_k2({{.*}}) {args = array<i64: 131072, 65536>, bytes = 20 : i64, extent = 1 : i64, label = "k2_reduce_sum", sched.origins = [#[[SUM]]], symbol = "_mlir_ciface_sinter_k2"}
// CHECK: sched.launch @sinter_k2({{.*}}) {args = array<i64: 0, 65600>, {{.*}}symbol = "_mlir_ciface_sinter_k2"}
// CHECK: func.func private @[[BODY:sinter_k0_body]](%arg0: memref<?xi8> {llvm.noalias}, %arg1: memref<?xi8> {llvm.noalias}, %arg2: index, %arg3: index) attributes {sinter.shared_body}
// CHECK: linalg.generic
// CHECK: math.tanh
// CHECK-LABEL: func.func @sinter_k0(%arg0: memref<?xi8>, %arg1: memref<?xi8>, %arg2: memref<?xi8>, %arg3: memref<?xi8>, %arg4: memref<?xi8>, %arg5: memref<?xi64>, %arg6: index, %arg7: index) attributes {llvm.emit_c_interface, sched.kernel_args = 2 : i64}
// CHECK: %[[W0:.*]] = memref.load %arg5[%c0{{.*}}] : memref<?xi64>
// CHECK: %[[S0:.*]] = arith.index_cast %[[W0]] : i64 to index
// CHECK: memref.view %arg3[%[[S0]]][%{{.*}}] : memref<?xi8> to memref<?xi8>
// CHECK: %[[W1:.*]] = memref.load %arg5[%c1{{.*}}] : memref<?xi64>
// CHECK: %[[S1:.*]] = arith.index_cast %[[W1]] : i64 to index
// CHECK: memref.view %arg0[%[[S1]]][%{{.*}}] : memref<?xi8> to memref<?xi8>
// CHECK: call @[[BODY]](%{{.*}}, %{{.*}}, %arg6, %arg7)
// CHECK-NOT: func.func private @sinter_k1_body
// CHECK-LABEL: func.func @sinter_k1(
// CHECK: memref.view %arg0
// CHECK: memref.view %arg0
// CHECK: call @[[BODY]](
// CHECK-NOT: @sinter_k0_1
// CHECK-LABEL: func.func private @sinter_k2_body(
// CHECK-NOT: sinter.shared_body
// CHECK: linalg.fill
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
// CHECK-LABEL: func.func @sinter_k2(
// CHECK: call @sinter_k2_body(
// CHECK-NOT: func.func

// With threads allowed from 1024 elements, the tanh kernels split their
// flattened 16384 elements.
// SPLIT: sched.launch @sinter_k0({{.*}}extent = 16384 : i64
sched.kernel @k0(%a: tensor<128x128xf32>) -> tensor<128x128xf32> attributes {kind = "loop"} {
  %0 = sgraph.tanh %a : tensor<128x128xf32>
  sched.yield %0 : tensor<128x128xf32>
}
sched.kernel @k1(%a: tensor<128x128xf32>) -> tensor<128x128xf32> attributes {kind = "loop"} {
  %0 = sgraph.tanh %a : tensor<128x128xf32>
  sched.yield %0 : tensor<128x128xf32>
}
sched.kernel @k2(%a: tensor<4xf32>) -> tensor<f32> attributes {kind = "reduction"} {
  %0 = sgraph.reduce_sum %a axes = [0] : (tensor<4xf32>) -> tensor<f32>
  sched.yield %0 : tensor<f32>
}
sched.program @f attributes {role = "step", seed = 0 : i64} {
  %arena = sched.slab "arena" size 196608 : !sched.slab
  %io = sched.slab "io" size 65664 : !sched.slab
  %x = sched.view %io[0] {name = "x"} : !sched.buffer<128x128xf32>
  %s = sched.view %io[65536] {name = "s"} : !sched.buffer<f32>
  sched.argument "x" "input" %x : !sched.buffer<128x128xf32>
  %a = sched.view %arena[0] : !sched.buffer<128x128xf32>
  %b = sched.view %arena[65536] : !sched.buffer<128x128xf32>
  %c = sched.view %arena[131072] : !sched.buffer<128x128xf32>
  %c4 = sched.view %arena[131072] aliases(%c : !sched.buffer<128x128xf32>) : !sched.buffer<4xf32>
  %a4 = sched.view %arena[0] aliases(%a : !sched.buffer<128x128xf32>) : !sched.buffer<4xf32>
  %s2 = sched.view %io[65600] {name = "s2"} : !sched.buffer<f32>
  sched.launch @k0(%x : !sched.buffer<128x128xf32>) -> (%a : !sched.buffer<128x128xf32>)
  sched.launch @k1(%a : !sched.buffer<128x128xf32>) -> (%b : !sched.buffer<128x128xf32>)
  sched.launch @k0(%b : !sched.buffer<128x128xf32>) -> (%c : !sched.buffer<128x128xf32>)
  sched.launch @k2(%c4 : !sched.buffer<4xf32>) -> (%s : !sched.buffer<f32>)
  sched.launch @k2(%a4 : !sched.buffer<4xf32>) -> (%s2 : !sched.buffer<f32>)
  sched.result "s" "metric" %s : !sched.buffer<f32>
  sched.result "s2" "metric" %s2 : !sched.buffer<f32>
}
