func.func @axpy(%a: tensor<f32> {sgraph.input = "a"}, %x: tensor<f32> {sgraph.input = "x"}, %y: tensor<f32> {sgraph.input = "y"}) -> tensor<f32> {
  %0 = sgraph.mul %a, %x : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %1 = sgraph.add %0, %y : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %1 : tensor<f32>
}
