/*
 * SparseOpt runtime: a small C library over the CUDA driver API.
 *
 * It loads the PTX (or cubin) that the SparseOpt compiler writes, launches its
 * kernels, manages device memory, streams and events, and runs a compiled
 * "program": an artifact directory holding a manifest (program.txt) that lists
 * buffers, kernel launches and dense matrix products (run with cuBLASLt),
 * some of which prepare the weights ("params") once when they are bound.
 *
 * General conventions
 *  - Every function that can fail returns a sparseopt_status. Nothing aborts,
 *    exits or throws. On failure a human-readable description (CUDA error
 *    name and string, the file or kernel involved, manifest line numbers) is
 *    stored in a thread-local buffer readable with sparseopt_last_error().
 *    Successful calls leave that message unchanged.
 *  - The CUDA driver (libcuda.so.1) is loaded at run time with dlopen; the
 *    library itself does not link against it. The environment variable
 *    SPARSEOPT_CUDA_LIBRARY overrides the library name or path. cuBLASLt is
 *    likewise opened with dlopen, and only when a program with a 'gemm' line
 *    is loaded: SPARSEOPT_CUBLASLT_LIBRARY overrides it, otherwise
 *    libcublasLt.so.13, libcublasLt.so.12, libcublasLt.so and
 *    /usr/local/cuda/lib64/libcublasLt.so are tried in that order.
 *  - sparseopt_init() must be called before any function that touches the GPU;
 *    those return SPARSEOPT_ERROR_NOT_INITIALIZED otherwise. Arguments are
 *    validated first, so invalid arguments are reported as
 *    SPARSEOPT_ERROR_INVALID_ARGUMENT even before initialization.
 *  - The runtime works in the device's *primary* context, the same context the
 *    CUDA runtime (and therefore PyTorch) uses, so device pointers, streams
 *    and events can be shared with PyTorch in the same process. Each GPU call
 *    makes that context current on the calling thread if it is not already.
 *  - All functions may be called from any thread. Handles (modules, programs,
 *    streams, events) must not be destroyed while another thread uses them.
 *
 * This header is plain C (usable from C, C++ and Python ctypes).
 */
#ifndef SPARSEOPT_RUNTIME_H
#define SPARSEOPT_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define SPARSEOPT_API __declspec(dllexport)
#elif defined(__GNUC__)
#define SPARSEOPT_API __attribute__((visibility("default")))
#else
#define SPARSEOPT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Status codes and errors                                                  */
/* ------------------------------------------------------------------------ */

typedef enum sparseopt_status {
  SPARSEOPT_OK = 0,
  SPARSEOPT_ERROR_INVALID_ARGUMENT = 1, /* NULL handle/pointer, bad value */
  SPARSEOPT_ERROR_NO_DRIVER = 2,        /* libcuda.so.1 missing or unusable */
  SPARSEOPT_ERROR_NO_DEVICE = 3,        /* no CUDA device / index too large */
  SPARSEOPT_ERROR_CUDA = 4,             /* any other CUDA driver or cuBLASLt
                                           error */
  SPARSEOPT_ERROR_OUT_OF_MEMORY = 5,    /* device (or host) allocation failed */
  SPARSEOPT_ERROR_IO = 6,               /* file missing or unreadable */
  SPARSEOPT_ERROR_PARSE = 7,            /* malformed manifest */
  SPARSEOPT_ERROR_NOT_FOUND = 8,        /* kernel not found in a module */
  SPARSEOPT_ERROR_NOT_INITIALIZED = 9,  /* sparseopt_init() not called yet */
  SPARSEOPT_ERROR_NO_LIBRARY = 10,      /* a CUDA library a program needs
                                           (cuBLASLt, NCCL) is missing or
                                           unusable */
  SPARSEOPT_ERROR_WEIGHT = 11,          /* a param (weight) given to
                                           sparseopt_program_bind breaks its
                                           declared n:m sparsity */
  SPARSEOPT_ERROR_COLLECTIVE = 12       /* a communicator failed: NCCL error,
                                           bootstrap failure or timeout (the
                                           communicator is then aborted) */
} sparseopt_status;

/* The enumerator's name, e.g. "SPARSEOPT_ERROR_CUDA";
 * "SPARSEOPT_UNKNOWN_STATUS" for values outside the enum. Never NULL. */
SPARSEOPT_API const char *sparseopt_status_string(sparseopt_status s);

/* Message describing the last failure on the calling thread, or "" if no
 * call on this thread has failed. The pointer stays valid until the next
 * failing call on the same thread. Never NULL. */
SPARSEOPT_API const char *sparseopt_last_error(void);

/* ------------------------------------------------------------------------ */
/* Initialization and device                                                */
/* ------------------------------------------------------------------------ */

