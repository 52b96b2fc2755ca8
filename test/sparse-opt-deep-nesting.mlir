// Input nested deeper than MLIR's parser can recurse (its stack would
// overflow near 10,000 levels) is refused before parsing, with the file and
// line of the first bracket past the limit, whether read from a file or from
// standard input. Depth 1000 is still parsed.
// RUN: %python -c "print('// a comment\n\"t.x\"() : () -> ' + 'tuple<' * 20000 + 'i32' + '>' * 20000)" > %t.deep.mlir
// RUN: not sparse-opt %t.deep.mlir 2>&1 | FileCheck %s --check-prefix=FILE
// RUN: not sparse-opt < %t.deep.mlir 2>&1 | FileCheck %s --check-prefix=STDIN
// RUN: %python -c "print('\"t.x\"() : () -> ' + 'tuple<' * 999 + 'i32' + '>' * 999)" > %t.ok.mlir
// RUN: sparse-opt --allow-unregistered-dialect %t.ok.mlir | FileCheck %s --check-prefix=OK
// FILE: deep.mlir:2:1: error: brackets nested more than 1000 levels deep: the parser would exhaust its stack
// STDIN: <stdin>:2:1: error: brackets nested more than 1000 levels deep
// OK: "t.x"() : () -> tuple<tuple<
