// examples/rmsnorm_mlp_block.mlir written with sgpu ops: the dense matmuls
// as sgpu.matmul (ReLU in the first one's epilogue) and the residual add as
// arith.addf on tensors.
func.func @block(%x: tensor<16x256xf16>, %g: tensor<256xf16>, %w1: tensor<512x256xf16>, %w2: tensor<256x512xf16>) -> tensor<16x256xf16> {
  %n = sgpu.rms_norm %x, %g {epsilon = 1.0e-05 : f32} : tensor<16x256xf16>, tensor<256xf16> -> tensor<16x256xf16>
  %h = sgpu.matmul %n, %w1 {activation = #sgpu.activation<relu>} : tensor<16x256xf16>, tensor<512x256xf16> -> tensor<16x512xf16>
  %y = sgpu.matmul %h, %w2 : tensor<16x512xf16>, tensor<256x512xf16> -> tensor<16x256xf16>
  %r = arith.addf %x, %y : tensor<16x256xf16>
  return %r : tensor<16x256xf16>
}