/* Loads the CUDA driver, calls cuInit, retains the primary context of CUDA
 * device `device` (an ordinal, 0 = first device) and makes it current on the
 * calling thread.
 * Idempotent: calling it again with the same device only makes the context
 * current on the calling thread. Calling it with a different device after a
 * successful initialization fails with SPARSEOPT_ERROR_INVALID_ARGUMENT (one
 * process uses one device). A failed call can be retried.
 * Errors: INVALID_ARGUMENT (device < 0), NO_DRIVER (driver library missing or
 * lacking an entry point), NO_DEVICE (no device, or device >= device count),
 * CUDA. */
SPARSEOPT_API sparseopt_status sparseopt_init(int device);

/* Writes the NUL-terminated device name into buf (truncated to len - 1
 * characters). Errors: INVALID_ARGUMENT (buf NULL or len 0),
 * NOT_INITIALIZED, CUDA. */
SPARSEOPT_API sparseopt_status sparseopt_device_name(char *buf, size_t len);

/* Waits for all work on the device (cuCtxSynchronize). Asynchronous kernel
 * faults surface here (or in any later synchronizing call). */
SPARSEOPT_API sparseopt_status sparseopt_synchronize(void);

/* ------------------------------------------------------------------------ */
/* Memory                                                                   */
/* ------------------------------------------------------------------------ */

/* A device address (CUdeviceptr). Values from torch.Tensor.data_ptr() are
 * valid device pointers. */
typedef uint64_t sparseopt_deviceptr;

/* Allocates `bytes` of device memory into *out. bytes == 0 succeeds and
 * stores 0. Errors: INVALID_ARGUMENT (out NULL), NOT_INITIALIZED,
 * OUT_OF_MEMORY, CUDA. */
SPARSEOPT_API sparseopt_status sparseopt_malloc(size_t bytes,
                                                sparseopt_deviceptr *out);

/* Frees memory from sparseopt_malloc. Freeing 0 is a no-op that succeeds. */
SPARSEOPT_API sparseopt_status sparseopt_free(sparseopt_deviceptr p);

/* Synchronous copies (host memory may be pageable). bytes == 0 is a no-op.
 * Errors: INVALID_ARGUMENT (NULL host pointer, or 0 device pointer),
 * NOT_INITIALIZED, CUDA. */
SPARSEOPT_API sparseopt_status sparseopt_memcpy_htod(sparseopt_deviceptr dst,
                                                     const void *src,
                                                     size_t bytes);
SPARSEOPT_API sparseopt_status sparseopt_memcpy_dtoh(void *dst,
                                                     sparseopt_deviceptr src,
                                                     size_t bytes);

/* Sets `bytes` bytes at dst to `value`. Ordered on the legacy default
 * stream; like cudaMemset it may return before the device has finished, so
 * synchronize before reading the memory from another stream. bytes == 0 is a
 * no-op. Errors: INVALID_ARGUMENT (dst 0), NOT_INITIALIZED, CUDA. */
SPARSEOPT_API sparseopt_status sparseopt_memset_d8(sparseopt_deviceptr dst,
                                                   unsigned char value,
                                                   size_t bytes);

/* ------------------------------------------------------------------------ */
/* Streams and events                                                       */
/* ------------------------------------------------------------------------ */

/* A stream handle IS the driver's CUstream (the same value as a runtime
 * cudaStream_t), so a stream made elsewhere in the process, e.g.
 * torch.cuda.current_stream().cuda_stream, can be passed directly.
 * NULL means the legacy default stream. */
typedef struct sparseopt_stream_s *sparseopt_stream;

/* Creates a new stream (CU_STREAM_DEFAULT flags: it synchronizes with the
 * legacy default stream). Errors: INVALID_ARGUMENT (out NULL),
 * NOT_INITIALIZED, CUDA. */
SPARSEOPT_API sparseopt_status sparseopt_stream_create(sparseopt_stream *out);

/* Destroys a stream from sparseopt_stream_create. NULL (the default stream)
 * is rejected with INVALID_ARGUMENT. */
SPARSEOPT_API sparseopt_status sparseopt_stream_destroy(sparseopt_stream s);

/* Waits until all work queued on s (NULL: the default stream) is done. */
SPARSEOPT_API sparseopt_status sparseopt_stream_synchronize(sparseopt_stream s);

/* An event handle IS the driver's CUevent. Events are created with timing
 * enabled. */
typedef struct sparseopt_event_s *sparseopt_event;

SPARSEOPT_API sparseopt_status sparseopt_event_create(sparseopt_event *out);
SPARSEOPT_API sparseopt_status sparseopt_event_destroy(sparseopt_event e);

/* Records e on stream s (NULL: the default stream). */
SPARSEOPT_API sparseopt_status sparseopt_event_record(sparseopt_event e,
                                                      sparseopt_stream s);

/* Waits until the work captured by the last record of e is done. */
SPARSEOPT_API sparseopt_status sparseopt_event_synchronize(sparseopt_event e);

/* Milliseconds between two recorded events into *ms. Both must have
 * completed (see sparseopt_event_synchronize), else CUDA error
 * CUDA_ERROR_NOT_READY is reported. */
