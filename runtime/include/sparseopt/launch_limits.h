/*===- sparseopt/launch_limits.h - what a launch line may ask for ---------===*
 *
 * CUDA's launch limits (cuLaunchKernel on sm_70 and newer) and the most
 * dynamic shared memory a block can opt in to on any GPU the runtime
 * supports (227 KiB on sm_90 and sm_100). The runtime checks every launch
 * line of a program against them when it parses it; the compiler checks
 * the launches it writes, so it never writes a program the runtime refuses.
 * A device with less opt-in shared memory is checked when a program loads.
 *
 *===----------------------------------------------------------------------===*/
#ifndef SPARSEOPT_LAUNCH_LIMITS_H
#define SPARSEOPT_LAUNCH_LIMITS_H

#define SPARSEOPT_MAX_GRID_X 2147483647u
#define SPARSEOPT_MAX_GRID_YZ 65535u
#define SPARSEOPT_MAX_BLOCK_THREADS 1024u
#define SPARSEOPT_MAX_BLOCK_Z 64u
#define SPARSEOPT_MAX_SHARED_BYTES 232448u

#endif /* SPARSEOPT_LAUNCH_LIMITS_H */
