/*===- sparse-opt-c/Compiler.h - C API of the SparseOpt compiler --*- C -*-===*\
|*                                                                            *|
|* Part of the SparseOpt project.                                             *|
|*                                                                            *|
|*===----------------------------------------------------------------------===*|
|*                                                                            *|
|* The stable boundary between the compiler and other languages (Python      *|
|* ctypes in python/sparse_opt): parse MLIR text, run pass pipelines, print   *|
|* the result and compile a module into a runtime artifact directory.        *|
|* Library: libsparseopt_compiler.so (links libMLIR.so).                      *|
|*                                                                            *|
|* Conventions                                                                *|
|*  - Functions that can fail return an int status: 0 on success, nonzero   *|
|*    on failure. Nothing aborts, exits or prints.                            *|
|*  - Diagnostics (errors, warnings, remarks and their notes) are collected  *|
|*    by the compiler and read with sparseopt_compiler_take_diagnostics().   *|
|*    A failure always leaves at least one error there.                       *|
|*  - Strings returned as `char *` are owned by the caller, who frees them   *|
|*    with sparseopt_string_free().                                           *|
|*  - A compiler and its modules are used by one thread at a time. Several   *|
|*    compilers may be used from different threads.                          *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef SPARSEOPT_C_COMPILER_H
#define SPARSEOPT_C_COMPILER_H

#include <stddef.h>

/* The shared library is built with hidden visibility; only these entry points
 * are exported. */
#if defined(__GNUC__)
#define SPARSEOPT_COMPILER_EXPORT __attribute__((visibility("default")))
#else
#define SPARSEOPT_COMPILER_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* A compiler: owns an MLIR context holding every dialect, extension, pass and
 * pipeline that the sparse-opt driver registers, plus its diagnostics. */
typedef struct sparseopt_compiler_s *sparseopt_compiler;

/* A parsed module, owned by the compiler that parsed it. */
typedef struct sparseopt_ir_s *sparseopt_ir;

/* Creates a compiler into *out. Returns nonzero only when out is NULL or
 * memory runs out. */
SPARSEOPT_COMPILER_EXPORT int sparseopt_compiler_create(sparseopt_compiler *out);

/* Destroys the compiler and every module it still owns. NULL is a no-op. */
SPARSEOPT_COMPILER_EXPORT void sparseopt_compiler_destroy(sparseopt_compiler c);

/* The diagnostics reported since the previous call, as text, one per line:
 *
 *   <file>:<line>:<col>: <severity>: <message>
 *
 * with <severity> one of error, warning, remark; each note of a diagnostic
 * follows it on its own line indented by two spaces ("  <file>:...: note:
 * ..."). A location without a file is written "<unknown>:0:0". A message
 * spanning several lines continues on lines indented by four spaces.
 * Returns "" when there is nothing new, NULL only for a NULL compiler or
 * when memory runs out. The caller frees the string. */
SPARSEOPT_COMPILER_EXPORT char *
sparseopt_compiler_take_diagnostics(sparseopt_compiler c);

/* Parses (and verifies) `length` bytes of MLIR text; `filename` (may be NULL:
 * "<string>") names it in locations. Several top-level operations are
 * wrapped in a builtin.module. On success *out is a new module. */
SPARSEOPT_COMPILER_EXPORT int sparseopt_ir_parse(sparseopt_compiler c,
                                                 const char *text,
                                                 size_t length,
                                                 const char *filename,
                                                 sparseopt_ir *out);

/* Reads and parses the file at `path` (as sparseopt_ir_parse, named by its
 * path). A file that cannot be read is an error diagnostic. */
SPARSEOPT_COMPILER_EXPORT int sparseopt_ir_parse_file(sparseopt_compiler c,
                                                      const char *path,
                                                      sparseopt_ir *out);

/* Frees the module. NULL is a no-op. Its compiler must still exist. */
SPARSEOPT_COMPILER_EXPORT void sparseopt_ir_destroy(sparseopt_ir ir);

/* Runs the verifier on the module. */
SPARSEOPT_COMPILER_EXPORT int sparseopt_ir_verify(sparseopt_ir ir);

/* Runs a textual pass pipeline on the module, e.g.
 * "sgpu-slide-sparse,canonicalize", "func.func(cse)" or
 * "sgpu-compile{chip=sm_90a output-dir=/tmp/x}". A pipeline without an
 * anchor is anchored on builtin.module; "builtin.module(...)" is accepted
 * too. The IR is verified after each pass. The module is changed in place;
 * on failure it may be partially transformed. A pipeline that does not
 * parse is an error diagnostic located in the pipeline text
 * ("<pipeline>:1:<col>"). */
SPARSEOPT_COMPILER_EXPORT int sparseopt_ir_run_pipeline(sparseopt_ir ir,
                                                        const char *pipeline);

/* Prints the module (in the generic form when generic != 0). Returns NULL
 * only for a NULL module or when memory runs out. The caller frees. */
SPARSEOPT_COMPILER_EXPORT char *sparseopt_ir_print(sparseopt_ir ir,
                                                   int generic);

/* Runs sgpu-compile{chip features} on the module, then writes its artifacts
 * (sparseopt_ir_write_artifacts): kernels.ptx, program.txt, signature.json,
 * const<N>.bin and summary.txt in output_dir (created if missing). chip / features may be NULL for the
 * defaults sm_90a / +ptx85. The three strings must not contain spaces,
 * quotes or braces (that is an error diagnostic). */
SPARSEOPT_COMPILER_EXPORT int sparseopt_ir_compile(sparseopt_ir ir,
                                                   const char *chip,
                                                   const char *features,
                                                   const char *output_dir);

/* Writes the artifacts of a module that sgpu-compile has compiled (its
 * host function and gpu.binary of PTX) into output_dir, created if
 * missing: the translation that follows the pipeline. Returns 0, or 1 with
 * the reasons as diagnostics (a module not compiled, an op the program
 * format cannot express, a directory that cannot be written). */
SPARSEOPT_COMPILER_EXPORT int sparseopt_ir_write_artifacts(sparseopt_ir ir,
                                                           const char *output_dir);

/* Frees a string returned by this API. NULL is a no-op. */
SPARSEOPT_COMPILER_EXPORT void sparseopt_string_free(char *s);

/* The compiler's version, e.g. "sparse-opt 0.1 (MLIR 22)". Static storage. */
SPARSEOPT_COMPILER_EXPORT const char *sparseopt_compiler_version(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SPARSEOPT_C_COMPILER_H */
