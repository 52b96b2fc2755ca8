// The CUDA-core TwELL consumer in several passes over the neurons
// (convert-sgpu-to-gpu twell-passes): pass p of P launches the same kernel
// on tiles [p T / P, (p + 1) T / P) (index constants of the launch), the
// rows' f32 partial sums wait in a buffer of the program, and only the
// last pass writes y. One pass keeps the kernel's one-launch form.
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="twell-passes=3" | FileCheck %s
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="twell-passes=9" | FileCheck %s --check-prefix=CAP
// RUN: sparse-opt %s -split-input-file -convert-sgpu-to-gpu="twell-pack=kernel" | FileCheck %s --check-prefix=AUTO
// RUN: not sparse-opt %s -convert-sgpu-to-gpu="twell-passes=65" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not sparse-opt %s -convert-sgpu-to-gpu="twell-passes=-1" 2>&1 | FileCheck %s --check-prefix=BAD

// M = 16, F = 1024, tile 256: 4 tiles; three passes take tiles [0, 1),
// [1, 2) and [2, 4).
// CHECK-LABEL: func.func @gated
// CHECK: %[[Y:.*]] = memref.alloc() : memref<16x64xbf16>
// CHECK: %[[PART:.*]] = memref.alloc() : memref<16x64xf32>
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_0 {{.*}} args({{.*}}, %[[Y]] : memref<16x64xbf16>, %[[PART]] : memref<16x64xf32>, %c0{{(_[0-9]+)?}} : index, %c1{{(_[0-9]+)?}} : index)
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_0 {{.*}} args({{.*}}, %[[Y]] : memref<16x64xbf16>, %[[PART]] : memref<16x64xf32>, %c1{{(_[0-9]+)?}} : index, %c2{{(_[0-9]+)?}} : index)
// CHECK: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_0 {{.*}} args({{.*}}, %[[Y]] : memref<16x64xbf16>, %[[PART]] : memref<16x64xf32>, %c2{{(_[0-9]+)?}} : index, %c4{{(_[0-9]+)?}} : index)
// CHECK-NOT: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_0
// The kernel: a pass after the first loads the partial sums; a pass before
// the last stores them (f32), the last one rounds into y.
// CHECK: gpu.func @sgpu_twell_ffn_0({{.*}}: memref<16x64xbf16>, %[[KPART:.*]]: memref<16x64xf32>, %[[T0:.*]]: index, %[[T1:.*]]: index)
// CHECK: %[[LATER:.*]] = arith.cmpi ult, %{{.*}}, %[[T0]] : index
// CHECK: scf.if %[[LATER]] -> (vector<8xf32>)
// CHECK: vector.load %[[KPART]]
// CHECK: %[[NOTLAST:.*]] = arith.cmpi ult, %[[T1]], %{{.*}} : index
// CHECK: scf.if %[[NOTLAST]] {
// CHECK: vector.store %{{.*}}, %[[KPART]]
// CHECK: } else {
// CHECK: arith.truncf %{{.*}} : vector<8xf32> to vector<8xbf16>
// CHECK: vector.store
// With more passes asked than tiles, one pass per tile.
// CAP-LABEL: func.func @gated
// CAP-COUNT-4: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_0
// CAP-NOT: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_0
// Automatic: 256 KiB of weight rows are one pass.
// AUTO-LABEL: func.func @gated
// AUTO: %[[Y:.*]] = memref.alloc() : memref<16x64xbf16>
// AUTO-NOT: xf32>
// AUTO: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_0 {{.*}} args({{.*}}, %[[Y]] : memref<16x64xbf16>)
// AUTO-NOT: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_0
// BAD: invalid convert-sgpu-to-gpu option: twell-passes={{-1|65}} is not 0 (auto) or 1..64
func.func @gated(%h: tensor<16x1024xbf16>, %x: tensor<16x64xbf16>, %wu: tensor<1024x64xbf16>,
                 %wd: tensor<64x1024xbf16>) -> tensor<16x64xbf16> {
  %p = sgpu.twell_pack %h : tensor<16x1024xbf16> -> !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd up(%x, %wu : tensor<16x64xbf16>, tensor<1024x64xbf16>) : !sgpu.twell<16x1024xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<64x1024xbf16> -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

// Automatic at d = 2048, F = 14336 (gated bf16: 117 MB of weight rows, 4 KiB
// rows): three passes over the 56 tiles, [0, 18), [18, 37), [37, 56).
// AUTO-LABEL: func.func @large
// AUTO: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_0 {{.*}} %c0{{(_[0-9]+)?}} : index, %c18{{(_[0-9]+)?}} : index)
// AUTO: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_0 {{.*}} %c18{{(_[0-9]+)?}} : index, %c37{{(_[0-9]+)?}} : index)
// AUTO: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_0 {{.*}} %c37{{(_[0-9]+)?}} : index, %c56{{(_[0-9]+)?}} : index)
// AUTO-NOT: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_0
// CAP-LABEL: func.func @large
// CHECK-LABEL: func.func @large
// CHECK-COUNT-3: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_0
func.func @large(%h: tensor<16x14336xbf16>, %x: tensor<16x2048xbf16>, %wu: tensor<14336x2048xbf16>,
                 %wd: tensor<2048x14336xbf16>) -> tensor<16x2048xbf16> {
  %p = sgpu.twell_pack %h : tensor<16x14336xbf16> -> !sgpu.twell<16x14336xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd up(%x, %wu : tensor<16x2048xbf16>, tensor<14336x2048xbf16>) : !sgpu.twell<16x14336xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<2048x14336xbf16> -> tensor<16x2048xbf16>
  return %y : tensor<16x2048xbf16>
}

// -----

// Automatic at d = 4096, F = 14336 (8 KiB rows): one pass, where more
// measured slower at 0.5% active.
// AUTO-LABEL: func.func @wide
// AUTO: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_0
// AUTO-NOT: gpu.launch_func @sgpu_kernels::@sgpu_twell_ffn_0
func.func @wide(%h: tensor<16x14336xbf16>, %x: tensor<16x4096xbf16>, %wu: tensor<14336x4096xbf16>,
                %wd: tensor<4096x14336xbf16>) -> tensor<16x4096xbf16> {
  %p = sgpu.twell_pack %h : tensor<16x14336xbf16> -> !sgpu.twell<16x14336xbf16, #sgpu.twell<tile = 256, compression = 4>>
  %y = sgpu.twell_ffn %p, %wd up(%x, %wu : tensor<16x4096xbf16>, tensor<14336x4096xbf16>) : !sgpu.twell<16x14336xbf16, #sgpu.twell<tile = 256, compression = 4>>, tensor<4096x14336xbf16> -> tensor<16x4096xbf16>
  return %y : tensor<16x4096xbf16>
}
