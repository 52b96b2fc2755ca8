// RUN: sparse-opt %s -split-input-file -sgpu-emit-artifacts="output-dir=%t" -verify-diagnostics
// RUN: not sparse-opt %s -split-input-file -sgpu-emit-artifacts 2>&1 | FileCheck %s --check-prefix=NODIR
// NODIR: error: sgpu-emit-artifacts needs output-dir=<directory>

func.func @host_compute(%x: memref<4xf32>) -> memref<4xf32> {
  %y = memref.alloc() : memref<4xf32>
  // expected-error @+1 {{'memref.copy' cannot run on the host: the runtime program only allocates buffers and launches generated kernels}}
  memref.copy %x, %y : memref<4xf32> to memref<4xf32>
  return %y : memref<4xf32>
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
