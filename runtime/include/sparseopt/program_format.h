/*===- sparseopt/program_format.h - the version of program.txt ------------===*
 *
 * The version of the program format (program.txt, documented in
 * sparseopt/runtime.h) that the compiler writes and the runtime reads. The
 * two share this number so that neither can move alone.
 *
 * Version 2 closes every program with an `end` line: a file cut short (a
 * partial copy, a full disk) is refused instead of parsing as a shorter,
 * valid program. Version 3 adds persistent grids, sized when the program
 * loads on its device (`grid persistent:<units>:<cluster>:<reserved> 1 1`).
 * Version 4 adds programmatic launches (`smem <bytes> pdl args ...`): the
 * kernel may start while the step before it finishes, and waits for that
 * step's results itself (`griddepcontrol.wait`).
 * The runtime reads versions SPARSEOPT_PROGRAM_OLDEST_VERSION up to
 * SPARSEOPT_PROGRAM_VERSION; the compiler writes SPARSEOPT_PROGRAM_VERSION.
 *
 *===----------------------------------------------------------------------===*/
#ifndef SPARSEOPT_PROGRAM_FORMAT_H
#define SPARSEOPT_PROGRAM_FORMAT_H

#define SPARSEOPT_PROGRAM_VERSION 4
#define SPARSEOPT_PROGRAM_OLDEST_VERSION 2
/* The first version with persistent grids. */
#define SPARSEOPT_PROGRAM_PERSISTENT_GRID_VERSION 3
/* The first version with programmatic launches. */
#define SPARSEOPT_PROGRAM_PDL_VERSION 4

/* The launch-line key (between `smem <bytes>` and `args`) of a kernel that
 * may be launched programmatically: it calls `griddepcontrol.wait` before it
 * touches memory that an earlier step writes or reads (it may read what
 * never changes during a run, such as a prepared weight, before), and
 * `griddepcontrol.launch_dependents` after. */
#define SPARSEOPT_LAUNCH_PDL_KEY "pdl"

/* The prefix of a launch's grid x that the runtime sizes at load time. */
#define SPARSEOPT_PERSISTENT_GRID_PREFIX "persistent:"

/* The directives: the first word of each line. The writer
 * (lib/Transforms/EmitArtifacts.cpp) and the reader
 * (runtime/lib/Manifest.cpp) spell them only through these names, and a
 * test (test/python/test_program_schema.py) compiles programs that use
 * every one and reads each back. Lines starting with '#' are comments. */
#define SPARSEOPT_DIRECTIVE_HEADER "sparseopt-program"
#define SPARSEOPT_DIRECTIVE_MODULE "module"
#define SPARSEOPT_DIRECTIVE_BUFFER "buffer"
#define SPARSEOPT_DIRECTIVE_ARENA "arena"
#define SPARSEOPT_DIRECTIVE_STAT "stat"
#define SPARSEOPT_DIRECTIVE_STAGE "stage"
#define SPARSEOPT_DIRECTIVE_LAUNCH "launch"
#define SPARSEOPT_DIRECTIVE_GEMM "gemm"
#define SPARSEOPT_DIRECTIVE_ATTENTION "attention"
#define SPARSEOPT_DIRECTIVE_ALLREDUCE "allreduce"
#define SPARSEOPT_DIRECTIVE_WAIT "wait"
#define SPARSEOPT_DIRECTIVE_CHECK "check"
#define SPARSEOPT_DIRECTIVE_END "end"

#endif /* SPARSEOPT_PROGRAM_FORMAT_H */