SPARSEOPT_API sparseopt_status sparseopt_event_elapsed_ms(sparseopt_event start,
                                                          sparseopt_event end,
                                                          float *ms);

/* ------------------------------------------------------------------------ */
/* Modules, functions and launches                                          */
/* ------------------------------------------------------------------------ */

typedef struct sparseopt_module_s *sparseopt_module;

/* Loads a module from a NUL-terminated PTX string. The PTX is JIT-compiled
 * by the driver for the current device; on failure the JIT error log is
 * included in the last-error message. */
SPARSEOPT_API sparseopt_status sparseopt_module_load_ptx(const char *ptx,
                                                         sparseopt_module *out);

/* Loads a module from a file: PTX text, a cubin or a fatbin (the driver
 * recognizes the format from the contents). Errors: IO when the file cannot
 * be read, CUDA when the driver rejects it (with the JIT log). */
SPARSEOPT_API sparseopt_status sparseopt_module_load_file(const char *path,
                                                          sparseopt_module *out);

/* Unloads the module; its functions become invalid. */
SPARSEOPT_API sparseopt_status sparseopt_module_unload(sparseopt_module m);

/* A kernel of a module. The handle is owned by its module (never freed by
 * the caller) and stays valid until the module is unloaded; looking up the
 * same name twice returns the same handle. */
typedef struct sparseopt_function_s *sparseopt_function;

/* Errors: INVALID_ARGUMENT (NULL arguments), NOT_FOUND (no kernel `name` in
 * the module), CUDA. */
SPARSEOPT_API sparseopt_status sparseopt_module_get_function(
    sparseopt_module m, const char *name, sparseopt_function *out);

/* Launches f asynchronously on stream s (NULL: the default stream) with grid
 * and block dimensions {x, y, z} (each >= 1) and `shared_bytes` of dynamic
 * shared memory. args follows cuLaunchKernel's kernelParams: an array with
 * one pointer per kernel parameter, each pointing to the parameter's value;
 * it may be NULL for a kernel without parameters.
 * When shared_bytes exceeds 48 KiB, the function's
 * CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES is raised first.
 * Errors found at launch time (bad configuration, too many resources) are
 * returned here; faults while the kernel runs surface at a later
 * synchronization. */
SPARSEOPT_API sparseopt_status sparseopt_launch(sparseopt_function f,
                                                const unsigned grid[3],
                                                const unsigned block[3],
                                                unsigned shared_bytes,
                                                sparseopt_stream s,
                                                void **args);

/* ------------------------------------------------------------------------ */
/* Programs                                                                 */
/* ------------------------------------------------------------------------ */

