// RUN: sparse-opt %s -split-input-file -sgpu-emit-artifacts="output-dir=%t" -verify-diagnostics
// RUN: not sparse-opt %s -split-input-file -sgpu-emit-artifacts 2>&1 | FileCheck %s --check-prefix=NODIR
// NODIR: error: sgpu-emit-artifacts needs output-dir=<directory>

func.func @host_compute(%x: memref<4xf32>) -> memref<4xf32> {
  %y = memref.alloc() : memref<4xf32>
  // expected-error @+1 {{'memref.copy' cannot run on the host: the runtime program only allocates buffers, launches generated kernels, calls library GEMMs and attention (sgpu.gemm_call, sgpu.attention_call) and runs collectives (sgpu.all_reduce_call / _sync)}}
  memref.copy %x, %y : memref<4xf32> to memref<4xf32>
  return %y : memref<4xf32>
}

// -----

// A program stat is a counter the runtime reads after a run: a temp, not a
// result.
func.func @stat_result() -> memref<1xi32> {
  // expected-error @+1 {{a program stat must be a temporary buffer, not a result}}
  %y = memref.alloc() {sgpu.stat = "count"} : memref<1xi32>
  return %y : memref<1xi32>
}

// -----

func.func @return_input(%x: memref<4xf32>) -> memref<4xf32> {
  // expected-error @+1 {{result #0 must be a buffer the function allocates}}
  return %x : memref<4xf32>
}

// -----

// expected-error @+1 {{buffer of type 'memref<?xf32>' is not a statically shaped, contiguous memref}}
func.func @dynamic(%x: memref<?xf32>) {
  return
}

// -----

// expected-error @+1 {{several public host functions; choose one with entry=<name>}}
module {
  func.func @a() { return }
  func.func @b() { return }
}

// -----

// A tensor map describes a buffer of the program or a reshape of one (the
// runtime encodes it from the buffer's address), not a view into one:
// reported at the map, before the view itself.
module attributes {gpu.container_module} {
  func.func @tensor_map_of_view(%x: memref<8192xi8>) {
    %c1 = arith.constant 1 : index
    %c0 = arith.constant 0 : index
    %view = memref.view %x[%c0][] : memref<8192xi8> to memref<4096xf16>
    // expected-error @+1 {{the source of a tensor map must be a buffer of the runtime program (an argument of the host function, memref.alloc or memref.get_global) or a reshape of one (memref.expand_shape, memref.collapse_shape, memref.cast)}}
    %m = sgpu.tensor_map %view box [256] swizzle 0 : memref<4096xf16> -> !llvm.ptr
    gpu.launch_func @m::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%m : !llvm.ptr)
    return
  }
  gpu.module @m {
    gpu.func @k(%a: !llvm.ptr) kernel attributes {sgpu.tensor_map_args = array<i64: 0>} { gpu.return }
  }
}

// -----

module attributes {gpu.container_module} {
  func.func @float_argument() {
    %c1 = arith.constant 1 : index
    %f = arith.constant 1.5 : f32
    // expected-error @+1 {{kernel argument is neither a known buffer, an sgpu.tensor_map nor an integer constant}}
    gpu.launch_func @m::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%f : f32)
    return
  }
  gpu.module @m {
    gpu.func @k(%a: f32) kernel { gpu.return }
  }
}

// -----

// A reshape into a type that is not a static buffer stays a host operation.
func.func @dynamic_cast(%x: memref<4xf32>) {
  // expected-error @+1 {{'memref.cast' cannot run on the host: the runtime program only allocates buffers, launches generated kernels, calls library GEMMs and attention (sgpu.gemm_call, sgpu.attention_call) and runs collectives (sgpu.all_reduce_call / _sync)}}
  %d = memref.cast %x : memref<4xf32> to memref<?xf32>
  return
}

// -----

// A math op's libdevice call left unresolved (gpu-module-to-binary did not
// find the CUDA toolkit): the driver would reject the PTX only when the
// program is loaded on the GPU.
module attributes {gpu.container_module} {
  // expected-error @+1 {{the kernels call '__nv_expf', which the PTX does not define: a libdevice function for a math op that gpu-module-to-binary did not link (point CUDA_ROOT, CUDA_PATH or CUDA_HOME at a CUDA toolkit with nvvm/libdevice)}}
  gpu.binary @sgpu_kernels [#gpu.object<#nvvm.target<chip = "sm_90a">, assembly = ".version 8.5\0A.target sm_90a\0A.address_size 64\0A.extern .func  (.param .b32 func_retval0) __nv_expf\0A(\0A\09.param .b32 __nv_expf_param_0\0A)\0A;\0A.visible .entry k()\0A{\0A\09ret;\0A}\0A">]
  func.func @uses_libdevice(%x: memref<4xf32>) {
    return
  }
}

// -----

// Index elements have no size in memory (the emitter run alone; the
// pipeline reports them earlier, test/Conversion/buffer-limits.mlir).
// expected-error @+1 {{buffer of type 'memref<4xindex>' is not a statically shaped, contiguous memref of integer or float elements of at most 256 GiB}}
func.func @index_buffer(%x: memref<4xindex>) -> memref<4xindex> {
  return %x : memref<4xindex>
}
