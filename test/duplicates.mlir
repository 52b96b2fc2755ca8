// No logic copied: no run of 8 or more lines (blank lines, comments,
// include/import lines and lone punctuation aside) appears twice in the C++
// of lib/, include/, tools/ and runtime/ or the Python of python/, beyond
// the pairs listed in scripts/duplicates-allowed.txt, which may only shrink
// (scripts/check-duplicates.py).
// RUN: %python %sparse_opt_src/scripts/check-duplicates.py | FileCheck %s
// CHECK: duplicates: {{[0-9]+}} clones of 8+ lines in {{[0-9]+}} pairs of files, 0 problems