/*
 * A program is what the compiler writes into an artifact directory:
 * <artifact-dir>/program.txt, a line-based manifest ('#' starts a comment,
 * blank lines are ignored, tokens are separated by spaces or tabs):
 *
 *   sparseopt-program 2                   first non-comment line; version 2
 *                                         (SPARSEOPT_PROGRAM_VERSION)
 *   module kernels.ptx                    path relative to the artifact dir;
 *                                         exactly one (optional when the
 *                                         program has gemm or allreduce
 *                                         lines and no launch)
 *   buffer <id> input <index> <bytes>     caller-provided, input slot <index>
 *   buffer <id> output <index> <bytes>    caller-provided, output slot <index>
 *   buffer <id> param <index> <bytes>     caller-provided device buffer bound
 *                                         with sparseopt_program_bind (index
 *                                         among the params, 0..P-1)
 *   buffer <id> constant <file> <bytes>   raw bytes of <file> (relative to the
 *                                         artifact dir, size must equal
 *                                         <bytes>), uploaded at load
 *   buffer <id> temp <bytes>              allocated at load, freed at destroy
 *   arena <bytes>                         at most once, before the temps
 *                                         that live in it: one allocation
 *                                         that run-stage temps share
 *   buffer <id> temp <bytes> arena <offset>
 *                                         a temp at <offset> in the arena
 *                                         (offset + bytes <= arena bytes);
 *                                         the compiler lets temps whose
 *                                         lifetimes do not overlap share
 *                                         bytes
 *   launch <kernel> grid <gx> <gy> <gz> block <bx> <by> <bz> smem <bytes>
 *          [pdl] args <arg>...            (one line); pdl (version 4): the
 *                                         kernel waits for the step before
 *                                         it itself, so it may be launched
 *                                         while that step ends
 *                                         (programmatic dependent launch;
 *                                         SPARSEOPT_PDL=0 turns it off);
 *                                         <gx> may be
 *                                         persistent:<units>:<cluster>:<reserved>
 *                                         (version 3): sized at load,
 *                                         cluster * min(units,
 *                                         (multiprocessors - reserved) /
 *                                         cluster) blocks, at least one
 *                                         cluster
 *   gemm m=<M> n=<N> k=<K> in=<f16|bf16> out=<f16|bf16|f32> x=b<id> w=b<id>
 *        y=b<id> [bias=b<id>:<f16|bf16|f32>] [act=relu]     (one line)
 *   stage prepare                         the steps after this line run at
 *                                         bind time
 *   stage run                             the steps after this line run at
 *                                         every sparseopt_program_run
 *   check b<id> param <index> pattern <n>:<m> groups <G>
 *   allreduce slot=<k> send=b<id> recv=b<id> count=<n> type=<f16|bf16|f32>
 *             op=<sum|prod|max|min|avg>   (one line)
 *   wait slot=<k>
 *   end                                   the last directive, required: a
 *                                         file without it was cut short
 *
 * Buffer ids are unique non-negative integers. Inputs, outputs and params
 * have an index space each: input indices must be exactly 0..n-1, output
 * indices 0..m-1 and param indices 0..P-1. A launch argument is b<id> (the
 * buffer's device pointer, a 64-bit parameter), i32:<value> (decimal,
 * -2^31..2^32-1), i64:<value> (decimal, signed or unsigned 64-bit),
 * f32:<value> (decimal or exponent notation, 4-byte float) or a TMA tensor
 * map:
 *
 *   tmap:b<id>:<dtype>:<d0>x<d1>...:<box0>x<box1>...:<swizzle>
 *                                         e.g. tmap:b2:f16:4096x2048:128x32:64
 *
 * a tiled CUtensorMap over buffer <id> viewed as a dense row-major tensor of
 * <dtype> (f16, bf16, f32 or i32) with dimensions d0 x d1 x ... (1 to 5 of
 * them, outermost first, each 1..2^32), copied in boxes of box0 x box1 x ...
 * elements (same order, each 1..256) with a shared-memory swizzle of 0 (none),
 * 32, 64 or 128 bytes. The innermost box extent must be a multiple of 16
 * bytes (and at most the swizzle span when swizzled), every row pitch a
 * multiple of 16 bytes below 2^40, and the tensor must fit in the buffer's
 * declared size. Out-of-bounds elements of a box read as zero. The map is
 * encoded (cuTensorMapEncodeTiled, L2 promotion 128 B) from the buffer's
 * device address when the program runs, again only when that address
 * changes, and passed by value: the kernel parameter is 128 bytes,
 * 64-byte aligned (a __grid_constant__ CUtensorMap). The buffer's address
 * must be 16-byte aligned.
 *
 * A gemm line computes Y[M,N] = act(X[M,K] * W[N,K]^T + bias[N]) with
 * cuBLASLt: X, W and Y are dense row-major matrices in buffers x, w and y (X
 * and W of element type 'in', Y of type 'out'), bias is a vector of N
 * elements of the type written after its buffer id. Products accumulate in
 * f32 and are scaled in f32 (alpha 1, beta 0: Y is overwritten); act=relu
 * applies max(0, .) after the bias. The keys are written exactly in the
 * order shown: the eight required ones, then bias and act when present.
 * M, N and K are 1..2^31-1. The types are those cuBLASLt computes with f32
 * accumulation: 'out' is 'in' or f32, and the bias has the type of 'out'
 * (f16 -> f16 or f32, bf16 -> bf16 or f32). Parsing checks the keys, the
 * values, these type rules, that the buffers are declared, that each holds
 * its operand (M*K, N*K, M*N and N elements) and that y is neither x, w nor
 * the bias. At load cuBLASLt's heuristic chooses one algorithm per line,
 * for operands aligned to 16 bytes and at most 32 MiB of workspace; a line
 * it has none for fails the load. At run the x, w, y and bias addresses
 * must be 16-byte aligned.
 *
 * The 'args' keyword is required even when no argument follows. Buffers may
 * be declared before or after the launches and gemms that use them. Temp
 * buffers are zero-filled at load (and again at each bind). Launches and
 * gemms ("steps") run in file order. Zero launches is valid.
 *
 * Collectives. An allreduce line (run stage only) reduces (op) `count`
 * elements of buffer send over the ranks of the program's communicator into buffer recv
 * (the same buffer: in place) with NCCL: the run records an event on its
 * stream, makes the communicator's stream wait for it, enqueues
 * ncclAllReduce there and records a second event, so the steps after it
 * overlap the reduction. The wait line of the same slot makes the run's
 * stream wait for that second event: the steps after the wait see the sum.
 * Every allreduce has exactly one later wait of its slot, and a slot is
 * reused only after its wait, so a run ends with every reduction joined (as
 * a CUDA graph capture needs). Parsing checks that count elements fit in
 * both buffers and that recv is neither a constant nor a param. The ranks
 * must run programs with the same sequence of allreduce lines (the compiler
 * emits them in one order for every rank). Run with a communicator given by
 * sparseopt_program_set_comm.
 *
 * Stages. Without a 'stage' line every step is a run step, enqueued by each
 * sparseopt_program_run. 'stage prepare' and 'stage run' appear at most once
 * each, prepare first, and 'stage prepare' before every step (steps before
 * any 'stage' line are run steps): the steps between them are prepare steps,
 * those after 'stage run' run steps. Prepare steps run once per
 * sparseopt_program_bind, typically compressing the params (weights) into
 * the sparse kernels' format in temp buffers that the run steps read; they
 * may use params, temps and constants, not inputs or outputs. Run steps may
 * use every buffer, params included.
 *
 * A check line (allowed only in the prepare stage) names a temp buffer of at
 * least 4 bytes and a declared param index; the pattern is 2:4 or
 * (2N-2):2N for N = 2..8 (n = m - 2, m even, 4 <= m <= 16) and G >= 1 (at
 * most 2^31-1) is the number of groups of m elements in a row of the param.
 * The prepare kernels leave 0 in the buffer's first int32 when the param
 * keeps its pattern, else 2147483647 - (row * G + group) for a group with
 * more than n nonzeros. Bind reads it after the prepare steps; see
 * sparseopt_program_bind.
 */
