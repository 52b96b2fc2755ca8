// The torch.fx importer on test/python/models.py's MLP (linear, ReLU,
// linear) and on the 2:4-sparse linear + ReLU layer, which the sparse
// rewrites turn into one sgpu.spmm with a fused ReLU. By default the
// parameters are params (arguments after the input, named by sgpu.param);
// with --weights constants they are dense_resource constants.
// RUN: %python %S/Inputs/fx_models.py mlp --weights constants | FileCheck %s
// RUN: %python %S/Inputs/fx_models.py mlp --weights constants | sparse-opt | FileCheck %s --check-prefix=PARSED
// RUN: %python %S/Inputs/fx_models.py mlp | FileCheck %s --check-prefix=PARAMS
// RUN: %python %S/Inputs/fx_models.py mlp | sparse-opt | FileCheck %s --check-prefix=PARSED-PARAMS
// RUN: %python %S/Inputs/fx_models.py sparse-linear-relu --sparsity fc.weight=2:4 --dtype f16 --weights constants | FileCheck %s --check-prefix=SPARSE
// RUN: %python %S/Inputs/fx_models.py sparse-linear-relu --sparsity fc.weight=2:4 --dtype f16 --weights constants \
// RUN:   | sparse-opt --sgpu-slide-sparse --sgpu-fuse-epilogue | FileCheck %s --check-prefix=SPMM
// RUN: %python %S/Inputs/fx_models.py sparse-linear-relu --sparsity fc.weight=2:4 --dtype f16 | FileCheck %s --check-prefix=SPARSE-PARAM

// CHECK-LABEL: func.func @forward(%x: tensor<4x64xf32>) -> (tensor<4x32xf32>)
// CHECK: [[W1:%[a-z0-9_.]+]] = arith.constant dense_resource<fc1_weight> : tensor<128x64xf32> loc("fc1.weight")
// CHECK: [[B1:%[a-z0-9_.]+]] = arith.constant dense_resource<fc1_bias> : tensor<128xf32> loc("fc1.bias")
// CHECK: [[ACC1:%[a-z0-9_.]+]] = linalg.fill
// CHECK: [[MM1:%[a-z0-9_.]+]] = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%x, [[W1]] : tensor<4x64xf32>, tensor<128x64xf32>) outs([[ACC1]] : tensor<4x128xf32>) -> tensor<4x128xf32> loc("fc1"("models.py":{{[0-9]+}}:0))
// CHECK: [[H1:%[a-z0-9_.]+]] = linalg.generic {{.*}} ins([[MM1]], [[B1]] : tensor<4x128xf32>, tensor<128xf32>)
// CHECK: arith.addf
// CHECK: [[R1:%[a-z0-9_.]+]] = linalg.generic {{.*}} ins([[H1]] : tensor<4x128xf32>)
// CHECK: arith.maximumf
// CHECK: } -> tensor<4x128xf32> loc("relu"("models.py":{{[0-9]+}}:0))
// CHECK: [[W2:%[a-z0-9_.]+]] = arith.constant dense_resource<fc2_weight> : tensor<32x128xf32>
// CHECK: [[MM2:%[a-z0-9_.]+]] = linalg.matmul {{.*}}affine_map<(m, n, k) -> (n, k)>{{.*}} ins([[R1]], [[W2]] : tensor<4x128xf32>, tensor<32x128xf32>)
// CHECK: [[Y:%[a-z0-9_.]+]] = linalg.generic {{.*}} ins([[MM2]], %{{.*}} : tensor<4x32xf32>, tensor<32xf32>)
// CHECK: return [[Y]] : tensor<4x32xf32>
// CHECK-NOT: linalg.transpose
// CHECK: dialect_resources
// CHECK: fc1_weight: "0x04000000

// PARSED-LABEL: func.func @forward(%arg0: tensor<4x64xf32>) -> tensor<4x32xf32>
// PARSED-COUNT-2: linalg.matmul
// PARSED-NOT: linalg.transpose

// PARAMS-LABEL: func.func @forward(%x: tensor<4x64xf32>, %fc1_weight: tensor<128x64xf32> {sgpu.param = "fc1.weight"}, %fc1_bias: tensor<128xf32> {sgpu.param = "fc1.bias"}, %fc2_weight: tensor<32x128xf32> {sgpu.param = "fc2.weight"}, %fc2_bias: tensor<32xf32> {sgpu.param = "fc2.bias"}) -> (tensor<4x32xf32>)
// PARAMS: [[MM1:%[a-z0-9_.]+]] = linalg.matmul {{.*}} ins(%x, %fc1_weight : tensor<4x64xf32>, tensor<128x64xf32>)
// PARAMS: linalg.generic {{.*}} ins([[MM1]], %fc1_bias : tensor<4x128xf32>, tensor<128xf32>)
// PARAMS: linalg.matmul {{.*}} ins({{%[a-z0-9_.]+}}, %fc2_weight : tensor<4x128xf32>, tensor<32x128xf32>)
// PARAMS-NOT: dense_resource

// PARSED-PARAMS-LABEL: func.func @forward(%arg0: tensor<4x64xf32>, %arg1: tensor<128x64xf32> {sgpu.param = "fc1.weight"}, %arg2: tensor<128xf32> {sgpu.param = "fc1.bias"}, %arg3: tensor<32x128xf32> {sgpu.param = "fc2.weight"}, %arg4: tensor<32xf32> {sgpu.param = "fc2.bias"}) -> tensor<4x32xf32>
// PARSED-PARAMS-COUNT-2: linalg.matmul

// SPARSE-LABEL: func.func @forward(%x: tensor<128x256xf16>) -> (tensor<128x512xf16>)
// SPARSE: [[W:%[a-z0-9_.]+]] = arith.constant dense_resource<fc_weight> : tensor<512x256xf16, #sgpu.nm<2:4>>
// SPARSE: linalg.matmul {{.*}} ins(%x, [[W]] : tensor<128x256xf16>, tensor<512x256xf16, #sgpu.nm<2:4>>)
// SPARSE: arith.maximumf

// As a param the sparse weight's type carries its pattern (checked when bound).
// SPARSE-PARAM-LABEL: func.func @forward(%x: tensor<128x256xf16>, %fc_weight: tensor<512x256xf16, #sgpu.nm<2:4>> {sgpu.param = "fc.weight"}) -> (tensor<128x512xf16>)
// SPARSE-PARAM: linalg.matmul {{.*}} ins(%x, %fc_weight : tensor<128x256xf16>, tensor<512x256xf16, #sgpu.nm<2:4>>)
// SPARSE-PARAM-NOT: dense_resource

// SPMM-LABEL: func.func @forward(
// SPMM: [[P:%[a-z0-9_.]+]] = sgpu.assemble
// SPMM: sgpu.spmm %arg0, [[P]] {activation = #sgpu.activation<relu>} : tensor<128x256xf16>, !sgpu.compressed<512x256xf16, #sgpu.nm<2:4>> -> tensor<128x512xf16>
// SPMM-NOT: linalg.matmul
// SPMM-NOT: linalg.generic
