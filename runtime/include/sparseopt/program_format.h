/*===- sparseopt/program_format.h - the version of program.txt ------------===*
 *
 * The version of the program format (program.txt, documented in
 * sparseopt/runtime.h) that the compiler writes and the runtime reads. The
 * two share this number so that neither can move alone.
 *
 * Version 2 closes every program with an `end` line: a file cut short (a
 * partial copy, a full disk) is refused instead of parsing as a shorter,
 * valid program.
 *
 *===----------------------------------------------------------------------===*/
#ifndef SPARSEOPT_PROGRAM_FORMAT_H
#define SPARSEOPT_PROGRAM_FORMAT_H

#define SPARSEOPT_PROGRAM_VERSION 2

#endif /* SPARSEOPT_PROGRAM_FORMAT_H */