typedef struct sparseopt_program_s *sparseopt_program;

/* Reads and validates <artifact_dir>/program.txt and checks that the module
 * file and every constant file exist with the declared sizes. Touches no GPU
 * (no sparseopt_init needed). The result only answers the queries below;
 * running it needs sparseopt_program_load. Free it with
 * sparseopt_program_destroy.
 * Errors: INVALID_ARGUMENT, IO (manifest, module or constant file missing or
 * unreadable), PARSE (malformed manifest, a tensor map larger than its
 * buffer, a gemm operand larger than its buffer; the message is
 * "<path>/program.txt:<line>: <what is wrong>"). */
SPARSEOPT_API sparseopt_status sparseopt_program_parse(const char *artifact_dir,
                                                       sparseopt_program *out);

/* Parses as above, then (sparseopt_init must have been called) loads the
 * module, resolves every kernel, uploads the constant buffers and allocates
 * the temporary buffers. A program without params then runs its prepare
 * steps, if any (see sparseopt_program_bind), on the default stream and
 * waits for them. A program with gemm lines also opens cuBLASLt,
 * creates one cuBLASLt handle and one 32 MiB workspace, and for each gemm
 * line a matmul descriptor, its layouts and the algorithm cuBLASLt's
 * heuristic chooses. Errors: those of parse, plus NO_LIBRARY (cuBLASLt
 * cannot be opened; checked right after parsing, so also reported before
 * sparseopt_init), NOT_INITIALIZED, NOT_FOUND (a launched kernel is missing
 * from the module), OUT_OF_MEMORY, CUDA (also: no cuBLASLt algorithm for a
 * gemm line; the message names the line and its shape and types). Nothing
 * is leaked on failure. */
SPARSEOPT_API sparseopt_status sparseopt_program_load(const char *artifact_dir,
                                                      sparseopt_program *out);

/* Queries; valid on parsed and loaded programs. On a NULL program or an
 * index out of range they set the last error and return -1 (counts), 0
 * (byte sizes) or NULL (kernel name, texts). */
SPARSEOPT_API int sparseopt_program_num_inputs(sparseopt_program p);
SPARSEOPT_API int sparseopt_program_num_outputs(sparseopt_program p);
SPARSEOPT_API int sparseopt_program_num_params(sparseopt_program p);
SPARSEOPT_API size_t sparseopt_program_input_bytes(sparseopt_program p, int i);
SPARSEOPT_API size_t sparseopt_program_output_bytes(sparseopt_program p, int i);
SPARSEOPT_API size_t sparseopt_program_param_bytes(sparseopt_program p, int i);
/* The element type and shape of input, output or param i as the artifact's
 * signature.json gives them ("bf16[16, 4096]"), or "" for a program without
 * one; owned by the program. Parsing checks a signature.json against the
 * program: known element types, positive dimensions, valid param positions
 * and each tensor's bytes equal to its buffer's (a PARSE error naming the
 * tensor and the program line otherwise). */
SPARSEOPT_API const char *sparseopt_program_input_type(sparseopt_program p, int i);
SPARSEOPT_API const char *sparseopt_program_output_type(sparseopt_program p, int i);
SPARSEOPT_API const char *sparseopt_program_param_type(sparseopt_program p, int i);
SPARSEOPT_API int sparseopt_program_num_launches(sparseopt_program p);
/* The kernel name of launch i (the i-th launch line); owned by the program. */
SPARSEOPT_API const char *sparseopt_program_launch_kernel(sparseopt_program p,
                                                          int i);
/* Steps are the launch, gemm, allreduce and wait lines together, in file
 * order (the order a run enqueues them). sparseopt_program_step(p, i)
 * describes step i, owned by the program: "launch <kernel>" for a launch
 * ("launch <kernel> pdl" for a programmatic one),
 * "wait slot=<k>" for a wait, and for a gemm or an allreduce the line as
 * parsed, with every key in order and numbers in decimal, e.g.
 * "gemm m=16 n=4096 k=1024 in=f16 out=f16 x=b0 w=b1 y=b2 bias=b3:f32 act=relu"
 * or "allreduce slot=0 send=b3 recv=b4 count=65536 type=bf16 op=sum". */
SPARSEOPT_API int sparseopt_program_num_steps(sparseopt_program p);
SPARSEOPT_API const char *sparseopt_program_step(sparseopt_program p, int i);
/* The stage of step i: "prepare" or "run" (static strings). */
SPARSEOPT_API const char *sparseopt_program_step_stage(sparseopt_program p,
                                                       int i);
/* The check lines in file order; sparseopt_program_check(p, i) is check i as
 * parsed, owned by the program, e.g. "check b5 param 0 pattern 2:4 groups 16". */
SPARSEOPT_API int sparseopt_program_num_checks(sparseopt_program p);
SPARSEOPT_API const char *sparseopt_program_check(sparseopt_program p, int i);

/* Stats: counters that the run steps leave in temp buffers (a line
 * 'stat <name> b<id> <u32|u64> [of <total> [limit <fraction>]]'), e.g. the
 * TwELL pack's
 * "twell0.active_neurons" (nonzero activations of the run, of M*F) and
 * "twell0.fallback_rows" (rows that took the dense fallback, of M).
 * sparseopt_program_stat_name(p, i) is stat i's name, owned by the program
 * (NULL and the last error for an index out of range);
 * sparseopt_program_stat_total(p, i) what it counts out of (0 when the line
 * gives none, or for an index out of range). */
SPARSEOPT_API int sparseopt_program_num_stats(sparseopt_program p);
SPARSEOPT_API const char *sparseopt_program_stat_name(sparseopt_program p,
                                                      int i);
SPARSEOPT_API uint64_t sparseopt_program_stat_total(sparseopt_program p,
                                                    int i);
/* The fraction of the total above which the program is expected to lose
 * (a line's 'limit <fraction>': a TwELL layer's break-even density, which a
 * run-time guard compares the measured density with); negative when the
 * line gives none or for an index out of range. */
SPARSEOPT_API double sparseopt_program_stat_limit(sparseopt_program p, int i);
/* Waits for stream s (NULL: the default stream), where the last run was
 * enqueued, then reads stat i into *value: the counter the last completed
 * run left (0 before any run; temps are zeroed at load and bind). Not
 * allowed while s is being captured into a CUDA graph.
 * Errors: INVALID_ARGUMENT (NULL program or value, index out of range,
 * program only parsed), NOT_INITIALIZED, CUDA. */
SPARSEOPT_API sparseopt_status sparseopt_program_read_stat(
    sparseopt_program p, int i, sparseopt_stream s, uint64_t *value);

/* Binds the params of a loaded program: params[i] is the caller's device
 * pointer for param i (at least sparseopt_program_param_bytes(p, i) bytes;
 * the array may be NULL when num_params is 0), num_params must equal
 * sparseopt_program_num_params(p). On stream s (NULL: default stream) it
 * zeroes every temp buffer (asynchronously: prepare kernels may accumulate
 * into them with atomics), enqueues the prepare steps in file order, and
 * waits for s; then it reads the first int32 of each check line's buffer,
 * in file order. A nonzero value v fails the bind with WEIGHT and the
 * message "param <index> breaks its declared <n>:<m> sparsity: row <row>,
 * group <group> (columns <group*m>..<group*m+m-1>) has more than <n>
 * nonzeros", where row = f / G and group = f % G for f = 2147483647 - v.
 * On success the program keeps the param pointers (the run steps use them:
 * they must stay valid while the program runs) and is bound. Binding again
 * is allowed (temps are zeroed, the prepare steps rerun and the checks
 * re-evaluated); a failed bind leaves the program unbound. A weight changed
 * in place must be bound again for the prepare steps to see it.
 * A program without params needs no bind: load runs its prepare steps (if
 * any) on the default stream; binding it with 0 params runs them again.
 * bind synchronizes s, so it cannot be captured in a CUDA graph; do not
 * bind while a run of the same program is in flight on another stream.
 * Errors: INVALID_ARGUMENT (NULL program, wrong count, NULL array or 0
 * pointer for a non-empty param, a param pointer that is not 16-byte
 * aligned, program only parsed), NOT_INITIALIZED, OUT_OF_MEMORY, CUDA (a failed
 * memset, prepare step or synchronization; prepare steps are named as in
 * sparseopt_program_run), WEIGHT. */
SPARSEOPT_API sparseopt_status sparseopt_program_bind(
    sparseopt_program p, const sparseopt_deviceptr *params, size_t num_params,
    sparseopt_stream s);

/* Binds p like sparseopt_program_bind, but where p's prepare stage is
 * donor's (a bound, loaded program compiled from the same model, e.g. a
 * decoder's prefill program for its decode programs) p uses the donor's
 * prepared buffers (the compressed weights) instead of preparing its own:
 * p's copies are freed, its prepare steps and checks do not run (the
 * donor's did), *shared is set to 1. The stages match when they have the
 * same steps, all launches, of kernels with the same PTX definition on the
 * same grid, block and shared bytes, with the same immediates, the same
 * param tensors (the pointers given here equal to the donor's bound ones)
 * and temp buffers of the same sizes that correspond one to one (none in
 * an arena, none a stat). Otherwise this is a plain bind and *shared is 0.
 * The donor must stay loaded, and not be rebound, while p uses its
 * buffers; a later plain bind of p gives it buffers of its own again.
 * Errors: those of sparseopt_program_bind, INVALID_ARGUMENT (NULL donor or
 * shared, p its own donor, either only parsed). */
SPARSEOPT_API sparseopt_status sparseopt_program_bind_shared(
    sparseopt_program p, const sparseopt_deviceptr *params, size_t num_params,
    sparseopt_program donor, sparseopt_stream s, int *shared);

/* Whether p's prepare stage is donor's as sparseopt_program_bind_shared
 * matches them, with params compared by index (parsed programs have no
 * pointers): 1 yes, 0 no (sparseopt_last_error() says what differs), -1
 * a NULL program. Works on parsed programs (no GPU). */
SPARSEOPT_API int sparseopt_program_prepare_shareable(sparseopt_program p,
                                                      sparseopt_program donor);

/* Enqueues the run steps (launches and gemms, in file order; every step of a
 * program without 'stage' lines) of a loaded program on stream s (NULL:
 * default stream), asynchronously, without allocating or synchronizing (a
 * run can be captured in a CUDA graph). A program with params must have been
 * bound (sparseopt_program_bind); params are the pointers of the last
 * successful bind. inputs[i] / outputs[i] are device pointers owned
 * by the caller (e.g. torch tensors' data_ptr()) of at least
 * sparseopt_program_input_bytes(p, i) / _output_bytes(p, i) bytes; the arrays
 * may be NULL when the program has no inputs / outputs. The program does not
 * clear outputs before running.
 * All runs of a program share its temp buffers (and cuBLASLt workspace), so
 * do not run the same program concurrently on different streams.
 * Errors: INVALID_ARGUMENT (NULL program, NULL array or 0 pointer for a
 * non-empty buffer, a pointer that is not 16-byte aligned ("input <i>:
 * device pointer 0x... is not 16-byte aligned": the kernels use 16-byte
 * vector accesses), program only parsed, a program with params not bound:
 * "the program has <P> params: bind them first (sparseopt_program_bind)"),
 * NOT_INITIALIZED, OUT_OF_MEMORY,
 * CUDA (a failed launch, tensor map encoding or cublasLtMatmul; the message
 * names the step, its manifest line, the kernel and, for a tensor map, the
 * argument index and the buffer, for a gemm the cuBLAS status), and for a
 * program with allreduce lines INVALID_ARGUMENT when it has no communicator
 * and COLLECTIVE when NCCL refuses one (the communicator is aborted). A step
 * that fails leaves the steps before it enqueued. A run with collectives
 * does not wait for them: use sparseopt_comm_synchronize (or capture the
 * run in a CUDA graph) to wait with a deadline. */
SPARSEOPT_API sparseopt_status sparseopt_program_run(
    sparseopt_program p, const sparseopt_deviceptr *inputs,
    const sparseopt_deviceptr *outputs, sparseopt_stream s);

/* ------------------------------------------------------------------------ */
/* Communicators (tensor-parallel collectives)                              */
/* ------------------------------------------------------------------------ */

/* A communicator: one rank of a tensor-parallel group, an NCCL communicator
 * plus a communication stream (non-blocking, at the context's highest
 * priority) on which programs enqueue their all-reduces. NCCL is opened with
 * dlopen when the first communicator is made: SPARSEOPT_NCCL_LIBRARY names
 * the file, else libnccl.so.2 (a copy already loaded in the process, e.g.
 * PyTorch's, is reused) and the CUDA toolkit's copy are tried.
 * The runtime creates its communicators non-blocking, so nothing in this API
 * blocks without a deadline: each call that waits takes timeout_ms (0: the
 * default, SPARSEOPT_COMM_TIMEOUT_MS from the environment or 600000) and
 * fails with COLLECTIVE when it passes, after aborting the communicator; an
 * aborted communicator fails every later call with COLLECTIVE. */
typedef struct sparseopt_comm_s *sparseopt_comm;

/* Bytes of an NCCL unique id (the key every rank of a group passes to
 * sparseopt_comm_init). */
#define SPARSEOPT_COMM_ID_BYTES 128

/* Writes a new unique id into id[SPARSEOPT_COMM_ID_BYTES]. Call it on one
 * rank and give the bytes to the others (e.g. with torch.distributed's
 * broadcast_object_list). Errors: INVALID_ARGUMENT, NO_LIBRARY, COLLECTIVE. */
SPARSEOPT_API sparseopt_status sparseopt_comm_unique_id(unsigned char *id);

/* Joins rank `rank` of a group of `world_size` ranks keyed by `id` (the same
 * bytes on every rank) on the current device (sparseopt_init's). Waits for
 * every rank to join, at most timeout_ms. world_size 1 needs no other
 * process. Errors: INVALID_ARGUMENT (NULL, rank outside [0, world_size)),
 * NOT_INITIALIZED, NO_LIBRARY, CUDA (the stream), COLLECTIVE (NCCL failed
 * or the timeout passed; the message says which). */
SPARSEOPT_API sparseopt_status sparseopt_comm_init(int rank, int world_size,
                                                   const unsigned char *id,
                                                   int timeout_ms,
                                                   sparseopt_comm *out);

/* Joins the group described by a torchrun-style environment: RANK (default
 * 0) and WORLD_SIZE (default 1); LOCAL_RANK is not read (choose the device
 * with sparseopt_init). With WORLD_SIZE > 1 rank 0 makes the unique id and
 * hands it to the others:
 *   - through a file, when SPARSEOPT_COMM_ID_FILE names one: rank 0 writes
 *     it (atomically: a temporary file renamed), the others wait for it.
 *     Use a fresh path per job: a file left from an earlier job would be
 *     read as this job's id;
 *   - else over TCP: rank 0 listens on MASTER_ADDR at port
 *     SPARSEOPT_COMM_PORT, or MASTER_PORT + 1 (torchrun's own store holds
 *     MASTER_PORT), and sends the id to each rank that connects; the others
 *     retry connecting until the timeout.
 * Errors: those of sparseopt_comm_init, plus INVALID_ARGUMENT (a variable
 * that is not a number, RANK outside [0, WORLD_SIZE), WORLD_SIZE > 1 with
 * neither SPARSEOPT_COMM_ID_FILE nor MASTER_ADDR and a port), COLLECTIVE
 * (the id exchange failed or timed out; the message names the file or the
 * address). */
SPARSEOPT_API sparseopt_status sparseopt_comm_init_from_env(int timeout_ms,
                                                            sparseopt_comm *out);

/* Wraps an existing ncclComm_t (e.g. one a framework made) made with the
 * same NCCL library this runtime opens. The runtime never destroys it;
 * sparseopt_comm_destroy frees only the wrapper and its stream.
 * Errors: INVALID_ARGUMENT, NOT_INITIALIZED, NO_LIBRARY, CUDA, COLLECTIVE. */
SPARSEOPT_API sparseopt_status sparseopt_comm_adopt(void *nccl_comm,
                                                    sparseopt_comm *out);

/* The rank and the group size; -1 on a NULL communicator. */
SPARSEOPT_API int sparseopt_comm_rank(sparseopt_comm c);
SPARSEOPT_API int sparseopt_comm_size(sparseopt_comm c);

/* The communication stream, where the all-reduces of programs that use c
 * run (owned by c). NULL on a NULL communicator. */
SPARSEOPT_API sparseopt_stream sparseopt_comm_stream(sparseopt_comm c);

/* Waits for stream s (NULL: the default stream) and for c's communication
 * stream, at most timeout_ms, polling NCCL for asynchronous errors: the way
 * to wait for a run of a program with collectives without risking a hang
 * when a peer is gone. Errors: INVALID_ARGUMENT, CUDA (the stream failed),
 * COLLECTIVE (an NCCL error or the timeout; c is aborted). */
SPARSEOPT_API sparseopt_status sparseopt_comm_synchronize(sparseopt_comm c,
                                                          sparseopt_stream s,
                                                          int timeout_ms);

/* Destroys c (its NCCL communicator unless adopted, and its stream). Wait
 * for the runs that use it first. Errors: INVALID_ARGUMENT, COLLECTIVE. */
SPARSEOPT_API sparseopt_status sparseopt_comm_destroy(sparseopt_comm c);

/* Gives program p the communicator its allreduce lines run on (NULL
 * detaches it). A program with allreduce lines cannot run without one; one
 * without them ignores it. The communicator must outlive every run of p.
 * Errors: INVALID_ARGUMENT (NULL program, program only parsed). */
SPARSEOPT_API sparseopt_status sparseopt_program_set_comm(sparseopt_program p,
                                                          sparseopt_comm c);

/* The number of allreduce lines of p (-1 on a NULL program). */
SPARSEOPT_API int sparseopt_program_num_allreduces(sparseopt_program p);

/* Frees the program's device buffers, unloads its module, destroys its
 * cuBLASLt handle, descriptors and workspace, and frees p.
 * Errors: INVALID_ARGUMENT (p NULL); a CUDA error while freeing is reported
 * but p is freed anyway. */
SPARSEOPT_API sparseopt_status sparseopt_program_destroy(sparseopt_program p);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SPARSEOPT_RUNTIME_H */
