//===- RuntimeTest.cpp - Unit tests of the SparseOpt runtime --------------===//
//
// Most tests need no GPU: status strings, driver-loading failures, argument
// validation and the manifest parser. Tests in the `Gpu` suite call
// sparseopt_init(0) and skip themselves when it reports no driver or device.
//
//===----------------------------------------------------------------------===//

#include "sparseopt/runtime.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {


//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

using sparseopt_test::contains;
using sparseopt_test::TempDir;

std::string lastError() { return sparseopt_last_error(); }

// Fake non-NULL handles: used only to reach a later argument's NULL check,
// which happens before any handle is dereferenced.
int fakeObject;
sparseopt_module fakeModule() {
  return reinterpret_cast<sparseopt_module>(&fakeObject);
}
sparseopt_function fakeFunction() {
  return reinterpret_cast<sparseopt_function>(&fakeObject);
}
sparseopt_event fakeEvent() {
  return reinterpret_cast<sparseopt_event>(&fakeObject);
}

//===----------------------------------------------------------------------===//
// Status codes
//===----------------------------------------------------------------------===//

TEST(Status, StringForEveryCode) {
  const std::pair<sparseopt_status, const char *> expected[] = {
      {SPARSEOPT_OK, "SPARSEOPT_OK"},
      {SPARSEOPT_ERROR_INVALID_ARGUMENT, "SPARSEOPT_ERROR_INVALID_ARGUMENT"},
      {SPARSEOPT_ERROR_NO_DRIVER, "SPARSEOPT_ERROR_NO_DRIVER"},
      {SPARSEOPT_ERROR_NO_DEVICE, "SPARSEOPT_ERROR_NO_DEVICE"},
      {SPARSEOPT_ERROR_CUDA, "SPARSEOPT_ERROR_CUDA"},
      {SPARSEOPT_ERROR_OUT_OF_MEMORY, "SPARSEOPT_ERROR_OUT_OF_MEMORY"},
      {SPARSEOPT_ERROR_IO, "SPARSEOPT_ERROR_IO"},
      {SPARSEOPT_ERROR_PARSE, "SPARSEOPT_ERROR_PARSE"},
      {SPARSEOPT_ERROR_NOT_FOUND, "SPARSEOPT_ERROR_NOT_FOUND"},
      {SPARSEOPT_ERROR_NOT_INITIALIZED, "SPARSEOPT_ERROR_NOT_INITIALIZED"},
      {SPARSEOPT_ERROR_NO_LIBRARY, "SPARSEOPT_ERROR_NO_LIBRARY"},
      {SPARSEOPT_ERROR_WEIGHT, "SPARSEOPT_ERROR_WEIGHT"},
      {SPARSEOPT_ERROR_COLLECTIVE, "SPARSEOPT_ERROR_COLLECTIVE"},
  };
  // Codes are ABI: appended, never renumbered.
  EXPECT_EQ(int(SPARSEOPT_ERROR_NO_LIBRARY), 10);
  EXPECT_EQ(int(SPARSEOPT_ERROR_WEIGHT), 11);
  EXPECT_EQ(int(SPARSEOPT_ERROR_COLLECTIVE), 12);
  for (const auto &[status, name] : expected)
    EXPECT_STREQ(sparseopt_status_string(status), name);
  EXPECT_STREQ(sparseopt_status_string(static_cast<sparseopt_status>(42)),
               "SPARSEOPT_UNKNOWN_STATUS");
}

TEST(Status, LastErrorIsPerThread) {
  EXPECT_EQ(sparseopt_malloc(16, nullptr), SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "sparseopt_malloc"));
  std::string otherThread = "unset";
  std::thread([&] { otherThread = sparseopt_last_error(); }).join();
  EXPECT_EQ(otherThread, "");
}

//===----------------------------------------------------------------------===//
// Initialization without a driver. These run in a fresh process (threadsafe
// death-test style re-executes the binary) so that a driver loaded by other
// tests cannot leak in.
//===----------------------------------------------------------------------===//

TEST(Init, MissingDriverLibraryReportsNoDriver) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("SPARSEOPT_CUDA_LIBRARY", "/nonexistent/libcuda-missing.so.1",
               1);
        sparseopt_status status = sparseopt_init(0);
        std::fprintf(stderr, "status=%s message=%s\n",
                     sparseopt_status_string(status), sparseopt_last_error());
        // GPU calls still report that the runtime is not initialized.
        sparseopt_deviceptr ptr = 0;
        bool stillUninitialized =
            sparseopt_malloc(16, &ptr) == SPARSEOPT_ERROR_NOT_INITIALIZED;
        std::exit(status == SPARSEOPT_ERROR_NO_DRIVER && stillUninitialized
                      ? 0
                      : 1);
      },
      ::testing::ExitedWithCode(0),
      "status=SPARSEOPT_ERROR_NO_DRIVER message=CUDA driver library "
      "/nonexistent/libcuda-missing.so.1 not found");
}

TEST(Init, NotADriverLibraryReportsNoDriver) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // libc.so.6 loads fine but exports no CUDA entry point.
  EXPECT_EXIT(
      {
        setenv("SPARSEOPT_CUDA_LIBRARY", "libc.so.6", 1);
        sparseopt_status status = sparseopt_init(0);
        std::fprintf(stderr, "message=%s\n", sparseopt_last_error());
        std::exit(status == SPARSEOPT_ERROR_NO_DRIVER ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "does not export cu");
}

TEST(Init, GpuCallsBeforeInitReportNotInitialized) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        sparseopt_deviceptr ptr = 0;
        sparseopt_stream stream = nullptr;
        char name[64];
        int failures = 0;
        auto expectUninitialized = [&](sparseopt_status status) {
          if (status != SPARSEOPT_ERROR_NOT_INITIALIZED)
            ++failures;
        };
        expectUninitialized(sparseopt_malloc(16, &ptr));
        expectUninitialized(sparseopt_synchronize());
        expectUninitialized(sparseopt_device_name(name, sizeof(name)));
        expectUninitialized(sparseopt_stream_create(&stream));
        expectUninitialized(sparseopt_stream_synchronize(nullptr));
        std::fprintf(stderr, "message=%s\n", sparseopt_last_error());
        std::exit(failures);
      },
      ::testing::ExitedWithCode(0), "call sparseopt_init\\(\\) first");
}

TEST(Init, NegativeDeviceIsInvalid) {
  EXPECT_EQ(sparseopt_init(-1), SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "negative"));
}

//===----------------------------------------------------------------------===//
// NULL arguments are rejected before anything else is checked.
//===----------------------------------------------------------------------===//

#define EXPECT_INVALID(call, argument)                                         \
  do {                                                                         \
    EXPECT_EQ((call), SPARSEOPT_ERROR_INVALID_ARGUMENT) << #call;              \
    EXPECT_TRUE(contains(lastError(), argument)) << #call;                     \
  } while (0)

TEST(NullArguments, Device) {
  char name[8];
  EXPECT_INVALID(sparseopt_device_name(nullptr, 8), "buf");
  EXPECT_INVALID(sparseopt_device_name(name, 0), "len");
}

TEST(NullArguments, Memory) {
  char host[4] = {0};
  EXPECT_INVALID(sparseopt_malloc(16, nullptr), "out");
  EXPECT_INVALID(sparseopt_memcpy_htod(0, host, 4), "dst");
  EXPECT_INVALID(sparseopt_memcpy_htod(0x1000, nullptr, 4), "src");
  EXPECT_INVALID(sparseopt_memcpy_dtoh(nullptr, 0x1000, 4), "dst");
  EXPECT_INVALID(sparseopt_memcpy_dtoh(host, 0, 4), "src");
  EXPECT_INVALID(sparseopt_memset_d8(0, 0, 4), "dst");
  // Like free(NULL), freeing the null device pointer is a no-op.
  EXPECT_EQ(sparseopt_free(0), SPARSEOPT_OK);
}

TEST(NullArguments, StreamsAndEvents) {
  float ms = 0;
  EXPECT_INVALID(sparseopt_stream_create(nullptr), "out");
  EXPECT_INVALID(sparseopt_stream_destroy(nullptr), "default stream");
  EXPECT_INVALID(sparseopt_event_create(nullptr), "out");
  EXPECT_INVALID(sparseopt_event_destroy(nullptr), "e");
  EXPECT_INVALID(sparseopt_event_record(nullptr, nullptr), "e");
  EXPECT_INVALID(sparseopt_event_synchronize(nullptr), "e");
  EXPECT_INVALID(sparseopt_event_elapsed_ms(nullptr, fakeEvent(), &ms),
                 "start");
  EXPECT_INVALID(sparseopt_event_elapsed_ms(fakeEvent(), nullptr, &ms), "end");
  EXPECT_INVALID(sparseopt_event_elapsed_ms(fakeEvent(), fakeEvent(), nullptr),
                 "ms");
}

TEST(NullArguments, ModulesAndLaunches) {
  sparseopt_module module = nullptr;
  sparseopt_function function = nullptr;
  const unsigned dims[3] = {1, 1, 1};
  EXPECT_INVALID(sparseopt_module_load_ptx(nullptr, &module), "ptx");
  EXPECT_INVALID(sparseopt_module_load_ptx("", nullptr), "out");
  EXPECT_INVALID(sparseopt_module_load_file(nullptr, &module), "path");
  EXPECT_INVALID(sparseopt_module_load_file("k.ptx", nullptr), "out");
  EXPECT_INVALID(sparseopt_module_unload(nullptr), "m");
  EXPECT_INVALID(sparseopt_module_get_function(nullptr, "k", &function), "m");
  EXPECT_INVALID(sparseopt_module_get_function(fakeModule(), nullptr, &function),
                 "name");
  EXPECT_INVALID(sparseopt_module_get_function(fakeModule(), "k", nullptr),
                 "out");
  EXPECT_INVALID(sparseopt_launch(nullptr, dims, dims, 0, nullptr, nullptr),
                 "f");
  EXPECT_INVALID(
      sparseopt_launch(fakeFunction(), nullptr, dims, 0, nullptr, nullptr),
      "grid");
  EXPECT_INVALID(
      sparseopt_launch(fakeFunction(), dims, nullptr, 0, nullptr, nullptr),
      "block");
}

TEST(NullArguments, Programs) {
  sparseopt_program program = nullptr;
  EXPECT_INVALID(sparseopt_program_parse(nullptr, &program), "artifact_dir");
  EXPECT_INVALID(sparseopt_program_parse("dir", nullptr), "out");
  EXPECT_INVALID(sparseopt_program_load(nullptr, &program), "artifact_dir");
  EXPECT_INVALID(sparseopt_program_load("dir", nullptr), "out");
  EXPECT_INVALID(sparseopt_program_run(nullptr, nullptr, nullptr, nullptr),
                 "p");
  EXPECT_INVALID(sparseopt_program_destroy(nullptr), "p");

  EXPECT_EQ(sparseopt_program_num_inputs(nullptr), -1);
  EXPECT_TRUE(contains(lastError(), "sparseopt_program_num_inputs"));
  EXPECT_EQ(sparseopt_program_num_outputs(nullptr), -1);
  EXPECT_EQ(sparseopt_program_num_launches(nullptr), -1);
  EXPECT_EQ(sparseopt_program_input_bytes(nullptr, 0), 0u);
  EXPECT_EQ(sparseopt_program_output_bytes(nullptr, 0), 0u);
  EXPECT_EQ(sparseopt_program_launch_kernel(nullptr, 0), nullptr);
  EXPECT_TRUE(contains(lastError(), "sparseopt_program_launch_kernel"));
  EXPECT_EQ(sparseopt_program_num_steps(nullptr), -1);
  EXPECT_TRUE(contains(lastError(), "sparseopt_program_num_steps"));
  EXPECT_EQ(sparseopt_program_step(nullptr, 0), nullptr);
  EXPECT_TRUE(contains(lastError(), "sparseopt_program_step"));

  const sparseopt_deviceptr param[1] = {0x1000};
  EXPECT_INVALID(sparseopt_program_bind(nullptr, param, 1, nullptr), "p");
  EXPECT_TRUE(contains(lastError(), "sparseopt_program_bind"));
  EXPECT_EQ(sparseopt_program_num_params(nullptr), -1);
  EXPECT_TRUE(contains(lastError(), "sparseopt_program_num_params"));
  EXPECT_EQ(sparseopt_program_param_bytes(nullptr, 0), 0u);
  EXPECT_TRUE(contains(lastError(), "sparseopt_program_param_bytes"));
  EXPECT_EQ(sparseopt_program_step_stage(nullptr, 0), nullptr);
  EXPECT_TRUE(contains(lastError(), "sparseopt_program_step_stage"));
  EXPECT_EQ(sparseopt_program_num_checks(nullptr), -1);
  EXPECT_TRUE(contains(lastError(), "sparseopt_program_num_checks"));
  EXPECT_EQ(sparseopt_program_check(nullptr, 0), nullptr);
  EXPECT_TRUE(contains(lastError(), "sparseopt_program_check"));
}

//===----------------------------------------------------------------------===//
// Manifest parsing (no GPU)
//===----------------------------------------------------------------------===//

/// An artifact directory with a module file and a 100-byte constant file.
class ArtifactTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(dir.path().empty());
    dir.write("kernels.ptx", "// not compiled by the parser\n");
    dir.write("c.bin", std::string(100, '\x7f'));
  }

  sparseopt_status parse(const std::string &manifest) {
    dir.writeProgram(manifest);
    return sparseopt_program_parse(dir.c_str(), &program);
  }

  void TearDown() override {
    if (program != nullptr) {
      EXPECT_EQ(sparseopt_program_destroy(program), SPARSEOPT_OK);
    }
  }

  TempDir dir;
  sparseopt_program program = nullptr;
};

TEST_F(ArtifactTest, ParsesValidManifest) {
  ASSERT_EQ(parse("# written by the compiler\n"
                  "\n"
                  "sparseopt-program 2   # version\n"
                  "module kernels.ptx\n"
                  "buffer 0 input 0 8192\n"
                  "buffer 5 constant c.bin 100\n"
                  "\tbuffer 2 output 1 16\r\n" // tabs and CRLF are blanks
                  "launch first grid 2 1 1 block 128 1 1 smem 0 args b0 b5 b2 "
                  "b9 i32:64 i32:-1 i32:4294967295 i64:-9000000000 "
                  "i64:18446744073709551615 f32:1.5 f32:-2e-3\n"
                  "buffer 9 temp 256   # declared after its first use\n"
                  "buffer 3 output 0 4096\n"
                  "buffer 4 input 1 4\n"
                  "launch second grid 1 2 3 block 32 4 1 smem 65536 args\n"),
            SPARSEOPT_OK)
      << lastError();
  EXPECT_EQ(sparseopt_program_num_inputs(program), 2);
  EXPECT_EQ(sparseopt_program_num_outputs(program), 2);
  EXPECT_EQ(sparseopt_program_input_bytes(program, 0), 8192u);
  EXPECT_EQ(sparseopt_program_input_bytes(program, 1), 4u);
  EXPECT_EQ(sparseopt_program_output_bytes(program, 0), 4096u);
  EXPECT_EQ(sparseopt_program_output_bytes(program, 1), 16u);
  ASSERT_EQ(sparseopt_program_num_launches(program), 2);
  EXPECT_STREQ(sparseopt_program_launch_kernel(program, 0), "first");
  EXPECT_STREQ(sparseopt_program_launch_kernel(program, 1), "second");
}

TEST_F(ArtifactTest, ParsesPersistentGrids) {
  // Version 3: a grid x the runtime sizes on the device at load time
  // (units, cluster, reserved multiprocessors).
  ASSERT_EQ(parse("sparseopt-program 3\n"
                  "module kernels.ptx\n"
                  "launch k grid persistent:256:1:0 1 1 block 384 1 1 smem 0 "
                  "args\n"
                  "launch c grid persistent:64:2:4 1 1 block 384 1 1 smem 0 "
                  "args\n"),
            SPARSEOPT_OK)
      << lastError();
  EXPECT_EQ(sparseopt_program_num_launches(program), 2);
}

TEST_F(ArtifactTest, ParsesProgrammaticLaunches) {
  // Version 4: `pdl` between the shared memory size and the arguments marks
  // a kernel that waits for the step before it itself; the step text says so.
  ASSERT_EQ(parse("sparseopt-program 4\n"
                  "module kernels.ptx\n"
                  "buffer 0 temp 64\n"
                  "launch first grid 1 1 1 block 32 1 1 smem 0 args b0\n"
                  "launch second grid 2 1 1 block 32 1 1 smem 0 pdl args b0\n"
                  "launch third grid persistent:8:1:0 1 1 block 32 1 1 smem "
                  "1024 pdl args\n"),
            SPARSEOPT_OK)
      << lastError();
  ASSERT_EQ(sparseopt_program_num_steps(program), 3);
  EXPECT_STREQ(sparseopt_program_step(program, 0), "launch first");
  EXPECT_STREQ(sparseopt_program_step(program, 1), "launch second pdl");
  EXPECT_STREQ(sparseopt_program_step(program, 2), "launch third pdl");
}

TEST_F(ArtifactTest, ParsesTensorMapArguments) {
  // Every element type, ranks 1 to 5, every swizzle, the limits (a
  // 256-element box dimension, an innermost box as wide as the swizzle span,
  // a 16-byte pitch, a 2^32-element dimension) and a map exactly as large as
  // its buffer (b1).
  ASSERT_EQ(parse("sparseopt-program 2\n"
                  "module kernels.ptx\n"
                  "buffer 0 input 0 16777216\n"
                  "buffer 1 temp 1920\n"
                  "buffer 2 temp 17179869184\n"
                  "launch k grid 1 1 1 block 128 1 1 smem 0 args "
                  "tmap:b0:f16:4096x2048:128x32:64 "
                  "tmap:b1:i32:2x3x4x5x4:1x1x1x1x4:0 "
                  "tmap:b0:bf16:64x64:64x64:128 b0 i32:3 "
                  "tmap:b0:f32:1000:256:0 tmap:b0:f16:10x8:256x8:32 "
                  "tmap:b2:f32:4294967296:4:0 tmap:b0:f32:7x4x16:1x4x16:0\n"),
            SPARSEOPT_OK)
      << lastError();
  ASSERT_EQ(sparseopt_program_num_launches(program), 1);
  EXPECT_STREQ(sparseopt_program_launch_kernel(program, 0), "k");
}

TEST_F(ArtifactTest, RejectsLaunchesBeyondCudaLimits) {
  // Each line is one launch past a limit cuLaunchKernel would refuse (or a
  // name no PTX function has); the parse says which.
  const std::pair<const char *, const char *> cases[] = {
      {"launch k grid 2147483648 1 1 block 32 1 1 smem 0 args",
       "exceeds CUDA's limits (x < 2^31, y and z <= 65535)"},
      {"launch k grid 1 65536 1 block 32 1 1 smem 0 args",
       "exceeds CUDA's limits"},
      {"launch k grid 4294967295 1 1 block 32 1 1 smem 0 args",
       "grid 4294967295 1 1 exceeds"},
      {"launch k grid 1 1 1 block 1025 1 1 smem 0 args",
       "at most 1024 threads"},
      {"launch k grid 1 1 1 block 64 32 1 smem 0 args", "at most 1024 threads"},
      {"launch k grid 1 1 1 block 1 1 65 smem 0 args", "z <= 64"},
      {"launch k grid 1 1 1 block 32 1 1 smem 232449 args",
       "smem 232449 exceeds the 232448 bytes"},
      {"launch 9k grid 1 1 1 block 32 1 1 smem 0 args",
       "kernel name '9k' is not a PTX identifier"},
      {"launch k-1 grid 1 1 1 block 32 1 1 smem 0 args",
       "kernel name 'k-1' is not a PTX identifier"},
  };
  for (auto [line, message] : cases) {
    EXPECT_EQ(parse(std::string("sparseopt-program 2\nmodule kernels.ptx\n") +
                    line + "\n"),
              SPARSEOPT_ERROR_PARSE)
        << line;
    EXPECT_TRUE(contains(lastError(), message)) << line << ": " << lastError();
  }
  // The limits themselves are fine.
  EXPECT_EQ(parse("sparseopt-program 2\nmodule kernels.ptx\n"
                  "launch $k_1 grid 2147483647 65535 65535 block 1024 1 1 "
                  "smem 232448 args\n"),
            SPARSEOPT_OK)
      << lastError();
}

TEST_F(ArtifactTest, RejectsEmptyBuffers) {
  // A zero-byte buffer is an overflowed size or a compiler bug, never a
  // program.
  for (const char *line :
       {"buffer 0 input 0 0", "buffer 0 output 0 0", "buffer 0 param 0 0",
        "buffer 0 temp 0"}) {
    EXPECT_EQ(parse(std::string("sparseopt-program 2\nmodule kernels.ptx\n") +
                    line + "\n"),
              SPARSEOPT_ERROR_PARSE)
        << line;
    EXPECT_TRUE(contains(lastError(), "byte size: expected an integer from 1"))
        << line << ": " << lastError();
  }
}

TEST_F(ArtifactTest, ZeroLaunchesIsValid) {
  ASSERT_EQ(parse("sparseopt-program 2\nmodule kernels.ptx\n"), SPARSEOPT_OK)
      << lastError();
  EXPECT_EQ(sparseopt_program_num_inputs(program), 0);
  EXPECT_EQ(sparseopt_program_num_outputs(program), 0);
  EXPECT_EQ(sparseopt_program_num_launches(program), 0);
}

TEST_F(ArtifactTest, QueriesRejectOutOfRangeIndices) {
  ASSERT_EQ(parse("sparseopt-program 2\nmodule kernels.ptx\n"
                  "buffer 0 input 0 8\nbuffer 1 output 0 8\n"),
            SPARSEOPT_OK)
      << lastError();
  EXPECT_EQ(sparseopt_program_input_bytes(program, 1), 0u);
  EXPECT_TRUE(contains(lastError(), "index 1 out of range"));
  EXPECT_EQ(sparseopt_program_output_bytes(program, -1), 0u);
  EXPECT_TRUE(contains(lastError(), "index -1 out of range"));
  EXPECT_EQ(sparseopt_program_launch_kernel(program, 0), nullptr);
}

TEST_F(ArtifactTest, ParsedProgramCannotRun) {
  ASSERT_EQ(parse("sparseopt-program 2\nmodule kernels.ptx\n"
                  "buffer 0 input 0 8\nbuffer 1 output 0 8\n"),
            SPARSEOPT_OK)
      << lastError();
  const sparseopt_deviceptr fake[1] = {0x1000};
  EXPECT_EQ(sparseopt_program_run(program, nullptr, fake, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "inputs must not be NULL"));
  const sparseopt_deviceptr null[1] = {0};
  EXPECT_EQ(sparseopt_program_run(program, fake, null, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "output 0 is a null device pointer"));
  // Every caller buffer must be 16-byte aligned (the kernels use 16-byte
  // vectors): refused before anything runs.
  const sparseopt_deviceptr misaligned[1] = {0x1008};
  EXPECT_EQ(sparseopt_program_run(program, misaligned, fake, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(),
                       "sparseopt_program_run: input 0: device pointer "
                       "0x1008 is not 16-byte aligned (the program's kernels "
                       "use 16-byte vector accesses)"));
  EXPECT_EQ(sparseopt_program_run(program, fake, misaligned, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "output 0: device pointer 0x1008"));
  EXPECT_EQ(sparseopt_program_run(program, fake, fake, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "only parsed"));
}

TEST_F(ArtifactTest, MissingManifestIsAnIoError) {
  EXPECT_EQ(sparseopt_program_parse(dir.c_str(), &program), SPARSEOPT_ERROR_IO);
  EXPECT_TRUE(contains(lastError(), "program.txt"));
  EXPECT_TRUE(contains(lastError(), "No such file"));
}

// signature.json, when present, is checked against the program. The
// program: input 0 (64 bytes), param 0 (128 bytes), output 0 (16 bytes).
constexpr const char *kSignedProgram = "sparseopt-program 2\n"
                                       "buffer 0 input 0 64\n"
                                       "buffer 1 param 0 128\n"
                                       "buffer 2 output 0 16\n"
                                       "gemm m=2 n=4 k=16 in=f16 out=f16 x=b0 "
                                       "w=b1 y=b2\n";
constexpr const char *kSignature =
    R"({"function": "f", "inputs": [{"shape": [2, 16], "dtype": "f16"},
        {"shape": [4, 16], "dtype": "bf16", "name": "w"}],
        "outputs": [{"shape": [2, 4], "dtype": "f16"}], "params": [1],
        "memory": {"peak": 112}})";

TEST_F(ArtifactTest, SignatureGivesEachTensorItsTypeAndShape) {
  dir.write("signature.json", kSignature);
  ASSERT_EQ(parse(kSignedProgram), SPARSEOPT_OK) << lastError();
  EXPECT_STREQ(sparseopt_program_input_type(program, 0), "f16[2, 16]");
  EXPECT_STREQ(sparseopt_program_param_type(program, 0), "bf16[4, 16]");
  EXPECT_STREQ(sparseopt_program_output_type(program, 0), "f16[2, 4]");
  EXPECT_EQ(sparseopt_program_output_type(program, 1), nullptr);
  EXPECT_TRUE(contains(lastError(), "out of range"));
}

TEST_F(ArtifactTest, ProgramWithoutSignatureHasNoTypes) {
  ASSERT_EQ(parse(kSignedProgram), SPARSEOPT_OK) << lastError();
  EXPECT_STREQ(sparseopt_program_input_type(program, 0), "");
  EXPECT_STREQ(sparseopt_program_output_type(program, 0), "");
}

struct BadSignature {
  const char *name;
  std::string text;
  const char *expected;
};

std::ostream &operator<<(std::ostream &os, const BadSignature &c) {
  return os << c.name;
}

class SignatureCheck : public ArtifactTest,
                       public ::testing::WithParamInterface<BadSignature> {};

TEST_P(SignatureCheck, DisagreementIsAParseError) {
  dir.write("signature.json", GetParam().text);
  EXPECT_EQ(parse(kSignedProgram), SPARSEOPT_ERROR_PARSE);
  EXPECT_EQ(program, nullptr);
  EXPECT_TRUE(contains(lastError(), "signature.json: "));
  EXPECT_TRUE(contains(lastError(), GetParam().expected));
}

std::string replaced(std::string text, const std::string &from,
                     const std::string &to) {
  size_t at = text.find(from);
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

INSTANTIATE_TEST_SUITE_P(
    Signature, SignatureCheck,
    ::testing::Values(
        BadSignature{"NotJson", "{\"function\": ", "invalid JSON at byte 13"},
        BadSignature{"Truncated", std::string(kSignature).substr(0, 60),
                     "invalid JSON"},
        BadSignature{"DeeplyNested", std::string(100000, '['),
                     "nested more than 16 levels deep"},
        BadSignature{"NoFunction", replaced(kSignature, "\"function\"", "\"fn\""),
                     "no \"function\" name"},
        BadSignature{"NegativeDims",
                     replaced(kSignature, "[2, 16]", "[-2, -16]"),
                     "input 0 dimension 0 is -2: every dimension must be a "
                     "positive integer"},
        BadSignature{"ZeroDim", replaced(kSignature, "[2, 4]", "[0, 4]"),
                     "output 0 dimension 0 is 0"},
        BadSignature{"FractionalDim", replaced(kSignature, "[2, 16]", "[2.5, 16]"),
                     "dimension 0 is 2.5"},
        BadSignature{"UnknownType", replaced(kSignature, "\"bf16\"", "\"float\""),
                     "input 1 has an unknown element type \"float\""},
        BadSignature{"WrongBytes", replaced(kSignature, "[2, 16]", "[4, 16]"),
                     "input 0 is f16[4, 16] (128 bytes) but program.txt line 2 "
                     "gives it 64 bytes"},
        BadSignature{"ParamNotAnArgument",
                     replaced(kSignature, "\"params\": [1]", "\"params\": [2]"),
                     "param position 2 is not an argument position"},
        BadSignature{"NoParams", replaced(kSignature, "\"params\": [1]",
                                          "\"params\": []"),
                     "it describes 2 input(s) but program.txt has 1"},
        BadSignature{"HugeTensor",
                     replaced(kSignature, "[2, 4]", "[4294967296, 4294967296]"),
                     "output 0 is 2^62 bytes or more"}),
    [](const ::testing::TestParamInfo<BadSignature> &info) {
      return std::string(info.param.name);
    });

TEST_F(ArtifactTest, EmptyManifestHasNoHeader) {
  dir.write("program.txt", "# nothing here\n\n");
  EXPECT_EQ(sparseopt_program_parse(dir.c_str(), &program),
            SPARSEOPT_ERROR_PARSE);
  EXPECT_TRUE(contains(lastError(), "program.txt:2: missing 'sparseopt-program 4' header"));
}

TEST_F(ArtifactTest, ProgramCutShortIsRefused) {
  // A whole program, then every prefix of it: each prefix that ends before
  // the `end` line (at a line break or inside a line) is refused, never read
  // as a shorter program. Only the whole text (and it followed by blank or
  // comment lines) parses.
  const std::string whole = "sparseopt-program 2\nmodule kernels.ptx\n"
                            "buffer 0 input 0 64\nbuffer 1 output 0 64\n"
                            "launch k grid 1 1 1 block 32 1 1 smem 0 args b0 "
                            "b1\nend\n";
  size_t endAt = whole.rfind("end\n");
  for (size_t cut = 0; cut < endAt + 3; ++cut) {
    dir.write("program.txt", whole.substr(0, cut));
    sparseopt_status status = sparseopt_program_parse(dir.c_str(), &program);
    EXPECT_NE(status, SPARSEOPT_OK) << "prefix of " << cut << " bytes parsed";
    if (status == SPARSEOPT_OK) {
      sparseopt_program_destroy(program);
      program = nullptr;
    }
  }
  dir.write("program.txt", whole.substr(0, endAt) + "# a prefix\nend");
  ASSERT_EQ(sparseopt_program_parse(dir.c_str(), &program), SPARSEOPT_OK)
      << lastError();
  ASSERT_EQ(sparseopt_program_destroy(program), SPARSEOPT_OK);
  program = nullptr;
  dir.write("program.txt", whole.substr(0, endAt) + "\n");
  EXPECT_EQ(sparseopt_program_parse(dir.c_str(), &program),
            SPARSEOPT_ERROR_PARSE);
  EXPECT_TRUE(contains(lastError(), "no 'end' line: the file is cut short"));
  dir.write("program.txt", whole + "\n# trailing comment\n\n");
  EXPECT_EQ(sparseopt_program_parse(dir.c_str(), &program), SPARSEOPT_OK)
      << lastError();
}

TEST_F(ArtifactTest, LoadReportsParseErrorsFirst) {
  // program_load parses before it checks initialization, so manifest errors
  // surface the same way with and without a GPU.
  dir.writeProgram("sparseopt-program 2\nmodule kernels.ptx\nbogus\n");
  EXPECT_EQ(sparseopt_program_load(dir.c_str(), &program),
            SPARSEOPT_ERROR_PARSE);
  EXPECT_TRUE(contains(lastError(), "program.txt:3: unknown directive"));
}

TEST_F(ArtifactTest, ParsesGemmOnlyProgram) {
  // No module: a program of gemm lines alone has no kernels. Operands exactly
  // as large as they need (b0, b2, b3) or larger (b1); buffers declared
  // before and after use; blanks, tabs and comments as elsewhere.
  ASSERT_EQ(parse("sparseopt-program 2\n"
                  "buffer 0 input 0 1024     # x: 16x32 f16\n"
                  "buffer 1 constant c.bin 100\n"
                  "buffer 2 output 0 4096    # y: 16x64 f32\n"
                  "buffer 3 input 1 256      # bias: 64 f32\n"
                  "buffer 4 temp 5000\n"
                  "gemm m=16 n=64 k=32 in=f16 out=f32 x=b0 w=b4 y=b2 "
                  "bias=b3:f32 act=relu\n"
                  "\tgemm  m=3 n=40 k=24\tin=bf16 out=bf16 x=b5 w=b6 y=b7 "
                  "# no options\r\n"
                  "gemm m=3 n=40 k=24 in=f16 out=f16 x=b5 w=b6 y=b7 "
                  "bias=b8:f16\n"
                  "gemm m=1 n=1 k=1 in=f16 out=f16 x=b0 w=b0 y=b7 act=relu\n"
                  "buffer 5 temp 144\n"
                  "buffer 6 temp 1920\n"
                  "buffer 7 output 1 240\n"
                  "buffer 8 temp 80\n"),
            SPARSEOPT_OK)
      << lastError();
  EXPECT_EQ(sparseopt_program_num_inputs(program), 2);
  EXPECT_EQ(sparseopt_program_num_outputs(program), 2);
  EXPECT_EQ(sparseopt_program_output_bytes(program, 1), 240u);
  EXPECT_EQ(sparseopt_program_num_launches(program), 0);
  ASSERT_EQ(sparseopt_program_num_steps(program), 4);
  // Each gemm as parsed: every field, keys in order.
  EXPECT_STREQ(sparseopt_program_step(program, 0),
               "gemm m=16 n=64 k=32 in=f16 out=f32 x=b0 w=b4 y=b2 "
               "bias=b3:f32 act=relu");
  EXPECT_STREQ(sparseopt_program_step(program, 1),
               "gemm m=3 n=40 k=24 in=bf16 out=bf16 x=b5 w=b6 y=b7");
  EXPECT_STREQ(sparseopt_program_step(program, 2),
               "gemm m=3 n=40 k=24 in=f16 out=f16 x=b5 w=b6 y=b7 "
               "bias=b8:f16");
  EXPECT_STREQ(sparseopt_program_step(program, 3),
               "gemm m=1 n=1 k=1 in=f16 out=f16 x=b0 w=b0 y=b7 act=relu");
  EXPECT_EQ(sparseopt_program_step(program, 4), nullptr);
  EXPECT_TRUE(contains(lastError(), "index 4 out of range"));
}

TEST_F(ArtifactTest, ParsesGemmLimits) {
  // The largest extent, 2^31 - 1, with a buffer of exactly the size it
  // needs; a module line is allowed in a gemm-only program too.
  ASSERT_EQ(parse("sparseopt-program 2\nmodule kernels.ptx\n"
                  "buffer 0 temp 4294967294\n" // 2^31-1 x 1 f16
                  "buffer 1 temp 2\n"
                  "buffer 2 temp 8589934588\n" // 2^31-1 x 1 f32
                  "gemm m=2147483647 n=1 k=1 in=bf16 out=f32 x=b0 w=b1 y=b2\n"),
            SPARSEOPT_OK)
      << lastError();
  ASSERT_EQ(sparseopt_program_num_steps(program), 1);
  EXPECT_STREQ(sparseopt_program_step(program, 0),
               "gemm m=2147483647 n=1 k=1 in=bf16 out=f32 x=b0 w=b1 y=b2");
}

TEST_F(ArtifactTest, GemmsAndLaunchesKeepFileOrder) {
  ASSERT_EQ(parse("sparseopt-program 2\n"
                  "module kernels.ptx\n"
                  "buffer 0 input 0 64\n"
                  "buffer 1 temp 64\n"
                  "buffer 2 output 0 64\n"
                  "launch first grid 1 1 1 block 32 1 1 smem 0 args b0\n"
                  "gemm m=4 n=4 k=4 in=f16 out=f32 x=b0 w=b1 y=b2\n"
                  "launch second grid 1 1 1 block 32 1 1 smem 0 args b2\n"
                  "launch third grid 1 1 1 block 32 1 1 smem 0 args\n"
                  "gemm m=2 n=4 k=8 in=bf16 out=bf16 x=b0 w=b2 y=b1 "
                  "act=relu\n"),
            SPARSEOPT_OK)
      << lastError();
  // Launch queries count launch lines only, as before.
  ASSERT_EQ(sparseopt_program_num_launches(program), 3);
  EXPECT_STREQ(sparseopt_program_launch_kernel(program, 1), "second");
  const char *expected[] = {
      "launch first",
      "gemm m=4 n=4 k=4 in=f16 out=f32 x=b0 w=b1 y=b2",
      "launch second",
      "launch third",
      "gemm m=2 n=4 k=8 in=bf16 out=bf16 x=b0 w=b2 y=b1 act=relu"};
  ASSERT_EQ(sparseopt_program_num_steps(program), 5);
  for (int i = 0; i < 5; ++i) {
    EXPECT_STREQ(sparseopt_program_step(program, i), expected[i]) << i;
    // Without 'stage' lines every step is a run step.
    EXPECT_STREQ(sparseopt_program_step_stage(program, i), "run") << i;
  }
  EXPECT_EQ(sparseopt_program_num_params(program), 0);
  EXPECT_EQ(sparseopt_program_num_checks(program), 0);
}

TEST_F(ArtifactTest, LaunchOnlyProgramsHaveLaunchSteps) {
  ASSERT_EQ(parse("sparseopt-program 2\nmodule kernels.ptx\n"
                  "launch k grid 1 1 1 block 32 1 1 smem 0 args\n"),
            SPARSEOPT_OK)
      << lastError();
  ASSERT_EQ(sparseopt_program_num_steps(program), 1);
  EXPECT_STREQ(sparseopt_program_step(program, 0), "launch k");
}

TEST_F(ArtifactTest, ParsesParamsStagesAndChecks) {
  // Params have their own index space (input 1 and param 1 coexist), are
  // declared anywhere, and may be used by prepare and run steps alike;
  // checks name temps and params, whatever their order in the prepare
  // stage; comments, tabs and CRLF as elsewhere.
  ASSERT_EQ(parse("sparseopt-program 2\n"
                  "module kernels.ptx\n"
                  "buffer 0 input 0 128        # x [4, 16] f16\n"
                  "buffer 1 param 0 512        # W [16, 16] f16\n"
                  "buffer 3 input 1 16\n"
                  "buffer 4 temp 512\n"
                  "buffer 5 temp 4             # check result\n"
                  "buffer 6 output 0 256\n"
                  "buffer 7 constant c.bin 100\n"
                  "stage prepare   # at bind time\n"
                  "check b9 param 1 pattern 14:16 groups 2147483647\n"
                  "launch compress grid 1 1 1 block 32 1 1 smem 0 args b1 b4 "
                  "b5 b7 b2 i32:16\n"
                  "\tgemm m=16 n=16 k=16 in=f16 out=f16 x=b8 w=b1 y=b4\r\n"
                  "check\tb5 param 0 pattern 2:4 groups 4\n"
                  "stage run\n"
                  "gemm m=4 n=16 k=16 in=f16 out=f32 x=b0 w=b4 y=b6\n"
                  "launch spmm grid 1 1 1 block 32 1 1 smem 0 args b0 b4 b6 "
                  "b1 b2 b3 b5 tmap:b1:f16:16x16:16x8:0\n"
                  "gemm m=4 n=16 k=16 in=f16 out=f32 x=b0 w=b1 y=b6\n"
                  "buffer 2 param 1 32         # declared after its uses\n"
                  "buffer 9 temp 8\n"
                  "buffer 8 temp 512\n"),
            SPARSEOPT_OK)
      << lastError();
  EXPECT_EQ(sparseopt_program_num_inputs(program), 2);
  EXPECT_EQ(sparseopt_program_input_bytes(program, 1), 16u);
  EXPECT_EQ(sparseopt_program_num_outputs(program), 1);
  ASSERT_EQ(sparseopt_program_num_params(program), 2);
  EXPECT_EQ(sparseopt_program_param_bytes(program, 0), 512u);
  EXPECT_EQ(sparseopt_program_param_bytes(program, 1), 32u);
  EXPECT_EQ(sparseopt_program_param_bytes(program, 2), 0u);
  EXPECT_TRUE(contains(lastError(), "index 2 out of range (the program has 2)"));

  const char *steps[][2] = {
      {"launch compress", "prepare"},
      {"gemm m=16 n=16 k=16 in=f16 out=f16 x=b8 w=b1 y=b4", "prepare"},
      {"gemm m=4 n=16 k=16 in=f16 out=f32 x=b0 w=b4 y=b6", "run"},
      {"launch spmm", "run"},
      {"gemm m=4 n=16 k=16 in=f16 out=f32 x=b0 w=b1 y=b6", "run"}};
  ASSERT_EQ(sparseopt_program_num_steps(program), 5);
  for (int i = 0; i < 5; ++i) {
    EXPECT_STREQ(sparseopt_program_step(program, i), steps[i][0]) << i;
    EXPECT_STREQ(sparseopt_program_step_stage(program, i), steps[i][1]) << i;
  }
  EXPECT_EQ(sparseopt_program_step_stage(program, 5), nullptr);
  EXPECT_TRUE(contains(lastError(), "sparseopt_program_step_stage: index 5"));
  ASSERT_EQ(sparseopt_program_num_launches(program), 2);
  EXPECT_STREQ(sparseopt_program_launch_kernel(program, 1), "spmm");

  ASSERT_EQ(sparseopt_program_num_checks(program), 2);
  EXPECT_STREQ(sparseopt_program_check(program, 0),
               "check b9 param 1 pattern 14:16 groups 2147483647");
  EXPECT_STREQ(sparseopt_program_check(program, 1),
               "check b5 param 0 pattern 2:4 groups 4");
  EXPECT_EQ(sparseopt_program_check(program, 2), nullptr);
  EXPECT_TRUE(contains(lastError(), "sparseopt_program_check: index 2"));
}

TEST_F(ArtifactTest, ParsesStats) {
  // Stats name temp counters (u32 or u64), with or without a total, and
  // may come before their buffer; reading one needs a loaded program.
  ASSERT_EQ(parse("sparseopt-program 2\n"
                  "module kernels.ptx\n"
                  "stat twell0.fallback_rows b1 u32 of 64   # rows\n"
                  "buffer 0 input 0 8\n"
                  "buffer 1 temp 4\n"
                  "buffer 2 temp 16\n"
                  "stat twell0.active_neurons b2 u64\n"
                  "stat twell1.active_neurons b2 u64 of 100 limit 9.6e-03\n"
                  "launch k grid 1 1 1 block 32 1 1 smem 0 args b0 b1 b2\n"),
            SPARSEOPT_OK)
      << lastError();
  ASSERT_EQ(sparseopt_program_num_stats(program), 3);
  EXPECT_DOUBLE_EQ(sparseopt_program_stat_limit(program, 2), 0.0096);
  EXPECT_EQ(sparseopt_program_stat_total(program, 2), 100u);
  EXPECT_LT(sparseopt_program_stat_limit(program, 0), 0.0);
  EXPECT_LT(sparseopt_program_stat_limit(program, 3), 0.0);
  EXPECT_STREQ(sparseopt_program_stat_name(program, 0), "twell0.fallback_rows");
  EXPECT_EQ(sparseopt_program_stat_total(program, 0), 64u);
  EXPECT_STREQ(sparseopt_program_stat_name(program, 1),
               "twell0.active_neurons");
  EXPECT_EQ(sparseopt_program_stat_total(program, 1), 0u);
  EXPECT_EQ(sparseopt_program_stat_name(program, 3), nullptr);
  EXPECT_TRUE(contains(lastError(), "sparseopt_program_stat_name: index 3"));
  EXPECT_EQ(sparseopt_program_stat_total(program, -1), 0u);
  uint64_t value = 7;
  EXPECT_EQ(sparseopt_program_read_stat(program, 0, nullptr, &value),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "was only parsed"));
  EXPECT_EQ(value, 7u);
  EXPECT_EQ(sparseopt_program_read_stat(program, 3, nullptr, &value),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "stat index 3 out of range (3 stats)"));
  EXPECT_EQ(sparseopt_program_read_stat(program, 0, nullptr, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sparseopt_program_read_stat(nullptr, 0, nullptr, &value),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sparseopt_program_num_stats(nullptr), -1);
}

TEST_F(ArtifactTest, ParsesArenaTemps) {
  // Temps in the arena share its bytes (here two at offset 0, one past
  // them), beside a temp with its own allocation.
  ASSERT_EQ(parse("sparseopt-program 2\n"
                  "module kernels.ptx\n"
                  "buffer 0 input 0 8\n"
                  "arena 512\n"
                  "buffer 1 temp 256 arena 0\n"
                  "buffer 2 temp 256 arena 256\n"
                  "buffer 3 temp 128 arena 0\n"
                  "buffer 4 temp 16\n"
                  "launch k grid 1 1 1 block 32 1 1 smem 0 args b0 b1 b2 b3 b4\n"),
            SPARSEOPT_OK)
      << lastError();
}

TEST_F(ArtifactTest, ParsesEveryCheckPattern) {
  // 2:4 and (2N-2):2N for N = 2..8, the smallest group count.
  std::string manifest = "sparseopt-program 2\nmodule kernels.ptx\n"
                         "buffer 0 param 0 2\n"
                         "buffer 1 temp 4\nstage prepare\n";
  const char *patterns[] = {"2:4",   "4:6",   "6:8",  "8:10",
                            "10:12", "12:14", "14:16"};
  for (const char *pattern : patterns)
    manifest += std::string("check b1 param 0 pattern ") + pattern +
                " groups 1\n";
  ASSERT_EQ(parse(manifest), SPARSEOPT_OK) << lastError();
  ASSERT_EQ(sparseopt_program_num_checks(program), 7);
  for (int i = 0; i < 7; ++i)
    EXPECT_EQ(sparseopt_program_check(program, i),
              std::string("check b1 param 0 pattern ") + patterns[i] +
                  " groups 1");
  EXPECT_EQ(sparseopt_program_num_steps(program), 0);
  EXPECT_EQ(sparseopt_program_num_inputs(program), 0);
}

TEST_F(ArtifactTest, StageLinesAreOptional) {
  // 'stage run' alone (after run steps, which it leaves run steps), an
  // empty prepare stage, and steps before 'stage run' without 'stage
  // prepare': all run steps.
  ASSERT_EQ(parse("sparseopt-program 2\nmodule kernels.ptx\n"
                  "launch a grid 1 1 1 block 32 1 1 smem 0 args\n"
                  "stage run\n"
                  "launch b grid 1 1 1 block 32 1 1 smem 0 args\n"),
            SPARSEOPT_OK)
      << lastError();
  ASSERT_EQ(sparseopt_program_num_steps(program), 2);
  EXPECT_STREQ(sparseopt_program_step_stage(program, 0), "run");
  EXPECT_STREQ(sparseopt_program_step_stage(program, 1), "run");
  EXPECT_EQ(sparseopt_program_destroy(program), SPARSEOPT_OK);
  program = nullptr;

  ASSERT_EQ(parse("sparseopt-program 2\nmodule kernels.ptx\n"
                  "stage prepare\nstage run\n"
                  "launch b grid 1 1 1 block 32 1 1 smem 0 args\n"),
            SPARSEOPT_OK)
      << lastError();
  ASSERT_EQ(sparseopt_program_num_steps(program), 1);
  EXPECT_STREQ(sparseopt_program_step_stage(program, 0), "run");
  EXPECT_EQ(sparseopt_program_destroy(program), SPARSEOPT_OK);
  program = nullptr;

  // Only a prepare stage: every step is a prepare step.
  ASSERT_EQ(parse("sparseopt-program 2\nmodule kernels.ptx\n"
                  "buffer 0 param 0 64\nstage prepare\n"
                  "launch p grid 1 1 1 block 32 1 1 smem 0 args b0\n"),
            SPARSEOPT_OK)
      << lastError();
  ASSERT_EQ(sparseopt_program_num_steps(program), 1);
  EXPECT_STREQ(sparseopt_program_step_stage(program, 0), "prepare");
}

TEST_F(ArtifactTest, ParsedProgramCannotBind) {
  ASSERT_EQ(parse("sparseopt-program 2\nmodule kernels.ptx\n"
                  "buffer 0 param 0 64\nbuffer 1 input 0 8\n"
                  "buffer 2 param 1 16\n"),
            SPARSEOPT_OK)
      << lastError();
  const sparseopt_deviceptr params[2] = {0x1000, 0x2000};
  // The count, then the pointers, then the state.
  EXPECT_EQ(sparseopt_program_bind(program, params, 1, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "sparseopt_program_bind: the program has "
                                    "2 param(s), got 1"));
  EXPECT_EQ(sparseopt_program_bind(program, nullptr, 0, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "has 2 param(s), got 0"));
  EXPECT_EQ(sparseopt_program_bind(program, nullptr, 2, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "params must not be NULL: the program "
                                    "has 2 param(s)"));
  const sparseopt_deviceptr null[2] = {0, 0};
  EXPECT_EQ(sparseopt_program_bind(program, null, 2, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "param 0 is a null device pointer"));
  // A misaligned pointer.
  const sparseopt_deviceptr misaligned[2] = {params[0] + 4, 0x2000};
  EXPECT_EQ(sparseopt_program_bind(program, misaligned, 2, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "param 0: device pointer 0x1004"));
  EXPECT_TRUE(contains(lastError(), "is not 16-byte aligned"));
  EXPECT_EQ(sparseopt_program_bind(program, params, 2, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "sparseopt_program_bind: program "));
  EXPECT_TRUE(contains(lastError(), "was only parsed"));
  // A run of a parsed program fails on that, not on the missing bind.
  EXPECT_EQ(sparseopt_program_run(program, params, nullptr, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "only parsed"));
}

/// One malformed manifest and what parsing it must report.
struct MalformedCase {
  const char *name;
  const char *manifest;
  sparseopt_status status;
  int line;             ///< expected in the message as "program.txt:<line>:"
  const char *expected; ///< expected part of the message
};

std::ostream &operator<<(std::ostream &os, const MalformedCase &c) {
  return os << c.name;
}

class MalformedManifest
    : public ArtifactTest,
      public ::testing::WithParamInterface<MalformedCase> {};

TEST_P(MalformedManifest, IsRejectedWithLineNumber) {
  const MalformedCase &c = GetParam();
  EXPECT_EQ(parse(c.manifest), c.status) << lastError();
  EXPECT_EQ(program, nullptr);
  std::string message = lastError();
  EXPECT_TRUE(contains(message, "program.txt:" + std::to_string(c.line) + ": "));
  EXPECT_TRUE(contains(message, c.expected));
}

#define HEADER "sparseopt-program 2\nmodule kernels.ptx\n"
#define GRID " grid 1 1 1 block 32 1 1 smem 0 args"

const MalformedCase kMalformedCases[] = {
    {"UnknownDirective", HEADER "buffer 0 temp 8\nkernel foo\n",
     SPARSEOPT_ERROR_PARSE, 4, "unknown directive 'kernel'"},
    {"WrongVersion", "# header follows\nsparseopt-program 1\n",
     SPARSEOPT_ERROR_PARSE, 2,
     "unsupported manifest version 1 (this runtime reads versions 2 to 4): "
     "recompile"},
    {"NonNumericVersion", "sparseopt-program one\n", SPARSEOPT_ERROR_PARSE, 1,
     "invalid manifest version 'one'"},
    {"PersistentGridInVersion2",
     HEADER "launch k grid persistent:8:1:0 1 1 block 32 1 1 smem 0 args\n",
     SPARSEOPT_ERROR_PARSE, 3,
     "a persistent grid needs program version 3, this program is version 2"},
    {"PersistentGridMissingField",
     "sparseopt-program 3\nmodule kernels.ptx\n"
     "launch k grid persistent:8:1 1 1 block 32 1 1 smem 0 args\n",
     SPARSEOPT_ERROR_PARSE, 3,
     "invalid persistent grid 'persistent:8:1' (expected "
     "persistent:<units>:<cluster>:<reserved>)"},
    {"PersistentGridNotANumber",
     "sparseopt-program 3\nmodule kernels.ptx\n"
     "launch k grid persistent:8:one:0 1 1 block 32 1 1 smem 0 args\n",
     SPARSEOPT_ERROR_PARSE, 3, "invalid persistent grid 'persistent:8:one:0'"},
    {"PersistentGridZeroUnits",
     "sparseopt-program 3\nmodule kernels.ptx\n"
     "launch k grid persistent:0:1:0 1 1 block 32 1 1 smem 0 args\n",
     SPARSEOPT_ERROR_PARSE, 3,
     "units must be >= 1 and the cluster 1 to 16"},
    {"PersistentGridClusterTooLarge",
     "sparseopt-program 3\nmodule kernels.ptx\n"
     "launch k grid persistent:8:17:0 1 1 block 32 1 1 smem 0 args\n",
     SPARSEOPT_ERROR_PARSE, 3,
     "units must be >= 1 and the cluster 1 to 16"},
    {"ProgrammaticLaunchInVersion3",
     "sparseopt-program 3\nmodule kernels.ptx\n"
     "launch k grid 1 1 1 block 32 1 1 smem 0 pdl args\n",
     SPARSEOPT_ERROR_PARSE, 3,
     "a programmatic launch ('pdl') needs program version 4, this program is "
     "version 3"},
    {"ProgrammaticLaunchInPrepareStage",
     "sparseopt-program 4\nmodule kernels.ptx\nstage prepare\n"
     "launch k grid 1 1 1 block 32 1 1 smem 0 pdl args\n",
     SPARSEOPT_ERROR_PARSE, 4,
     "a prepare-stage launch cannot be programmatic ('pdl')"},
    {"ProgrammaticLaunchKeyAfterArgs",
     "sparseopt-program 4\nmodule kernels.ptx\n"
     "launch k grid 1 1 1 block 32 1 1 smem 0 args pdl\n",
     SPARSEOPT_ERROR_PARSE, 3, "invalid launch argument 'pdl'"},
    {"PersistentGridTooLarge",
     "sparseopt-program 3\nmodule kernels.ptx\n"
     "launch k grid persistent:999999999:16:0 1 1 block 32 1 1 smem 0 args\n",
     SPARSEOPT_ERROR_PARSE, 3, "exceeds CUDA's limit (x < 2^31)"},
    {"HeaderNotFirst", "module kernels.ptx\nsparseopt-program 2\n",
     SPARSEOPT_ERROR_PARSE, 1, "first directive must be 'sparseopt-program 4'"},
    {"RepeatedHeader", HEADER "sparseopt-program 2\n", SPARSEOPT_ERROR_PARSE, 3,
     "repeated 'sparseopt-program' header (first at line 1)"},
    {"OnlyEnd", "# nothing here\n\n", SPARSEOPT_ERROR_PARSE, 3,
     "the first directive must be 'sparseopt-program 4', got 'end'"},
    {"DirectiveAfterEnd", HEADER "end\nbuffer 0 temp 8\n",
     SPARSEOPT_ERROR_PARSE, 4,
     "directive 'buffer' after the program's 'end' line (line 3)"},
    {"EndWithOperand", HEADER "end now\n", SPARSEOPT_ERROR_PARSE, 3,
     "expected 'end' alone on its line"},
    {"MissingModule", "sparseopt-program 2\nbuffer 0 temp 8\n\n",
     SPARSEOPT_ERROR_PARSE, 4, "missing 'module' directive"},
    {"TwoModules", HEADER "module kernels.ptx\n", SPARSEOPT_ERROR_PARSE, 3,
     "second 'module' directive (the first is at line 2)"},
    {"ModuleFileMissing", "sparseopt-program 2\nmodule missing.ptx\n",
     SPARSEOPT_ERROR_IO, 2, "module file 'missing.ptx'"},
    {"ModuleWithoutPath", "sparseopt-program 2\nmodule\n",
     SPARSEOPT_ERROR_PARSE, 2, "expected 'module <path>'"},
    {"NonNumericBufferId", HEADER "buffer x input 0 8\n", SPARSEOPT_ERROR_PARSE,
     3, "buffer id: expected an integer"},
    {"NegativeBufferId", HEADER "buffer -1 temp 8\n", SPARSEOPT_ERROR_PARSE, 3,
     "buffer id: expected an integer from 0"},
    {"DuplicateBufferId", HEADER "buffer 0 temp 8\n\nbuffer 0 output 0 8\n",
     SPARSEOPT_ERROR_PARSE, 5, "duplicate buffer id 0 (first declared at line 3)"},
    {"UnknownBufferKind", HEADER "buffer 0 scratch 8\n", SPARSEOPT_ERROR_PARSE,
     3, "unknown buffer kind 'scratch'"},
    {"NonNumericBytes", HEADER "buffer 0 temp 12kb\n", SPARSEOPT_ERROR_PARSE, 3,
     "byte size: expected an integer from 1 to 18446744073709551615, got "
     "'12kb'"},
    {"NonNumericIndex", HEADER "buffer 0 input first 8\n",
     SPARSEOPT_ERROR_PARSE, 3, "slot index: expected an integer"},
    {"TempWithoutBytes", HEADER "buffer 0 temp\n", SPARSEOPT_ERROR_PARSE, 3,
     "expected 'buffer <id> temp <bytes> [arena <offset>]'"},
    {"TempArenaWithoutArena", HEADER "buffer 0 temp 8 arena 0\n",
     SPARSEOPT_ERROR_PARSE, 3,
     "temp buffer 0 lives in the arena, but no 'arena <bytes>' line "
     "precedes it"},
    {"TempPastArena", HEADER "arena 256\nbuffer 0 temp 16 arena 248\n",
     SPARSEOPT_ERROR_PARSE, 4,
     "temp buffer 0 (16 bytes at arena offset 248) does not fit in the arena "
     "of 256 bytes"},
    {"TempArenaBadKeyword", HEADER "arena 256\nbuffer 0 temp 16 at 0\n",
     SPARSEOPT_ERROR_PARSE, 4,
     "expected 'buffer <id> temp <bytes> [arena <offset>]'"},
    {"DuplicateArena", HEADER "arena 256\narena 512\n", SPARSEOPT_ERROR_PARSE,
     4, "duplicate arena (first declared at line 3)"},
    {"ArenaWithoutBytes", HEADER "arena\n", SPARSEOPT_ERROR_PARSE, 3,
     "expected 'arena <bytes>'"},
    {"InputExtraToken", HEADER "buffer 0 input 0 8 9\n", SPARSEOPT_ERROR_PARSE,
     3, "expected 'buffer <id> input <index> <bytes>'"},
    {"DuplicateInputIndex", HEADER "buffer 0 input 0 8\nbuffer 1 input 0 8\n",
     SPARSEOPT_ERROR_PARSE, 4, "input index 0 is already bound to buffer 0"},
    {"InputIndexGap",
     HEADER "buffer 0 input 0 8\nbuffer 1 input 2 8\nbuffer 2 output 0 8\n",
     SPARSEOPT_ERROR_PARSE, 4,
     "input indices must be contiguous from 0: index 2 is declared but index "
     "1 is missing"},
    {"OutputIndexGap", HEADER "buffer 0 input 0 8\nbuffer 7 output 1 8\n",
     SPARSEOPT_ERROR_PARSE, 4,
     "output indices must be contiguous from 0: index 1 is declared but "
     "index 0 is missing"},
    {"ConstantFileMissing", HEADER "buffer 1 constant nope.bin 100\n",
     SPARSEOPT_ERROR_IO, 3, "constant file 'nope.bin' of buffer 1"},
    {"ConstantSizeMismatch", HEADER "buffer 1 constant c.bin 4096\n",
     SPARSEOPT_ERROR_PARSE, 3,
     "constant file 'c.bin' of buffer 1 has 100 bytes but the manifest "
     "declares 4096"},
    {"LaunchUnknownBuffer",
     HEADER "buffer 0 input 0 8\nlaunch k" GRID " b0 b7\n",
     SPARSEOPT_ERROR_PARSE, 4, "launch of kernel 'k' uses unknown buffer b7"},
    {"LaunchNonNumericGrid",
     HEADER "launch k grid 1 x 1 block 32 1 1 smem 0 args\n",
     SPARSEOPT_ERROR_PARSE, 3, "grid: expected an integer"},
    {"LaunchZeroBlock", HEADER "launch k grid 1 1 1 block 0 1 1 smem 0 args\n",
     SPARSEOPT_ERROR_PARSE, 3, "block dimensions must be >= 1"},
    {"LaunchNonNumericSmem",
     HEADER "launch k grid 1 1 1 block 1 1 1 smem lots args\n",
     SPARSEOPT_ERROR_PARSE, 3, "smem: expected an integer"},
    {"LaunchMissingSmem", HEADER "launch k grid 1 1 1 block 32 1 1 args\n",
     SPARSEOPT_ERROR_PARSE, 3, "expected 'smem', got 'args'"},
    {"LaunchMissingArgsKeyword",
     HEADER "launch k grid 1 1 1 block 32 1 1 smem 0\n", SPARSEOPT_ERROR_PARSE,
     3, "launch line ends early: expected 'args'"},
    {"LaunchEndsInGrid", HEADER "launch k grid 1 1\n", SPARSEOPT_ERROR_PARSE, 3,
     "launch line ends early: expected 3 grid dimensions"},
    {"LaunchNonNumericI32", HEADER "launch k" GRID " i32:abc\n",
     SPARSEOPT_ERROR_PARSE, 3,
     "invalid launch argument 'i32:abc': expected a 32-bit integer"},
    {"LaunchI32OutOfRange", HEADER "launch k" GRID " i32:4294967296\n",
     SPARSEOPT_ERROR_PARSE, 3, "expected a 32-bit integer"},
    {"LaunchNonNumericI64", HEADER "launch k" GRID " i64:1.5\n",
     SPARSEOPT_ERROR_PARSE, 3, "expected a 64-bit integer"},
    {"LaunchNonNumericF32", HEADER "launch k" GRID " f32:1.5x\n",
     SPARSEOPT_ERROR_PARSE, 3, "expected a floating-point number"},
    {"LaunchNonNumericBufferArg", HEADER "launch k" GRID " bx\n",
     SPARSEOPT_ERROR_PARSE, 3, "invalid launch argument 'bx'"},
    {"LaunchUnknownArgType", HEADER "launch k" GRID " u8:3\n",
     SPARSEOPT_ERROR_PARSE, 3,
     "expected b<id>, i32:<value>, i64:<value>, f32:<value> or "
     "tmap:b<id>:<dtype>:<dims>:<box>:<swizzle>"},
    // Tensor maps: tmap:b<id>:<dtype>:<dims>:<box>:<swizzle>.
    {"TensorMapFieldCount", HEADER "launch k" GRID " tmap:b0:f16:64x64:64x8\n",
     SPARSEOPT_ERROR_PARSE, 3,
     "invalid tensor map argument 'tmap:b0:f16:64x64:64x8': expected "
     "tmap:b<id>:<dtype>:<dims>:<box>:<swizzle>"},
    {"TensorMapExtraField",
     HEADER "launch k" GRID " tmap:b0:f16:64x64:64x8:0:1\n",
     SPARSEOPT_ERROR_PARSE, 3, "expected tmap:b<id>:<dtype>:<dims>"},
    {"TensorMapBuffer", HEADER "launch k" GRID " tmap:x0:f16:64x64:64x8:0\n",
     SPARSEOPT_ERROR_PARSE, 3, "expected b<buffer id>, got 'x0'"},
    {"TensorMapBufferId", HEADER "launch k" GRID " tmap:b:f16:64x64:64x8:0\n",
     SPARSEOPT_ERROR_PARSE, 3, "expected b<buffer id>, got 'b'"},
    {"TensorMapDType", HEADER "launch k" GRID " tmap:b0:f64:64x64:64x8:0\n",
     SPARSEOPT_ERROR_PARSE, 3,
     "unknown element type 'f64' (expected f16, bf16, f32 or i32)"},
    {"TensorMapRank",
     HEADER "launch k" GRID " tmap:b0:f16:2x2x2x2x2x8:1x1x1x1x1x8:0\n",
     SPARSEOPT_ERROR_PARSE, 3, "a tensor map has 1 to 5 dimensions, got 6"},
    {"TensorMapNoDims", HEADER "launch k" GRID " tmap:b0:f16::8:0\n",
     SPARSEOPT_ERROR_PARSE, 3,
     "dimension '': expected an integer from 1 to 4294967296"},
    {"TensorMapZeroDim", HEADER "launch k" GRID " tmap:b0:f16:0x64:8x8:0\n",
     SPARSEOPT_ERROR_PARSE, 3,
     "dimension '0': expected an integer from 1 to 4294967296"},
    {"TensorMapHugeDim",
     HEADER "launch k" GRID " tmap:b0:f16:4294967297x8:8x8:0\n",
     SPARSEOPT_ERROR_PARSE, 3, "dimension '4294967297': expected an integer"},
    {"TensorMapNonNumericDim",
     HEADER "launch k" GRID " tmap:b0:f16:64xN:8x8:0\n", SPARSEOPT_ERROR_PARSE,
     3, "dimension 'N': expected an integer"},
    {"TensorMapBoxRank", HEADER "launch k" GRID " tmap:b0:f16:64x64:8:0\n",
     SPARSEOPT_ERROR_PARSE, 3,
     "the box has 1 dimension(s) but the tensor has 2"},
    {"TensorMapBoxZero", HEADER "launch k" GRID " tmap:b0:f16:64x64:0x8:0\n",
     SPARSEOPT_ERROR_PARSE, 3,
     "box dimension '0': expected an integer from 1 to 256"},
    {"TensorMapBoxLarge",
     HEADER "launch k" GRID " tmap:b0:f16:1024x64:257x8:0\n",
     SPARSEOPT_ERROR_PARSE, 3,
     "box dimension '257': expected an integer from 1 to 256"},
    {"TensorMapSwizzle", HEADER "launch k" GRID " tmap:b0:f16:64x64:64x8:16\n",
     SPARSEOPT_ERROR_PARSE, 3,
     "swizzle: expected 0, 32, 64 or 128 (bytes), got '16'"},
    {"TensorMapNonNumericSwizzle",
     HEADER "launch k" GRID " tmap:b0:f16:64x64:64x8:64B\n",
     SPARSEOPT_ERROR_PARSE, 3, "got '64B'"},
    {"TensorMapInnerBytes",
     HEADER "launch k" GRID " tmap:b0:f16:64x64:64x4:0\n",
     SPARSEOPT_ERROR_PARSE, 3,
     "the innermost box extent is 8 bytes; it must be a multiple of 16"},
    {"TensorMapSwizzleSpan",
     HEADER "launch k" GRID " tmap:b0:f16:64x64:64x64:64\n",
     SPARSEOPT_ERROR_PARSE, 3,
     "the innermost box extent of 128 bytes exceeds the 64-byte swizzle "
     "span"},
    {"TensorMapPitch", HEADER "launch k" GRID " tmap:b0:f16:64x12:8x8:0\n",
     SPARSEOPT_ERROR_PARSE, 3,
     "the row pitch of dimension 0 is 24 bytes; it must be a multiple of 16"},
    {"TensorMapPitchLimit",
     HEADER "launch k" GRID " tmap:b0:f32:2x4294967296x256:1x1x64:0\n",
     SPARSEOPT_ERROR_PARSE, 3,
     "the row pitch of dimension 0 is 2^40 bytes or more"},
    {"TensorMapUnknownBuffer",
     HEADER "buffer 0 temp 8192\nlaunch k" GRID " tmap:b7:f16:64x64:64x8:0\n",
     SPARSEOPT_ERROR_PARSE, 4, "launch of kernel 'k' uses unknown buffer b7"},
    {"TensorMapLargerThanBuffer",
     HEADER "buffer 0 temp 8191\nlaunch k" GRID
            " i32:1 tmap:b0:f16:64x64:64x8:0\n",
     SPARSEOPT_ERROR_PARSE, 4,
     "launch of kernel 'k' argument 1: the tensor map (f16 64x64, box 64x8, "
     "swizzle 0) spans 8192 bytes but buffer 0 has 8191"},
    {"TensorMapSpanOverflow",
     HEADER "buffer 0 temp 8192\nlaunch k" GRID
            " tmap:b0:f32:4294967296x4294967296:1x4:0\n",
     SPARSEOPT_ERROR_PARSE, 4,
     "spans 2^64 or more bytes but buffer 0 has 8192"},
};

#undef HEADER
#undef GRID

// Gemm lines. After the header, GEMM_BUFFERS declares x (16x32 f16), w
// (64x32 f16), y (16x64 f32) and a bias of 64 f32 on lines 2-5.
#define GEMM_BUFFERS                                                           \
  "sparseopt-program 2\nbuffer 0 input 0 1024\nbuffer 1 temp 4096\n"          \
  "buffer 2 output 0 4096\nbuffer 3 input 1 256\n"
#define GEMM_SHAPE "gemm m=16 n=64 k=32 in=f16 out=f32 "
#define GEMM_OPERANDS GEMM_SHAPE "x=b0 w=b1 y=b2"

const MalformedCase kMalformedGemmCases[] = {
    // A module is optional only when there are gemm lines and no launch.
    {"LaunchThenGemmWithoutModule",
     "sparseopt-program 2\nbuffer 0 temp 64\nbuffer 1 temp 64\n"
     "buffer 2 temp 64\nlaunch k grid 1 1 1 block 32 1 1 smem 0 args\n"
     "gemm m=4 n=4 k=4 in=f16 out=f32 x=b0 w=b1 y=b2\n",
     SPARSEOPT_ERROR_PARSE, 7,
     "missing 'module' directive: a program needs exactly one module"},
    {"GemmAndLaunchWithoutModule",
     "sparseopt-program 2\nbuffer 0 temp 64\nbuffer 1 temp 64\n"
     "buffer 2 temp 64\ngemm m=4 n=4 k=4 in=f16 out=f32 x=b0 w=b1 y=b2\n"
     "launch k grid 1 1 1 block 32 1 1 smem 0 args\n",
     SPARSEOPT_ERROR_PARSE, 7, "missing 'module' directive"},
    {"GemmNoFields", GEMM_BUFFERS "gemm\n", SPARSEOPT_ERROR_PARSE, 6,
     "missing gemm key 'm' (gemm m=<M> n=<N> k=<K>"},
    {"GemmZeroM", GEMM_BUFFERS "gemm m=0 n=64 k=32 in=f16 out=f32 x=b0 w=b1 "
                  "y=b2\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "gemm m: expected an integer from 1 to 2147483647, got '0'"},
    {"GemmNTooLarge", GEMM_BUFFERS "gemm m=16 n=2147483648 k=32 in=f16 "
                      "out=f32 x=b0 w=b1 y=b2\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "gemm n: expected an integer from 1 to 2147483647, got '2147483648'"},
    {"GemmNonNumericK", GEMM_BUFFERS "gemm m=16 n=64 k=32x in=f16 out=f32 "
                        "x=b0 w=b1 y=b2\n",
     SPARSEOPT_ERROR_PARSE, 6, "gemm k: expected an integer from 1 to "
                               "2147483647, got '32x'"},
    {"GemmNegativeM", GEMM_BUFFERS "gemm m=-16 n=64 k=32 in=f16 out=f32 "
                      "x=b0 w=b1 y=b2\n",
     SPARSEOPT_ERROR_PARSE, 6, "gemm m: expected an integer"},
    {"GemmUnknownInType", GEMM_BUFFERS "gemm m=16 n=64 k=32 in=f32 out=f32 "
                          "x=b0 w=b1 y=b2\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "gemm in: unknown element type 'f32' (expected f16 or bf16)"},
    {"GemmUnknownOutType", GEMM_BUFFERS "gemm m=16 n=64 k=32 in=f16 out=f8 "
                           "x=b0 w=b1 y=b2\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "gemm out: unknown element type 'f8' (expected f16, bf16 or f32)"},
    {"GemmUnknownBiasType", GEMM_BUFFERS GEMM_OPERANDS " bias=b3:i32\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "gemm bias: unknown element type 'i32' (expected f16, bf16 or f32)"},
    {"GemmBiasWithoutType", GEMM_BUFFERS GEMM_OPERANDS " bias=b3\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "gemm bias: expected b<buffer id>:<f16|bf16|f32>, got 'b3'"},
    {"GemmBiasBadBuffer", GEMM_BUFFERS GEMM_OPERANDS " bias=3:f32\n",
     SPARSEOPT_ERROR_PARSE, 6, "gemm bias: expected b<buffer id>, got '3'"},
    {"GemmBadBufferReference", GEMM_BUFFERS GEMM_SHAPE "x=0 w=b1 y=b2\n",
     SPARSEOPT_ERROR_PARSE, 6, "gemm x: expected b<buffer id>, got '0'"},
    {"GemmUnknownBuffer", GEMM_BUFFERS GEMM_SHAPE "x=b0 w=b1 y=b9\n",
     SPARSEOPT_ERROR_PARSE, 6, "gemm operand y uses unknown buffer b9"},
    {"GemmUnknownBiasBuffer", GEMM_BUFFERS GEMM_OPERANDS " bias=b8:f32\n",
     SPARSEOPT_ERROR_PARSE, 6, "gemm operand bias uses unknown buffer b8"},
    {"GemmXTooSmall",
     "sparseopt-program 2\nbuffer 0 input 0 1023\nbuffer 1 temp 4096\n"
     "buffer 2 output 0 4096\n\n" GEMM_OPERANDS "\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "gemm operand x (f16 16x32) needs 1024 bytes but buffer 0 has 1023"},
    {"GemmWTooSmall",
     "sparseopt-program 2\nbuffer 0 input 0 1024\nbuffer 1 temp 4095\n"
     "buffer 2 output 0 4096\n" GEMM_OPERANDS "\n",
     SPARSEOPT_ERROR_PARSE, 5,
     "gemm operand w (f16 64x32) needs 4096 bytes but buffer 1 has 4095"},
    {"GemmYTooSmall",
     "sparseopt-program 2\nbuffer 0 input 0 1024\nbuffer 1 temp 4096\n"
     "buffer 2 output 0 2048\n" GEMM_OPERANDS "\n",
     SPARSEOPT_ERROR_PARSE, 5,
     "gemm operand y (f32 16x64) needs 4096 bytes but buffer 2 has 2048"},
    {"GemmBiasShorterThanN",
     GEMM_BUFFERS "buffer 4 temp 252\n" GEMM_OPERANDS " bias=b4:f32 act=relu\n",
     SPARSEOPT_ERROR_PARSE, 7,
     "gemm operand bias (f32 64) needs 256 bytes but buffer 4 has 252"},
    {"GemmF16BiasShorterThanN",
     GEMM_BUFFERS "buffer 4 temp 127\n"
                  "gemm m=16 n=64 k=32 in=f16 out=f16 x=b0 w=b1 y=b2 "
                  "bias=b4:f16\n",
     SPARSEOPT_ERROR_PARSE, 7,
     "gemm operand bias (f16 64) needs 128 bytes but buffer 4 has 127"},
    // Type combinations cuBLASLt does not compute.
    {"GemmF16ToBf16", GEMM_BUFFERS "gemm m=16 n=64 k=32 in=f16 out=bf16 "
                      "x=b0 w=b1 y=b2\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "gemm in=f16 out=bf16: the output type must be the input type or f32"},
    {"GemmBf16ToF16", GEMM_BUFFERS "gemm m=16 n=64 k=32 in=bf16 out=f16 "
                      "x=b0 w=b1 y=b2 act=relu\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "gemm in=bf16 out=f16: the output type must be the input type or f32"},
    {"GemmBiasTypeNotOutputType", GEMM_BUFFERS GEMM_OPERANDS " bias=b3:f16\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "gemm bias type f16 differs from out=f32: cuBLASLt adds a bias of the "
     "output's type"},
    {"GemmF32BiasOnF16Output",
     GEMM_BUFFERS "gemm m=16 n=64 k=32 in=f16 out=f16 x=b0 w=b1 y=b2 "
                  "bias=b3:f32 act=relu\n",
     SPARSEOPT_ERROR_PARSE, 6, "gemm bias type f32 differs from out=f16"},
    {"GemmOutputOverInput", GEMM_BUFFERS GEMM_SHAPE "x=b2 w=b1 y=b2\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "gemm output y (buffer 2) is also operand x: cuBLASLt cannot write its "
     "result over an input"},
    {"GemmUnknownKey", GEMM_BUFFERS GEMM_OPERANDS " alpha=2\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "unknown gemm key 'alpha' (expected m, n, k, in, out, x, w, y, bias or "
     "act)"},
    {"GemmKeyCase", GEMM_BUFFERS "gemm M=16 n=64 k=32 in=f16 out=f32 x=b0 "
                    "w=b1 y=b2\n",
     SPARSEOPT_ERROR_PARSE, 6, "unknown gemm key 'M'"},
    {"GemmFieldWithoutEquals", GEMM_BUFFERS "gemm m 16\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "invalid gemm field 'm': expected <key>=<value>"},
    {"GemmFieldWithoutValue", GEMM_BUFFERS "gemm m= n=64\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "invalid gemm field 'm=': expected <key>=<value>"},
    {"GemmFieldWithoutKey", GEMM_BUFFERS GEMM_OPERANDS " =relu\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "invalid gemm field '=relu': expected <key>=<value>"},
    {"GemmDuplicateKey", GEMM_BUFFERS "gemm m=16 m=16 n=64\n",
     SPARSEOPT_ERROR_PARSE, 6, "duplicate gemm key 'm'"},
    {"GemmDuplicateOptionalKey",
     GEMM_BUFFERS GEMM_OPERANDS " act=relu act=relu\n", SPARSEOPT_ERROR_PARSE,
     6, "duplicate gemm key 'act'"},
    {"GemmKeysOutOfOrder", GEMM_BUFFERS "gemm n=64 m=16 k=32 in=f16 out=f32 "
                           "x=b0 w=b1 y=b2\n",
     SPARSEOPT_ERROR_PARSE, 6, "gemm key 'n' out of order: expected 'm' first"},
    {"GemmOperandsOutOfOrder", GEMM_BUFFERS GEMM_SHAPE "w=b1 x=b0 y=b2\n",
     SPARSEOPT_ERROR_PARSE, 6, "gemm key 'w' out of order: expected 'x' first"},
    {"GemmOptionalBeforeRequired", GEMM_BUFFERS GEMM_SHAPE "x=b0 w=b1 "
                                   "act=relu y=b2\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "gemm key 'act' out of order: expected 'y' first"},
    {"GemmActBeforeBias", GEMM_BUFFERS GEMM_OPERANDS " act=relu bias=b3:f32\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "gemm key 'bias' out of order: it must come before 'act'"},
    {"GemmMissingKey", GEMM_BUFFERS GEMM_SHAPE "x=b0 w=b1\n",
     SPARSEOPT_ERROR_PARSE, 6, "missing gemm key 'y'"},
    {"GemmUnknownActivation", GEMM_BUFFERS GEMM_OPERANDS " act=gelu\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "gemm act: unknown activation 'gelu' (expected relu)"},
    {"GemmUnknownDirectiveHint", GEMM_BUFFERS "matmul m=1\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "unknown directive 'matmul' (expected 'module', 'buffer', 'launch', "
     "'gemm', 'attention', 'stage', 'check', 'allreduce', 'wait', 'stat', "
     "'arena' or 'end')"},
};

// Buffers for an attention line of 1 x 4 heads x 16 queries x 64 (f16,
// 8192 bytes: q on b0, o on b2) over 2 key/value heads (4096 bytes: k, v
// on b1, b3), on lines 2-5.
#define ATTENTION_BUFFERS                                                      \
  "sparseopt-program 2\nbuffer 0 input 0 8192\nbuffer 1 input 1 4096\n"      \
  "buffer 2 output 0 8192\nbuffer 3 input 2 4096\n"
#define ATTENTION_SHAPE                                                        \
  "attention b=1 h=4 hkv=2 sq=16 sk=16 d=64 type=f16 scale=0.125 "

const MalformedCase kMalformedAttentionCases[] = {
    {"AttentionNoFields", ATTENTION_BUFFERS "attention\n",
     SPARSEOPT_ERROR_PARSE, 6, "missing attention key 'b' (attention b=<B>"},
    {"AttentionOutOfOrder",
     ATTENTION_BUFFERS "attention h=4 b=1\n", SPARSEOPT_ERROR_PARSE, 6,
     "attention key 'h' out of order: expected 'b' first"},
    {"AttentionUnknownKey",
     ATTENTION_BUFFERS ATTENTION_SHAPE "q=b0 k=b1 v=b3 o=b2 dropout=0.1\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "unknown attention key 'dropout' (expected b, h, hkv, sq, sk, d, type, "
     "scale, q, k, v, o, mask or layout)"},
    {"AttentionUnknownLayout",
     ATTENTION_BUFFERS ATTENTION_SHAPE "q=b0 k=b1 v=b3 o=b2 layout=sbhd\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "attention layout: unknown layout 'sbhd' (expected bhsd, the default, "
     "or bshd)"},
    {"AttentionLayoutBeforeMask",
     ATTENTION_BUFFERS ATTENTION_SHAPE
     "q=b0 k=b1 v=b3 o=b2 layout=bshd mask=causal\n",
     SPARSEOPT_ERROR_PARSE, 6, "attention key 'mask' out of order"},
    {"AttentionZeroHeads",
     ATTENTION_BUFFERS "attention b=1 h=0 hkv=2\n", SPARSEOPT_ERROR_PARSE, 6,
     "attention h: expected an integer from 1 to 2147483647, got '0'"},
    {"AttentionF32",
     ATTENTION_BUFFERS "attention b=1 h=4 hkv=2 sq=16 sk=16 d=64 type=f32\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "attention type: unknown element type 'f32' (expected f16 or bf16)"},
    {"AttentionScaleNotANumber",
     ATTENTION_BUFFERS "attention b=1 h=4 hkv=2 sq=16 sk=16 d=64 type=f16 "
                       "scale=inf q=b0 k=b1 v=b3 o=b2\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "attention scale: expected a finite number, got 'inf'"},
    {"AttentionHeadsNotGrouped",
     ATTENTION_BUFFERS "attention b=1 h=4 hkv=3 sq=16 sk=16 d=64 type=f16 "
                       "scale=0.125 q=b0 k=b1 v=b3 o=b2\n",
     SPARSEOPT_ERROR_PARSE, 6, "attention h=4 is not a multiple of hkv=3"},
    {"AttentionHeadSize",
     ATTENTION_BUFFERS "attention b=1 h=4 hkv=2 sq=16 sk=16 d=60 type=f16 "
                       "scale=0.125 q=b0 k=b1 v=b3 o=b2\n",
     SPARSEOPT_ERROR_PARSE, 6, "attention d=60: cuDNN's fused attention"},
    {"AttentionCausalOffset",
     ATTENTION_BUFFERS "attention b=1 h=4 hkv=2 sq=8 sk=16 d=64 type=f16 "
                       "scale=0.125 q=b0 k=b1 v=b3 o=b2 mask=causal\n",
     SPARSEOPT_ERROR_PARSE, 6, "attention mask=causal needs sq = sk"},
    {"AttentionUnknownMask",
     ATTENTION_BUFFERS ATTENTION_SHAPE "q=b0 k=b1 v=b3 o=b2 mask=sliding\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "attention mask: unknown mask 'sliding' (expected causal)"},
    {"AttentionBufferTooSmall",
     ATTENTION_BUFFERS ATTENTION_SHAPE "q=b1 k=b1 v=b3 o=b2\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "attention operand q (f16 1x4x16x64) needs 8192 bytes but buffer 1 has "
     "4096"},
    {"AttentionUnknownBuffer",
     ATTENTION_BUFFERS ATTENTION_SHAPE "q=b0 k=b9 v=b3 o=b2\n",
     SPARSEOPT_ERROR_PARSE, 6, "attention operand k uses unknown buffer b9"},
    {"AttentionInPlace",
     ATTENTION_BUFFERS ATTENTION_SHAPE "q=b0 k=b1 v=b3 o=b0\n",
     SPARSEOPT_ERROR_PARSE, 6,
     "attention output o (buffer 0) is also operand q: cuDNN cannot write its "
     "result over an input"},
    {"AttentionOverflow",
     ATTENTION_BUFFERS "attention b=2147483647 h=2147483647 hkv=1 "
                       "sq=2147483647 sk=1 d=8 type=f16 scale=1 q=b0 k=b1 "
                       "v=b3 o=b2\n",
     SPARSEOPT_ERROR_PARSE, 6, "needs 2^64 or more bytes but buffer 0 has"},
    {"AttentionInPrepareStage",
     "sparseopt-program 2\nbuffer 0 temp 8192\nbuffer 1 temp 4096\n"
     "buffer 2 temp 8192\nbuffer 3 temp 4096\nstage prepare\n" ATTENTION_SHAPE
     "q=b0 k=b1 v=b3 o=b2\n",
     SPARSEOPT_ERROR_PARSE, 7,
     "an 'attention' line is only allowed in the run stage"},
};

#undef ATTENTION_BUFFERS
#undef ATTENTION_SHAPE

TEST_F(ArtifactTest, ParsesAttentionOnlyProgram) {
  // No module: a program of library lines alone has no kernels. The scale
  // reads back as the same f32 (9 significant digits); keys in order.
  ASSERT_EQ(parse("sparseopt-program 2\n"
                  "buffer 0 input 0 2097152\n"
                  "buffer 1 input 1 524288\n"
                  "buffer 2 input 2 524288\n"
                  "buffer 3 output 0 2097152\n"
                  "attention b=1 h=32 hkv=8 sq=256 sk=256 d=128 type=bf16 "
                  "scale=0.0883883461 q=b0 k=b1 v=b2 o=b3 mask=causal\n"
                  "attention  b=1 h=32 hkv=8 sq=128 sk=256 d=128\ttype=f16 "
                  "scale=1 q=b0 k=b1 v=b2 o=b3 # not causal\n"
                  "attention b=1 h=32 hkv=8 sq=256 sk=256 d=128 type=bf16 "
                  "scale=1 q=b0 k=b1 v=b2 o=b3 mask=causal layout=bshd\n"
                  "attention b=1 h=32 hkv=8 sq=256 sk=256 d=128 type=bf16 "
                  "scale=1 q=b0 k=b1 v=b2 o=b3 layout=bhsd\n"),
            SPARSEOPT_OK)
      << lastError();
  EXPECT_EQ(sparseopt_program_num_launches(program), 0);
  ASSERT_EQ(sparseopt_program_num_steps(program), 4);
  EXPECT_STREQ(sparseopt_program_step(program, 0),
               "attention b=1 h=32 hkv=8 sq=256 sk=256 d=128 type=bf16 "
               "scale=0.0883883461 q=b0 k=b1 v=b2 o=b3 mask=causal");
  EXPECT_STREQ(sparseopt_program_step(program, 1),
               "attention b=1 h=32 hkv=8 sq=128 sk=256 d=128 type=f16 "
               "scale=1 q=b0 k=b1 v=b2 o=b3");
  // The layout is part of the step's text; bhsd is the default.
  EXPECT_STREQ(sparseopt_program_step(program, 2),
               "attention b=1 h=32 hkv=8 sq=256 sk=256 d=128 type=bf16 "
               "scale=1 q=b0 k=b1 v=b2 o=b3 mask=causal layout=bshd");
  EXPECT_STREQ(sparseopt_program_step(program, 3),
               "attention b=1 h=32 hkv=8 sq=256 sk=256 d=128 type=bf16 "
               "scale=1 q=b0 k=b1 v=b2 o=b3");
}

#undef GEMM_BUFFERS
#undef GEMM_SHAPE
#undef GEMM_OPERANDS

// Params, stages and checks. PARAM_BUFFERS declares on lines 3-7 a param
// (64 bytes), a temp of 64 bytes, an input, an output (64 bytes each) and a
// temp of 3 bytes; the first line after it is line 8.
#define HEADER "sparseopt-program 2\nmodule kernels.ptx\n"
#define GRID " grid 1 1 1 block 32 1 1 smem 0 args"
#define PARAM_BUFFERS                                                          \
  HEADER "buffer 0 param 0 64\nbuffer 1 temp 64\nbuffer 2 input 0 64\n"       \
         "buffer 3 output 0 64\nbuffer 4 temp 3\n"
#define PREPARE PARAM_BUFFERS "stage prepare\n" // line 8
#define CHECK_SYNTAX                                                           \
  " (check b<id> param <index> pattern <n>:<m> groups <G>)"
#define PATTERN_RULE                                                           \
  ": expected <n>:<m> with m even, 4 <= m <= 16 and n = m - 2 (2:4, 4:6, "    \
  "6:8, 8:10, 10:12, 12:14 or 14:16)"

const MalformedCase kMalformedParamCases[] = {
    // Param buffers: a dense index space of their own.
    {"ParamIndexGap", HEADER "buffer 0 param 0 8\nbuffer 1 param 2 8\n",
     SPARSEOPT_ERROR_PARSE, 4,
     "param indices must be contiguous from 0: index 2 is declared but index "
     "1 is missing"},
    {"ParamIndicesAreTheirOwn", HEADER "buffer 0 input 0 8\nbuffer 1 param 1 8\n",
     SPARSEOPT_ERROR_PARSE, 4,
     "param indices must be contiguous from 0: index 1 is declared but index "
     "0 is missing"},
    {"InputIndicesIgnoreParams",
     HEADER "buffer 0 param 0 8\nbuffer 1 input 1 8\n", SPARSEOPT_ERROR_PARSE,
     4, "input indices must be contiguous from 0: index 1 is declared"},
    {"DuplicateParamIndex", HEADER "buffer 0 param 0 8\nbuffer 1 param 0 8\n",
     SPARSEOPT_ERROR_PARSE, 4, "param index 0 is already bound to buffer 0"},
    {"ParamWithoutBytes", HEADER "buffer 0 param 0\n", SPARSEOPT_ERROR_PARSE, 3,
     "expected 'buffer <id> param <index> <bytes>'"},
    {"ParamNonNumericIndex", HEADER "buffer 0 param w 8\n",
     SPARSEOPT_ERROR_PARSE, 3, "slot index: expected an integer"},
    {"UnknownBufferKindListsParam", HEADER "buffer 0 weight 0 8\n",
     SPARSEOPT_ERROR_PARSE, 3,
     "unknown buffer kind 'weight' (expected input, output, param, constant "
     "or temp)"},
    // Stage lines.
    {"StageUnknown", HEADER "stage compile\n", SPARSEOPT_ERROR_PARSE, 3,
     "expected 'stage prepare' or 'stage run', got 'stage compile'"},
    {"StageWithoutName", HEADER "stage\n", SPARSEOPT_ERROR_PARSE, 3,
     "expected 'stage prepare' or 'stage run', got 'stage'"},
    {"StageExtraToken", HEADER "stage run now\n", SPARSEOPT_ERROR_PARSE, 3,
     "got 'stage run now'"},
    {"StagePrepareTwice", HEADER "stage prepare\n\nstage prepare\n",
     SPARSEOPT_ERROR_PARSE, 5,
     "a second 'stage prepare' (the first is at line 3)"},
    {"StageRunTwice", HEADER "stage prepare\nstage run\nstage run\n",
     SPARSEOPT_ERROR_PARSE, 5, "a second 'stage run' (the first is at line 4)"},
    {"StagePrepareAfterRun", HEADER "stage run\nstage prepare\n",
     SPARSEOPT_ERROR_PARSE, 4,
     "'stage prepare' after 'stage run' (line 3): the prepare stage comes "
     "first"},
    {"StagePrepareAfterStep",
     HEADER "buffer 0 temp 8\nlaunch k" GRID " b0\nstage prepare\n",
     SPARSEOPT_ERROR_PARSE, 5,
     "'stage prepare' after a step (line 4): steps before any 'stage' line "
     "are run steps, and the prepare stage comes first"},
    {"StagePrepareAfterGemm",
     HEADER "buffer 0 temp 64\ngemm m=4 n=4 k=4 in=f16 out=f32 x=b0 w=b0 "
            "y=b1\nbuffer 1 temp 64\nstage prepare\n",
     SPARSEOPT_ERROR_PARSE, 6, "'stage prepare' after a step (line 4)"},
    // Check lines: where they may appear.
    {"CheckWithoutStage", PARAM_BUFFERS "check b1 param 0 pattern 2:4 groups 1\n",
     SPARSEOPT_ERROR_PARSE, 8,
     "a 'check' line is only allowed in the prepare stage (after 'stage "
     "prepare')"},
    {"CheckInRunStage",
     PREPARE "stage run\ncheck b1 param 0 pattern 2:4 groups 1\n",
     SPARSEOPT_ERROR_PARSE, 10,
     "a 'check' line is only allowed in the prepare stage (after 'stage "
     "prepare', before 'stage run' at line 9)"},
    // Their syntax.
    {"CheckFieldCount", PREPARE "check b1 param 0 pattern 2:4\n",
     SPARSEOPT_ERROR_PARSE, 9,
     "expected 8 fields on a check line, got 6" CHECK_SYNTAX},
    {"CheckExtraField", PREPARE "check b1 param 0 pattern 2:4 groups 1 2\n",
     SPARSEOPT_ERROR_PARSE, 9, "expected 8 fields on a check line, got 9"},
    {"CheckParamKeyword", PREPARE "check b1 input 0 pattern 2:4 groups 1\n",
     SPARSEOPT_ERROR_PARSE, 9, "expected 'param', got 'input'" CHECK_SYNTAX},
    {"CheckPatternKeyword",
     PREPARE "check b1 param 0 sparsity 2:4 groups 1\n", SPARSEOPT_ERROR_PARSE,
     9, "expected 'pattern', got 'sparsity'"},
    {"CheckGroupsKeyword", PREPARE "check b1 param 0 pattern 2:4 rows 1\n",
     SPARSEOPT_ERROR_PARSE, 9, "expected 'groups', got 'rows'"},
    {"CheckBufferSyntax", PREPARE "check 1 param 0 pattern 2:4 groups 1\n",
     SPARSEOPT_ERROR_PARSE, 9, "check: expected b<buffer id>, got '1'"},
    {"CheckBufferIdSyntax", PREPARE "check b param 0 pattern 2:4 groups 1\n",
     SPARSEOPT_ERROR_PARSE, 9, "check: expected b<buffer id>, got 'b'"},
    {"CheckParamIndex", PREPARE "check b1 param p0 pattern 2:4 groups 1\n",
     SPARSEOPT_ERROR_PARSE, 9,
     "check param index: expected an integer from 0 to 2147483646, got 'p0'"},
    // Patterns: 2:4 or (2N-2):2N, N = 2..8.
    {"CheckPattern3of4", PREPARE "check b1 param 0 pattern 3:4 groups 1\n",
     SPARSEOPT_ERROR_PARSE, 9, "check pattern '3:4'" PATTERN_RULE},
    {"CheckPattern1of4", PREPARE "check b1 param 0 pattern 1:4 groups 1\n",
     SPARSEOPT_ERROR_PARSE, 9, "check pattern '1:4'" PATTERN_RULE},
    {"CheckPattern2of6", PREPARE "check b1 param 0 pattern 2:6 groups 1\n",
     SPARSEOPT_ERROR_PARSE, 9, "check pattern '2:6'" PATTERN_RULE},
    {"CheckPattern0of2", PREPARE "check b1 param 0 pattern 0:2 groups 1\n",
     SPARSEOPT_ERROR_PARSE, 9, "check pattern '0:2'" PATTERN_RULE},
    {"CheckPattern3of5", PREPARE "check b1 param 0 pattern 3:5 groups 1\n",
     SPARSEOPT_ERROR_PARSE, 9, "check pattern '3:5'" PATTERN_RULE},
    {"CheckPattern16of18", PREPARE "check b1 param 0 pattern 16:18 groups 1\n",
     SPARSEOPT_ERROR_PARSE, 9, "check pattern '16:18'" PATTERN_RULE},
    {"CheckPatternWithoutColon",
     PREPARE "check b1 param 0 pattern 24 groups 1\n", SPARSEOPT_ERROR_PARSE,
     9, "check pattern '24'" PATTERN_RULE},
    {"CheckPatternWithoutN", PREPARE "check b1 param 0 pattern :4 groups 1\n",
     SPARSEOPT_ERROR_PARSE, 9, "check pattern ':4'"},
    {"CheckPatternTwoColons",
     PREPARE "check b1 param 0 pattern 2:4:8 groups 1\n",
     SPARSEOPT_ERROR_PARSE, 9, "check pattern '2:4:8'"},
    {"CheckPatternSigned", PREPARE "check b1 param 0 pattern +2:4 groups 1\n",
     SPARSEOPT_ERROR_PARSE, 9, "check pattern '+2:4'"},
    // Group counts: 1..2^31-1.
    {"CheckZeroGroups", PREPARE "check b1 param 0 pattern 2:4 groups 0\n",
     SPARSEOPT_ERROR_PARSE, 9,
     "check groups: expected an integer from 1 to 2147483647, got '0'"},
    {"CheckTooManyGroups",
     PREPARE "check b1 param 0 pattern 2:4 groups 2147483648\n",
     SPARSEOPT_ERROR_PARSE, 9,
     "check groups: expected an integer from 1 to 2147483647, got "
     "'2147483648'"},
    {"CheckNonNumericGroups", PREPARE "check b1 param 0 pattern 2:4 groups 4x\n",
     SPARSEOPT_ERROR_PARSE, 9, "check groups: expected an integer"},
    // What they name: a temp of at least 4 bytes and a declared param.
    {"CheckUnknownBuffer", PREPARE "check b9 param 0 pattern 2:4 groups 1\n",
     SPARSEOPT_ERROR_PARSE, 9, "check uses unknown buffer b9"},
    {"CheckBufferIsParam", PREPARE "check b0 param 0 pattern 2:4 groups 1\n",
     SPARSEOPT_ERROR_PARSE, 9,
     "check buffer 0 is bound to param 0: a check reads a temp buffer"},
    {"CheckBufferIsInput", PREPARE "check b2 param 0 pattern 2:4 groups 1\n",
     SPARSEOPT_ERROR_PARSE, 9,
     "check buffer 2 is bound to input 0: a check reads a temp buffer"},
    {"CheckBufferIsOutput", PREPARE "check b3 param 0 pattern 2:4 groups 1\n",
     SPARSEOPT_ERROR_PARSE, 9,
     "check buffer 3 is bound to output 0: a check reads a temp buffer"},
    {"CheckBufferIsConstant",
     PREPARE "buffer 5 constant c.bin 100\ncheck b5 param 0 pattern 2:4 "
             "groups 1\n",
     SPARSEOPT_ERROR_PARSE, 10,
     "check buffer 5 is a constant: a check reads a temp buffer"},
    {"CheckBufferTooSmall", PREPARE "check b4 param 0 pattern 2:4 groups 1\n",
     SPARSEOPT_ERROR_PARSE, 9,
     "check buffer 4 has 3 bytes: a check reads an int32 (4 bytes)"},
    {"CheckUnknownParam", PREPARE "check b1 param 1 pattern 2:4 groups 1\n",
     SPARSEOPT_ERROR_PARSE, 9,
     "check names param 1 but the program declares params 0..0"},
    {"CheckWithoutParams",
     HEADER "buffer 1 temp 4\nstage prepare\ncheck b1 param 0 pattern 2:4 "
            "groups 1\n",
     SPARSEOPT_ERROR_PARSE, 5,
     "check names param 0 but the program declares no params"},
    // Prepare steps run at bind time: params, temps and constants only.
    {"PrepareLaunchUsesInput", PREPARE "launch k" GRID " b0 b1 i32:3 b2\n",
     SPARSEOPT_ERROR_PARSE, 9,
     "prepare-stage launch of kernel 'k' argument 3 uses buffer 2 (input 0): "
     "prepare steps run at bind time and may use only params, temps and "
     "constants"},
    {"PrepareLaunchUsesOutput", PREPARE "launch k" GRID " b3\n",
     SPARSEOPT_ERROR_PARSE, 9,
     "prepare-stage launch of kernel 'k' argument 0 uses buffer 3 (output 0)"},
    {"PrepareTensorMapOverInput",
     PREPARE "launch k" GRID " b0 tmap:b2:f32:16:16:0\n", SPARSEOPT_ERROR_PARSE,
     9, "prepare-stage launch of kernel 'k' argument 1 uses buffer 2 (input 0)"},
    {"PrepareGemmReadsInput",
     PREPARE "gemm m=4 n=4 k=4 in=f16 out=f32 x=b2 w=b0 y=b1\n",
     SPARSEOPT_ERROR_PARSE, 9,
     "prepare-stage gemm operand x uses buffer 2 (input 0): prepare steps run "
     "at bind time"},
    {"PrepareGemmWritesOutput",
     PREPARE "gemm m=4 n=4 k=4 in=f16 out=f32 x=b1 w=b0 y=b3\n",
     SPARSEOPT_ERROR_PARSE, 9,
     "prepare-stage gemm operand y uses buffer 3 (output 0)"},
    {"PrepareGemmBiasIsInput",
     PREPARE "buffer 5 temp 64\n"
             "gemm m=4 n=4 k=4 in=f16 out=f32 x=b1 w=b0 y=b5 bias=b2:f32\n",
     SPARSEOPT_ERROR_PARSE, 10,
     "prepare-stage gemm operand bias uses buffer 2 (input 0)"},
    {"PrepareStepBufferDeclaredLater",
     PREPARE "launch k" GRID " b7\nstage run\nbuffer 7 input 1 8\n",
     SPARSEOPT_ERROR_PARSE, 9,
     "prepare-stage launch of kernel 'k' argument 0 uses buffer 7 (input 1)"},
};

// Stat lines: a temp counter of at least one u32/u64, a unique name.
#define STAT_SYNTAX                                                            \
  " (stat <name> b<id> <u32|u64> [of <total> [limit <fraction>]])"
const MalformedCase kMalformedStatCases[] = {
    {"StatFieldCount", PARAM_BUFFERS "stat rows b1\n", SPARSEOPT_ERROR_PARSE,
     8, "expected 4, 6 or 8 fields on a stat line, got 3" STAT_SYNTAX},
    {"StatFiveFields", PARAM_BUFFERS "stat rows b1 u32 of\n",
     SPARSEOPT_ERROR_PARSE, 8,
     "expected 4, 6 or 8 fields on a stat line, got 5"},
    {"StatLimitKeyword", PARAM_BUFFERS "stat rows b1 u32 of 8 max 0.5\n",
     SPARSEOPT_ERROR_PARSE, 8, "expected 'limit', got 'max'"},
    {"StatLimitRange", PARAM_BUFFERS "stat rows b1 u32 of 8 limit 1.5\n",
     SPARSEOPT_ERROR_PARSE, 8,
     "stat limit: expected a fraction from 0 to 1, got '1.5'"},
    {"StatLimitNumber", PARAM_BUFFERS "stat rows b1 u32 of 8 limit 0.5x\n",
     SPARSEOPT_ERROR_PARSE, 8,
     "stat limit: expected a fraction from 0 to 1, got '0.5x'"},
    {"StatName", PARAM_BUFFERS "stat rows/1 b1 u32\n", SPARSEOPT_ERROR_PARSE,
     8, "stat name 'rows/1': expected letters, digits, '_' and '.'"},
    {"StatDuplicateName", PARAM_BUFFERS "stat rows b1 u32\nstat rows b1 u64\n",
     SPARSEOPT_ERROR_PARSE, 9,
     "stat 'rows' is already declared at line 8"},
    {"StatBufferSyntax", PARAM_BUFFERS "stat rows 1 u32\n", SPARSEOPT_ERROR_PARSE,
     8, "stat: expected b<buffer id>, got '1'" STAT_SYNTAX},
    {"StatType", PARAM_BUFFERS "stat rows b1 i32\n", SPARSEOPT_ERROR_PARSE, 8,
     "stat type: expected u32 or u64, got 'i32'"},
    {"StatOfKeyword", PARAM_BUFFERS "stat rows b1 u32 in 8\n",
     SPARSEOPT_ERROR_PARSE, 8, "expected 'of', got 'in'"},
    {"StatZeroTotal", PARAM_BUFFERS "stat rows b1 u32 of 0\n",
     SPARSEOPT_ERROR_PARSE, 8,
     "stat total: expected a positive integer, got '0'"},
    {"StatUnknownBuffer", PARAM_BUFFERS "stat rows b9 u32\n",
     SPARSEOPT_ERROR_PARSE, 8, "stat 'rows' uses unknown buffer b9"},
    {"StatOnInput", PARAM_BUFFERS "stat rows b2 u32\n", SPARSEOPT_ERROR_PARSE,
     8, "stat 'rows': buffer 2 is input 0; a stat is a temp buffer"},
    {"StatOnParam", PARAM_BUFFERS "stat rows b0 u64\n", SPARSEOPT_ERROR_PARSE,
     8, "stat 'rows': buffer 0 is param 0; a stat is a temp buffer"},
    {"StatTooSmall", PARAM_BUFFERS "stat rows b4 u32\n", SPARSEOPT_ERROR_PARSE,
     8, "stat 'rows': buffer 4 has 3 bytes, fewer than one u32"},
};
#undef STAT_SYNTAX

#undef HEADER
#undef GRID
#undef PARAM_BUFFERS
#undef PREPARE
#undef CHECK_SYNTAX
#undef PATTERN_RULE

INSTANTIATE_TEST_SUITE_P(
    Parser, MalformedManifest, ::testing::ValuesIn(kMalformedCases),
    [](const ::testing::TestParamInfo<MalformedCase> &info) {
      return std::string(info.param.name);
    });

INSTANTIATE_TEST_SUITE_P(
    GemmParser, MalformedManifest, ::testing::ValuesIn(kMalformedGemmCases),
    [](const ::testing::TestParamInfo<MalformedCase> &info) {
      return std::string(info.param.name);
    });

INSTANTIATE_TEST_SUITE_P(
    AttentionParser, MalformedManifest,
    ::testing::ValuesIn(kMalformedAttentionCases),
    [](const ::testing::TestParamInfo<MalformedCase> &info) {
      return std::string(info.param.name);
    });

INSTANTIATE_TEST_SUITE_P(
    ParamParser, MalformedManifest, ::testing::ValuesIn(kMalformedParamCases),
    [](const ::testing::TestParamInfo<MalformedCase> &info) {
      return std::string(info.param.name);
    });

INSTANTIATE_TEST_SUITE_P(
    StatParser, MalformedManifest, ::testing::ValuesIn(kMalformedStatCases),
    [](const ::testing::TestParamInfo<MalformedCase> &info) {
      return std::string(info.param.name);
    });

//===----------------------------------------------------------------------===//
// Opening cuBLASLt. Each runs in a fresh process (threadsafe death tests),
// so that a library opened by another test cannot leak in.
//===----------------------------------------------------------------------===//

/// A gemm-only program (its gemm on line 5).
constexpr const char *kGemmProgram =
    "sparseopt-program 2\n"
    "buffer 0 input 0 96\n"
    "buffer 1 input 1 192\n"
    "buffer 2 output 0 128\n"
    "gemm m=4 n=8 k=12 in=f16 out=f32 x=b0 w=b1 y=b2\n";

void writeGemmProgram(const TempDir &dir) { dir.writeProgram(kGemmProgram); }

/// Loads `program` (a program whose library lines need the library that
/// `envVar` names) with `envVar` pointing at a missing file, in a fresh
/// process: the load fails with NO_LIBRARY before initialization, like a
/// parse error, with a message that matches `expected`.
void expectMissingLibrary(const char *program, const char *envVar,
                          const char *expected) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        TempDir dir;
        dir.writeProgram(program);
        setenv(envVar, "/nonexistent/lib-missing.so", 1);
        sparseopt_program p = nullptr;
        sparseopt_status status = sparseopt_program_load(dir.c_str(), &p);
        std::fprintf(stderr, "status=%s message=%s\n",
                     sparseopt_status_string(status), sparseopt_last_error());
        std::exit(status == SPARSEOPT_ERROR_NO_LIBRARY && p == nullptr ? 0
                                                                       : 1);
      },
      ::testing::ExitedWithCode(0), expected);
}

TEST(CublasLt, MissingLibraryReportsNoLibrary) {
  expectMissingLibrary(
      kGemmProgram, "SPARSEOPT_CUBLASLT_LIBRARY",
      "status=SPARSEOPT_ERROR_NO_LIBRARY message=sparseopt_program_load: "
      ".*program.txt:5: the program's gemm lines need cuBLASLt, which could "
      "not be opened: tried /nonexistent/lib-missing.so \\(.*No "
      "such file.*\\) \\(from SPARSEOPT_CUBLASLT_LIBRARY\\)");
}

TEST(Cudnn, MissingLibraryReportsNoLibrary) {
  expectMissingLibrary(
      "sparseopt-program 2\n"
      "buffer 0 input 0 8192\n"
      "buffer 1 input 1 4096\n"
      "buffer 2 output 0 8192\n"
      "attention b=1 h=4 hkv=2 sq=16 sk=16 d=64 type=f16 "
      "scale=0.125 q=b0 k=b1 v=b1 o=b2\n",
      "SPARSEOPT_CUDNN_LIBRARY",
      "status=SPARSEOPT_ERROR_NO_LIBRARY message=sparseopt_program_load: "
      ".*program.txt:5: the program's attention lines need cuDNN 9, which "
      "could not be opened: tried /nonexistent/lib-missing.so \\(.*No "
      "such file.*\\) \\(from SPARSEOPT_CUDNN_LIBRARY\\)");
}

TEST(CublasLt, NotACublasLtLibraryReportsNoLibrary) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // libc.so.6 loads fine but exports no cuBLASLt entry point.
  EXPECT_EXIT(
      {
        TempDir dir;
        writeGemmProgram(dir);
        setenv("SPARSEOPT_CUBLASLT_LIBRARY", "libc.so.6", 1);
        sparseopt_program program = nullptr;
        sparseopt_status status = sparseopt_program_load(dir.c_str(), &program);
        std::fprintf(stderr, "message=%s\n", sparseopt_last_error());
        std::exit(status == SPARSEOPT_ERROR_NO_LIBRARY ? 0 : 1);
      },
      ::testing::ExitedWithCode(0),
      "tried libc.so.6 \\(does not export cublasLtGetVersion");
}

TEST(CublasLt, DefaultSearchNamesEveryFileTried) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // An empty override means the default list. Where one of its files exists
  // the load gets past the library (and stops at initialization); otherwise
  // the message must list all four.
  EXPECT_EXIT(
      {
        TempDir dir;
        writeGemmProgram(dir);
        setenv("SPARSEOPT_CUBLASLT_LIBRARY", "", 1);
        sparseopt_program program = nullptr;
        sparseopt_status status = sparseopt_program_load(dir.c_str(), &program);
        std::string message = sparseopt_last_error();
        bool listed = true;
        for (const char *name :
             {"tried libcublasLt.so.13 (", "; libcublasLt.so.12 (",
              "; libcublasLt.so (", "; /usr/local/cuda/lib64/libcublasLt.so (",
              "set SPARSEOPT_CUBLASLT_LIBRARY"})
          listed = listed && message.find(name) != std::string::npos;
        std::fprintf(stderr, "message=%s\n", message.c_str());
        bool ok = status == SPARSEOPT_ERROR_NOT_INITIALIZED ||
                  (status == SPARSEOPT_ERROR_NO_LIBRARY && listed);
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "message=");
}

TEST(CublasLt, ProgramsWithoutGemmsNeverOpenIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        TempDir dir;
        dir.write("kernels.ptx", "// not loaded\n");
        dir.writeProgram(
                  "sparseopt-program 2\nmodule kernels.ptx\n"
                  "buffer 0 temp 64\n"
                  "launch k grid 1 1 1 block 32 1 1 smem 0 args b0\n");
        setenv("SPARSEOPT_CUBLASLT_LIBRARY", "/nonexistent/libcublasLt.so", 1);
        sparseopt_program program = nullptr;
        sparseopt_status status = sparseopt_program_load(dir.c_str(), &program);
        std::fprintf(stderr, "status=%s\n", sparseopt_status_string(status));
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "status=SPARSEOPT_ERROR_NOT_INITIALIZED");
}

//===----------------------------------------------------------------------===//
// GPU tests: skipped without a driver or device.
//===----------------------------------------------------------------------===//

/// Two float kernels in PTX (JIT-compiled by the driver for any GPU):
///   add_one(float *data, u32 n):                   data[i] += 1
///   add_scaled(float *a, float *b, float *out, u64 n, f32 s):
///                                                  out[i] = a[i] + s * b[i]
const char *const kTestPtx = R"(
.version 7.0
.target sm_70
.address_size 64

.visible .entry add_one(
    .param .u64 add_one_data,
    .param .u32 add_one_n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [add_one_data];
    ld.param.u32 %r1, [add_one_n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra $L_add_one_done;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r5, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4];
    add.f32 %f2, %f1, 0f3F800000;
    st.global.f32 [%rd4], %f2;
$L_add_one_done:
    ret;
}

.visible .entry add_scaled(
    .param .u64 add_scaled_a,
    .param .u64 add_scaled_b,
    .param .u64 add_scaled_out,
    .param .u64 add_scaled_n,
    .param .f32 add_scaled_s
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<5>;
    .reg .f32 %f<5>;
    .reg .b64 %rd<12>;

    ld.param.u64 %rd1, [add_scaled_a];
    ld.param.u64 %rd2, [add_scaled_b];
    ld.param.u64 %rd3, [add_scaled_out];
    ld.param.u64 %rd4, [add_scaled_n];
    ld.param.f32 %f1, [add_scaled_s];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    cvt.u64.u32 %rd5, %r4;
    setp.ge.u64 %p1, %rd5, %rd4;
    @%p1 bra $L_add_scaled_done;
    shl.b64 %rd6, %rd5, 2;
    cvta.to.global.u64 %rd7, %rd1;
    add.s64 %rd8, %rd7, %rd6;
    cvta.to.global.u64 %rd9, %rd2;
    add.s64 %rd10, %rd9, %rd6;
    cvta.to.global.u64 %rd11, %rd3;
    add.s64 %rd11, %rd11, %rd6;
    ld.global.f32 %f2, [%rd8];
    ld.global.f32 %f3, [%rd10];
    fma.rn.f32 %f4, %f3, %f1, %f2;
    st.global.f32 [%rd11], %f4;
$L_add_scaled_done:
    ret;
}
)";

/// Initializes device 0, or skips the test when there is no driver/device.
#define REQUIRE_GPU()                                                          \
  do {                                                                         \
    sparseopt_status initStatus = sparseopt_init(0);                           \
    if (initStatus == SPARSEOPT_ERROR_NO_DRIVER ||                             \
        initStatus == SPARSEOPT_ERROR_NO_DEVICE)                               \
      GTEST_SKIP() << "no CUDA GPU: " << sparseopt_last_error();               \
    ASSERT_EQ(initStatus, SPARSEOPT_OK) << sparseopt_last_error();             \
  } while (0)

#define ASSERT_OK(call) ASSERT_EQ((call), SPARSEOPT_OK) << sparseopt_last_error()
#define EXPECT_OK(call) EXPECT_EQ((call), SPARSEOPT_OK) << sparseopt_last_error()

constexpr unsigned kCount = 1000;
constexpr unsigned kBlock = 128;
constexpr unsigned kGrid = (kCount + kBlock - 1) / kBlock;

TEST(Gpu, InitIsIdempotentAndNamesTheDevice) {
  REQUIRE_GPU();
  EXPECT_OK(sparseopt_init(0));
  EXPECT_EQ(sparseopt_init(1), SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "already initialized on device 0"));
  char name[256] = {0};
  ASSERT_OK(sparseopt_device_name(name, sizeof(name)));
  EXPECT_GT(std::strlen(name), 0u);
  char tiny[4];
  ASSERT_OK(sparseopt_device_name(tiny, sizeof(tiny)));
  EXPECT_EQ(std::strlen(tiny), 3u);
  EXPECT_OK(sparseopt_synchronize());
}

TEST(Gpu, MemoryRoundTrip) {
  REQUIRE_GPU();
  sparseopt_deviceptr empty = 1;
  ASSERT_OK(sparseopt_malloc(0, &empty));
  EXPECT_EQ(empty, 0u);

  std::vector<unsigned char> host(4096), back(4096);
  for (size_t i = 0; i < host.size(); ++i)
    host[i] = static_cast<unsigned char>(i * 7);
  sparseopt_deviceptr dev = 0;
  ASSERT_OK(sparseopt_malloc(host.size(), &dev));
  ASSERT_NE(dev, 0u);
  ASSERT_OK(sparseopt_memcpy_htod(dev, host.data(), host.size()));
  ASSERT_OK(sparseopt_memset_d8(dev + 100, 0xAB, 50));
  ASSERT_OK(sparseopt_synchronize());
  ASSERT_OK(sparseopt_memcpy_dtoh(back.data(), dev, back.size()));
  for (size_t i = 0; i < host.size(); ++i)
    ASSERT_EQ(back[i], i >= 100 && i < 150 ? 0xAB : host[i]) << "byte " << i;
  EXPECT_OK(sparseopt_free(dev));
}

TEST(Gpu, ContextIsBoundOnOtherThreads) {
  REQUIRE_GPU();
  sparseopt_status status = SPARSEOPT_ERROR_CUDA;
  std::string message;
  std::thread([&] {
    sparseopt_deviceptr p = 0;
    status = sparseopt_malloc(256, &p);
    if (status == SPARSEOPT_OK)
      status = sparseopt_free(p);
    message = sparseopt_last_error();
  }).join();
  EXPECT_EQ(status, SPARSEOPT_OK) << message;
}

/// Loads kTestPtx, uploads 0..kCount-1 and runs add_one on it.
TEST(Gpu, LoadPtxLaunchAndCopyBack) {
  REQUIRE_GPU();
  sparseopt_module module = nullptr;
  ASSERT_OK(sparseopt_module_load_ptx(kTestPtx, &module));
  sparseopt_function addOne = nullptr, again = nullptr, missing = nullptr;
  ASSERT_OK(sparseopt_module_get_function(module, "add_one", &addOne));
  ASSERT_OK(sparseopt_module_get_function(module, "add_one", &again));
  EXPECT_EQ(addOne, again);
  EXPECT_EQ(sparseopt_module_get_function(module, "nope", &missing),
            SPARSEOPT_ERROR_NOT_FOUND);
  EXPECT_TRUE(contains(lastError(), "'nope'"));

  std::vector<float> host(kCount);
  for (unsigned i = 0; i < kCount; ++i)
    host[i] = float(i);
  sparseopt_deviceptr data = 0;
  ASSERT_OK(sparseopt_malloc(kCount * sizeof(float), &data));
  ASSERT_OK(sparseopt_memcpy_htod(data, host.data(), kCount * sizeof(float)));

  unsigned n = kCount;
  void *args[] = {&data, &n};
  const unsigned grid[3] = {kGrid, 1, 1}, block[3] = {kBlock, 1, 1};
  ASSERT_OK(sparseopt_launch(addOne, grid, block, 0, nullptr, args));
  // More than 48 KiB of dynamic shared memory raises the function attribute.
  ASSERT_OK(sparseopt_launch(addOne, grid, block, 64 * 1024, nullptr, args));
  ASSERT_OK(sparseopt_synchronize());
  ASSERT_OK(sparseopt_memcpy_dtoh(host.data(), data, kCount * sizeof(float)));
  for (unsigned i = 0; i < kCount; ++i)
    ASSERT_EQ(host[i], float(i) + 2.0f) << "element " << i;

  const unsigned badBlock[3] = {4096, 1, 1};
  EXPECT_EQ(sparseopt_launch(addOne, grid, badBlock, 0, nullptr, args),
            SPARSEOPT_ERROR_CUDA);
  EXPECT_TRUE(contains(lastError(), "kernel 'add_one'"));

  EXPECT_OK(sparseopt_free(data));
  EXPECT_OK(sparseopt_module_unload(module));
}

TEST(Gpu, InvalidPtxReportsJitLog) {
  REQUIRE_GPU();
  sparseopt_module module = nullptr;
  EXPECT_EQ(sparseopt_module_load_ptx(".version 7.0\n.target sm_70\n"
                                      ".address_size 64\nthis is not ptx\n",
                                      &module),
            SPARSEOPT_ERROR_CUDA);
  EXPECT_TRUE(contains(lastError(), "CUDA_ERROR_INVALID_PTX")) << lastError();
  EXPECT_TRUE(contains(lastError(), "JIT error log")) << lastError();
}

TEST(Gpu, ModuleFileErrors) {
  REQUIRE_GPU();
  TempDir dir;
  sparseopt_module module = nullptr;
  EXPECT_EQ(sparseopt_module_load_file((dir.path() + "/none.ptx").c_str(),
                                       &module),
            SPARSEOPT_ERROR_IO);
  EXPECT_TRUE(contains(lastError(), "none.ptx"));
  dir.write("k.ptx", kTestPtx);
  ASSERT_OK(sparseopt_module_load_file((dir.path() + "/k.ptx").c_str(),
                                       &module));
  EXPECT_OK(sparseopt_module_unload(module));
}

TEST(Gpu, StreamsAndEventTiming) {
  REQUIRE_GPU();
  sparseopt_module module = nullptr;
  ASSERT_OK(sparseopt_module_load_ptx(kTestPtx, &module));
  sparseopt_function addOne = nullptr;
  ASSERT_OK(sparseopt_module_get_function(module, "add_one", &addOne));
  sparseopt_deviceptr data = 0;
  ASSERT_OK(sparseopt_malloc(kCount * sizeof(float), &data));
  ASSERT_OK(sparseopt_memset_d8(data, 0, kCount * sizeof(float)));
  ASSERT_OK(sparseopt_synchronize());

  sparseopt_stream stream = nullptr;
  sparseopt_event start = nullptr, end = nullptr;
  ASSERT_OK(sparseopt_stream_create(&stream));
  ASSERT_OK(sparseopt_event_create(&start));
  ASSERT_OK(sparseopt_event_create(&end));

  unsigned n = kCount;
  void *args[] = {&data, &n};
  const unsigned grid[3] = {kGrid, 1, 1}, block[3] = {kBlock, 1, 1};
  ASSERT_OK(sparseopt_event_record(start, stream));
  for (int i = 0; i < 10; ++i)
    ASSERT_OK(sparseopt_launch(addOne, grid, block, 0, stream, args));
  ASSERT_OK(sparseopt_event_record(end, stream));
  ASSERT_OK(sparseopt_event_synchronize(end));
  float ms = -1;
  ASSERT_OK(sparseopt_event_elapsed_ms(start, end, &ms));
  EXPECT_GE(ms, 0.0f);
  EXPECT_LT(ms, 10000.0f);
  ASSERT_OK(sparseopt_stream_synchronize(stream));

  std::vector<float> host(kCount);
  ASSERT_OK(sparseopt_memcpy_dtoh(host.data(), data, kCount * sizeof(float)));
  EXPECT_EQ(host[0], 10.0f);
  EXPECT_EQ(host[kCount - 1], 10.0f);

  EXPECT_OK(sparseopt_event_destroy(end));
  EXPECT_OK(sparseopt_event_destroy(start));
  EXPECT_OK(sparseopt_stream_destroy(stream));
  EXPECT_OK(sparseopt_free(data));
  EXPECT_OK(sparseopt_module_unload(module));
}

/// Writes an artifact computing out = in + 2.5 * c + 1 with c = 2 through a
/// constant, a temporary and three launches.
void writeTestProgram(const TempDir &dir, const std::string &firstKernel) {
  dir.write("kernels.ptx", kTestPtx);
  std::vector<float> c(kCount, 2.0f);
  dir.write("c.bin", std::string(reinterpret_cast<const char *>(c.data()),
                                 c.size() * sizeof(float)));
  std::string bytes = std::to_string(kCount * sizeof(float));
  std::string n = std::to_string(kCount);
  std::string dims = " grid " + std::to_string(kGrid) + " 1 1 block " +
                     std::to_string(kBlock) + " 1 1 smem 0 args ";
  dir.writeProgram(
            "sparseopt-program 2\n"
            "module kernels.ptx\n"
            "buffer 0 input 0 " + bytes + "\n"
            "buffer 1 constant c.bin " + bytes + "\n"
            "buffer 2 temp " + bytes + "\n"
            "buffer 3 output 0 " + bytes + "\n"
            "launch " + firstKernel + dims + "b0 b1 b2 i64:" + n + " f32:2.0\n"
            "launch add_one" + dims + "b2 i32:" + n + "\n"
            "launch add_scaled" + dims + "b2 b1 b3 i64:" + n + " f32:0.5\n");
}

TEST(Gpu, ProgramLoadAndRun) {
  REQUIRE_GPU();
  TempDir dir;
  writeTestProgram(dir, "add_scaled");
  sparseopt_program program = nullptr;
  ASSERT_OK(sparseopt_program_load(dir.c_str(), &program));
  ASSERT_EQ(sparseopt_program_num_inputs(program), 1);
  ASSERT_EQ(sparseopt_program_num_outputs(program), 1);
  ASSERT_EQ(sparseopt_program_num_launches(program), 3);
  EXPECT_STREQ(sparseopt_program_launch_kernel(program, 1), "add_one");
  const size_t bytes = kCount * sizeof(float);
  ASSERT_EQ(sparseopt_program_input_bytes(program, 0), bytes);

  std::vector<float> host(kCount);
  for (unsigned i = 0; i < kCount; ++i)
    host[i] = float(i);
  sparseopt_deviceptr in = 0, out = 0;
  ASSERT_OK(sparseopt_malloc(bytes, &in));
  ASSERT_OK(sparseopt_malloc(bytes, &out));
  ASSERT_OK(sparseopt_memcpy_htod(in, host.data(), bytes));

  sparseopt_stream stream = nullptr;
  ASSERT_OK(sparseopt_stream_create(&stream));
  // Twice, on a stream and on the default stream: runs are repeatable.
  for (sparseopt_stream s : {stream, sparseopt_stream(nullptr)}) {
    ASSERT_OK(sparseopt_memset_d8(out, 0, bytes));
    ASSERT_OK(sparseopt_synchronize());
    ASSERT_OK(sparseopt_program_run(program, &in, &out, s));
    ASSERT_OK(sparseopt_stream_synchronize(s));
    std::vector<float> result(kCount);
    ASSERT_OK(sparseopt_memcpy_dtoh(result.data(), out, bytes));
    for (unsigned i = 0; i < kCount; ++i)
      ASSERT_EQ(result[i], float(i) + 6.0f) << "element " << i;
  }

  EXPECT_OK(sparseopt_stream_destroy(stream));
  EXPECT_OK(sparseopt_free(in));
  EXPECT_OK(sparseopt_free(out));
  EXPECT_OK(sparseopt_program_destroy(program));
}

TEST(Gpu, ProgramLoadReportsMissingKernel) {
  REQUIRE_GPU();
  TempDir dir;
  writeTestProgram(dir, "no_such_kernel");
  sparseopt_program program = nullptr;
  EXPECT_EQ(sparseopt_program_load(dir.c_str(), &program),
            SPARSEOPT_ERROR_NOT_FOUND);
  EXPECT_EQ(program, nullptr);
  EXPECT_TRUE(contains(lastError(), "program.txt:7: "));
  EXPECT_TRUE(contains(lastError(), "'no_such_kernel'"));
}

TEST(Gpu, ProgramRunReportsFailingLaunch) {
  REQUIRE_GPU();
  TempDir dir;
  dir.write("kernels.ptx", kTestPtx);
  dir.writeProgram("sparseopt-program 2\nmodule kernels.ptx\n"
                           "buffer 0 temp 64\n"
                           "launch add_one grid 1 1 1 block 4096 1 1 smem 0 "
                           "args b0 i32:16\n");
  sparseopt_program program = nullptr;
  ASSERT_OK(sparseopt_program_load(dir.c_str(), &program));
  EXPECT_EQ(sparseopt_program_run(program, nullptr, nullptr, nullptr),
            SPARSEOPT_ERROR_CUDA);
  EXPECT_TRUE(contains(lastError(), "launch 0 ("));
  EXPECT_TRUE(contains(lastError(), "program.txt:4)"));
  EXPECT_TRUE(contains(lastError(), "kernel 'add_one'"));
  EXPECT_OK(sparseopt_program_destroy(program));
}

/// Kernels that take TMA tensor maps the way the compiler passes them: a
/// 128-byte, 64-byte-aligned by-value parameter whose generic address
/// (cvta.param) is the tensor map operand (sm_90a).
///   tma_tile(map, float *out, i32 x, i32 y): one 2-D TMA load of the
///     16 x 8 f32 box at column x, row y into shared memory; thread t (of
///     128) writes element t of the box to out[t].
///   tma_prefetch(m0..m4): prefetch.tensormap of five maps.
const char *const kTensorMapPtx = R"(
.version 8.0
.target sm_90a
.address_size 64

.visible .entry tma_tile(
    .param .align 64 .b8 tma_tile_map[128],
    .param .u64 tma_tile_out,
    .param .u32 tma_tile_x,
    .param .u32 tma_tile_y
)
{
    .reg .pred %p<3>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<8>;
    .reg .f32 %f<2>;
    .shared .align 128 .b8 tile[512];
    .shared .align 8 .b64 full;

    mov.b64 %rd1, tma_tile_map;
    cvta.param.u64 %rd2, %rd1;
    ld.param.u64 %rd3, [tma_tile_out];
    ld.param.u32 %r1, [tma_tile_x];
    ld.param.u32 %r2, [tma_tile_y];
    mov.u32 %r3, %tid.x;
    mov.u32 %r4, full;
    mov.u32 %r5, tile;
    setp.eq.u32 %p1, %r3, 0;
    @%p1 mbarrier.init.shared::cta.b64 [%r4], 1;
    @%p1 fence.mbarrier_init.release.cluster;
    bar.sync 0;
    @!%p1 bra $L_wait;
    mbarrier.arrive.expect_tx.shared::cta.b64 %rd4, [%r4], 512;
    cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r5], [%rd2, {%r1, %r2}], [%r4];
$L_wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r4], 0;
    @!%p2 bra $L_wait;
    shl.b32 %r6, %r3, 2;
    add.u32 %r7, %r5, %r6;
    ld.shared.f32 %f1, [%r7];
    cvta.to.global.u64 %rd5, %rd3;
    mul.wide.u32 %rd6, %r3, 4;
    add.s64 %rd7, %rd5, %rd6;
    st.global.f32 [%rd7], %f1;
    ret;
}

.visible .entry tma_prefetch(
    .param .align 64 .b8 tma_prefetch_m0[128],
    .param .align 64 .b8 tma_prefetch_m1[128],
    .param .align 64 .b8 tma_prefetch_m2[128],
    .param .align 64 .b8 tma_prefetch_m3[128],
    .param .align 64 .b8 tma_prefetch_m4[128]
)
{
    .reg .b64 %rd<11>;
    mov.b64 %rd1, tma_prefetch_m0;
    cvta.param.u64 %rd2, %rd1;
    prefetch.tensormap [%rd2];
    mov.b64 %rd3, tma_prefetch_m1;
    cvta.param.u64 %rd4, %rd3;
    prefetch.tensormap [%rd4];
    mov.b64 %rd5, tma_prefetch_m2;
    cvta.param.u64 %rd6, %rd5;
    prefetch.tensormap [%rd6];
    mov.b64 %rd7, tma_prefetch_m3;
    cvta.param.u64 %rd8, %rd7;
    prefetch.tensormap [%rd8];
    mov.b64 %rd9, tma_prefetch_m4;
    cvta.param.u64 %rd10, %rd9;
    prefetch.tensormap [%rd10];
    ret;
}
)";

/// The tensor of the tma_tile program: 40 x 24 f32, row-major.
constexpr unsigned kMapRows = 40, kMapCols = 24;
constexpr size_t kMapBytes = kMapRows * kMapCols * sizeof(float);
/// The box (rows x columns) and where tma_tile loads it: it covers rows
/// 32..47 and columns 20..27, so part of it lies outside the tensor.
constexpr unsigned kBoxRows = 16, kBoxCols = 8, kBoxRow = 32, kBoxCol = 20;

/// Writes the tensor-map artifact: tma_tile over input 0 into output 0,
/// then tma_prefetch of maps of every element type, rank 1 and 5 and every
/// swizzle over the same input.
void writeTensorMapProgram(const TempDir &dir) {
  dir.write("kernels.ptx", kTensorMapPtx);
  dir.writeProgram(
            "sparseopt-program 2\n"
            "module kernels.ptx\n"
            "buffer 0 input 0 " +
                std::to_string(kMapBytes) +
                "\n"
                "buffer 1 output 0 " +
                std::to_string(kBoxRows * kBoxCols * sizeof(float)) +
                "\n"
                "launch tma_tile grid 1 1 1 block 128 1 1 smem 0 args "
                "tmap:b0:f32:40x24:16x8:0 b1 i32:20 i32:32\n"
                "launch tma_prefetch grid 1 1 1 block 32 1 1 smem 0 args "
                "tmap:b0:f16:40x48:16x16:32 tmap:b0:bf16:40x48:8x32:64 "
                "tmap:b0:i32:40x24:4x8:128 tmap:b0:f32:960:256:0 "
                "tmap:b0:f16:2x2x2x10x24:1x1x1x2x8:0\n");
}

/// Element (r, c) of the n-th input of the tensor-map test: never zero.
float mapInput(int n, unsigned r, unsigned c) {
  return float(n * 10000 + r * 100 + c + 1);
}

/// Loads the tensor-map program, or skips on a GPU without TMA (the module
/// targets sm_90a).
#define LOAD_TENSOR_MAP_PROGRAM(dir, program)                                  \
  do {                                                                         \
    writeTensorMapProgram(dir);                                                \
    sparseopt_status loadStatus =                                              \
        sparseopt_program_load((dir).c_str(), &(program));                     \
    if (loadStatus == SPARSEOPT_ERROR_CUDA &&                                  \
        (contains(lastError(), "NO_BINARY_FOR_GPU") ||                         \
         contains(lastError(), "SM version")))                                 \
      GTEST_SKIP() << "needs an sm_90a GPU (TMA): " << lastError();            \
    ASSERT_EQ(loadStatus, SPARSEOPT_OK) << lastError();                        \
  } while (0)

TEST(Gpu, ProgramPassesTensorMaps) {
  REQUIRE_GPU();
  TempDir dir;
  sparseopt_program program = nullptr;
  LOAD_TENSOR_MAP_PROGRAM(dir, program);

  // Two inputs with different contents: each run encodes the map for the
  // input it is given (and reuses it when the input stays the same).
  sparseopt_deviceptr in[2] = {0, 0}, out = 0;
  const size_t outBytes = kBoxRows * kBoxCols * sizeof(float);
  for (int n = 0; n < 2; ++n) {
    std::vector<float> host(kMapRows * kMapCols);
    for (unsigned r = 0; r < kMapRows; ++r)
      for (unsigned c = 0; c < kMapCols; ++c)
        host[r * kMapCols + c] = mapInput(n, r, c);
    ASSERT_OK(sparseopt_malloc(kMapBytes, &in[n]));
    ASSERT_OK(sparseopt_memcpy_htod(in[n], host.data(), kMapBytes));
  }
  ASSERT_OK(sparseopt_malloc(outBytes, &out));

  for (int n : {0, 0, 1, 0}) {
    ASSERT_OK(sparseopt_memset_d8(out, 0xff, outBytes));
    ASSERT_OK(sparseopt_synchronize());
    ASSERT_OK(sparseopt_program_run(program, &in[n], &out, nullptr));
    ASSERT_OK(sparseopt_synchronize());
    std::vector<float> tile(kBoxRows * kBoxCols);
    ASSERT_OK(sparseopt_memcpy_dtoh(tile.data(), out, outBytes));
    for (unsigned r = 0; r < kBoxRows; ++r)
      for (unsigned c = 0; c < kBoxCols; ++c) {
        unsigned row = kBoxRow + r, col = kBoxCol + c;
        float expected = row < kMapRows && col < kMapCols
                             ? mapInput(n, row, col)
                             : 0.0f; // out of bounds reads as zero
        ASSERT_EQ(tile[r * kBoxCols + c], expected)
            << "input " << n << ", box element (" << r << ", " << c << ")";
      }
  }

  EXPECT_OK(sparseopt_free(in[0]));
  EXPECT_OK(sparseopt_free(in[1]));
  EXPECT_OK(sparseopt_free(out));
  EXPECT_OK(sparseopt_program_destroy(program));
}

TEST(Gpu, ProgramRunRejectsUnalignedTensorMapBuffer) {
  REQUIRE_GPU();
  TempDir dir;
  sparseopt_program program = nullptr;
  LOAD_TENSOR_MAP_PROGRAM(dir, program);
  sparseopt_deviceptr in = 0, out = 0;
  ASSERT_OK(sparseopt_malloc(kMapBytes + 16, &in));
  ASSERT_OK(sparseopt_malloc(kBoxRows * kBoxCols * sizeof(float), &out));

  sparseopt_deviceptr unaligned = in + 4;
  EXPECT_EQ(sparseopt_program_run(program, &unaligned, &out, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  std::string message = lastError();
  EXPECT_TRUE(contains(message, "sparseopt_program_run: launch 0 ("));
  EXPECT_TRUE(contains(message, "program.txt:5)"));
  EXPECT_TRUE(contains(message, "kernel 'tma_tile' argument 0 (tensor map "
                                "over buffer 0, input 0): device pointer 0x"));
  EXPECT_TRUE(contains(message, "is not 16-byte aligned"));

  // The failure leaves the program usable.
  sparseopt_deviceptr aligned = in + 16;
  EXPECT_OK(sparseopt_program_run(program, &aligned, &out, nullptr));
  EXPECT_OK(sparseopt_synchronize());

  EXPECT_OK(sparseopt_free(in));
  EXPECT_OK(sparseopt_free(out));
  EXPECT_OK(sparseopt_program_destroy(program));
}

//===----------------------------------------------------------------------===//
// GPU: gemm lines through cuBLASLt. Inputs are multiples of 1/4 in
// [-0.5, 0.5] (exact in f16 and bf16) and K is small, so every partial sum is
// exact in f32 and the results can be compared exactly.
//===----------------------------------------------------------------------===//

/// A deterministic value from {-0.5, -0.25, 0, 0.25, 0.5}.
float quarter(unsigned i, unsigned salt) {
  return float(int((i * 7 + salt * 3 + 1) % 5) - 2) * 0.25f;
}

/// bf16 bits of `value` (exact for the values above: truncation).
uint16_t toBf16(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  return uint16_t(bits >> 16);
}

/// f16 bits of a value from {-0.5, -0.25, 0, 0.25, 0.5}.
uint16_t toF16(float value) {
  uint16_t sign = value < 0 ? 0x8000 : 0;
  float magnitude = value < 0 ? -value : value;
  if (magnitude == 0.0f)
    return sign;
  return uint16_t(sign | (magnitude == 0.5f ? 0x3800 : 0x3400));
}

/// The float value of f16 bits (normal numbers and zero).
float fromF16(uint16_t bits) {
  int exponent = (bits >> 10) & 0x1f;
  int mantissa = bits & 0x3ff;
  float value = exponent == 0
                    ? std::ldexp(float(mantissa), -24)
                    : std::ldexp(float(mantissa | 0x400), exponent - 25);
  return (bits & 0x8000) ? -value : value;
}

/// Bytes of a vector of 16-bit values, for TempDir::write.
std::string bytesOf(const std::vector<uint16_t> &values) {
  return std::string(reinterpret_cast<const char *>(values.data()),
                     values.size() * sizeof(uint16_t));
}

// The gemm program's shapes: gemm 0 (bf16 -> f32, bias, ReLU) and gemm 1
// (f16 -> f16, no epilogue).
constexpr unsigned kM0 = 3, kN0 = 40, kK0 = 24;
constexpr unsigned kM1 = 16, kN1 = 64, kK1 = 32;

/// Writes a program mixing gemms and a launch:
///   y0 = relu(x0 * w0^T + bias) (bf16 in, f32 out), then y0 += 1 (add_one),
///   then y1 = x1 * w1^T (f16); the launch must see the gemm's result.
void writeGemmGpuProgram(const TempDir &dir) {
  dir.write("kernels.ptx", kTestPtx);
  std::vector<uint16_t> w0(kN0 * kK0), w1(kN1 * kK1);
  for (unsigned i = 0; i < w0.size(); ++i)
    w0[i] = toBf16(quarter(i, 1));
  for (unsigned i = 0; i < w1.size(); ++i)
    w1[i] = toF16(quarter(i, 3));
  std::vector<float> bias(kN0);
  for (unsigned i = 0; i < kN0; ++i)
    bias[i] = 2.0f * quarter(i, 4);
  dir.write("w0.bin", bytesOf(w0));
  dir.write("w1.bin", bytesOf(w1));
  dir.write("bias.bin", std::string(reinterpret_cast<const char *>(bias.data()),
                                    bias.size() * sizeof(float)));
  auto n = [](unsigned value) { return std::to_string(value); };
  dir.writeProgram(
            "sparseopt-program 2\n"
            "module kernels.ptx\n"
            "buffer 0 input 0 " + n(kM0 * kK0 * 2) + "\n" +
            "buffer 1 constant w0.bin " + n(kN0 * kK0 * 2) + "\n" +
            "buffer 2 constant bias.bin " + n(kN0 * 4) + "\n" +
            "buffer 3 output 0 " + n(kM0 * kN0 * 4) + "\n" +
            "buffer 4 input 1 " + n(kM1 * kK1 * 2) + "\n" +
            "buffer 5 constant w1.bin " + n(kN1 * kK1 * 2) + "\n" +
            "buffer 6 output 1 " + n(kM1 * kN1 * 2) + "\n" +
            "gemm m=" + n(kM0) + " n=" + n(kN0) + " k=" + n(kK0) +
            " in=bf16 out=f32 x=b0 w=b1 y=b3 bias=b2:f32 act=relu\n" +
            "launch add_one grid 1 1 1 block 128 1 1 smem 0 args b3 i32:" +
            n(kM0 * kN0) + "\n" +
            "gemm m=" + n(kM1) + " n=" + n(kN1) + " k=" + n(kK1) +
            " in=f16 out=f16 x=b4 w=b5 y=b6\n");
}

TEST(Gpu, ProgramRunsGemms) {
  REQUIRE_GPU();
  TempDir dir;
  writeGemmGpuProgram(dir);
  sparseopt_program program = nullptr;
  ASSERT_OK(sparseopt_program_load(dir.c_str(), &program));
  ASSERT_EQ(sparseopt_program_num_steps(program), 3);
  ASSERT_EQ(sparseopt_program_num_launches(program), 1);

  std::vector<uint16_t> x0(kM0 * kK0), x1(kM1 * kK1);
  for (unsigned i = 0; i < x0.size(); ++i)
    x0[i] = toBf16(quarter(i, 2));
  for (unsigned i = 0; i < x1.size(); ++i)
    x1[i] = toF16(quarter(i, 5));
  sparseopt_deviceptr in[2] = {0, 0}, out[2] = {0, 0};
  const size_t outBytes[2] = {kM0 * kN0 * 4, kM1 * kN1 * 2};
  ASSERT_OK(sparseopt_malloc(x0.size() * 2, &in[0]));
  ASSERT_OK(sparseopt_malloc(x1.size() * 2, &in[1]));
  ASSERT_OK(sparseopt_memcpy_htod(in[0], x0.data(), x0.size() * 2));
  ASSERT_OK(sparseopt_memcpy_htod(in[1], x1.data(), x1.size() * 2));
  for (int o = 0; o < 2; ++o)
    ASSERT_OK(sparseopt_malloc(outBytes[o], &out[o]));

  sparseopt_stream stream = nullptr;
  ASSERT_OK(sparseopt_stream_create(&stream));
  // Twice, on a stream and on the default stream: runs are repeatable.
  for (sparseopt_stream s : {stream, sparseopt_stream(nullptr)}) {
    for (int o = 0; o < 2; ++o)
      ASSERT_OK(sparseopt_memset_d8(out[o], 0xff, outBytes[o]));
    ASSERT_OK(sparseopt_synchronize());
    ASSERT_OK(sparseopt_program_run(program, in, out, s));
    ASSERT_OK(sparseopt_stream_synchronize(s));

    std::vector<float> y0(kM0 * kN0);
    std::vector<uint16_t> y1(kM1 * kN1);
    ASSERT_OK(sparseopt_memcpy_dtoh(y0.data(), out[0], outBytes[0]));
    ASSERT_OK(sparseopt_memcpy_dtoh(y1.data(), out[1], outBytes[1]));
    for (unsigned r = 0; r < kM0; ++r)
      for (unsigned c = 0; c < kN0; ++c) {
        float sum = 2.0f * quarter(c, 4);
        for (unsigned k = 0; k < kK0; ++k)
          sum += quarter(r * kK0 + k, 2) * quarter(c * kK0 + k, 1);
        float expected = (sum > 0.0f ? sum : 0.0f) + 1.0f;
        ASSERT_EQ(y0[r * kN0 + c], expected) << "y0 (" << r << ", " << c << ")";
      }
    for (unsigned r = 0; r < kM1; ++r)
      for (unsigned c = 0; c < kN1; ++c) {
        float sum = 0.0f;
        for (unsigned k = 0; k < kK1; ++k)
          sum += quarter(r * kK1 + k, 5) * quarter(c * kK1 + k, 3);
        ASSERT_EQ(fromF16(y1[r * kN1 + c]), sum)
            << "y1 (" << r << ", " << c << ")";
      }
  }

  // An operand that is not 16-byte aligned is refused before cuBLASLt sees
  // it, and the program stays usable.
  sparseopt_deviceptr shifted[2] = {in[0] + 2, in[1]};
  EXPECT_EQ(sparseopt_program_run(program, shifted, out, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  std::string message = lastError();
  EXPECT_TRUE(contains(message, "sparseopt_program_run: input 0: device "
                                "pointer 0x"));
  EXPECT_TRUE(contains(message, "is not 16-byte aligned"));
  EXPECT_OK(sparseopt_program_run(program, in, out, nullptr));
  EXPECT_OK(sparseopt_synchronize());

  EXPECT_OK(sparseopt_stream_destroy(stream));
  for (int i = 0; i < 2; ++i) {
    EXPECT_OK(sparseopt_free(in[i]));
    EXPECT_OK(sparseopt_free(out[i]));
  }
  EXPECT_OK(sparseopt_program_destroy(program));
}

TEST(Gpu, GemmOnlyProgramLoadsWithoutModule) {
  REQUIRE_GPU();
  TempDir dir;
  writeGemmProgram(dir); // m=4 n=8 k=12, f16 -> f32
  sparseopt_program program = nullptr;
  ASSERT_OK(sparseopt_program_load(dir.c_str(), &program));
  std::vector<uint16_t> x(4 * 12), w(8 * 12);
  for (unsigned i = 0; i < x.size(); ++i)
    x[i] = toF16(quarter(i, 1));
  for (unsigned i = 0; i < w.size(); ++i)
    w[i] = toF16(quarter(i, 2));
  sparseopt_deviceptr in[2] = {0, 0}, out = 0;
  ASSERT_OK(sparseopt_malloc(x.size() * 2, &in[0]));
  ASSERT_OK(sparseopt_malloc(w.size() * 2, &in[1]));
  ASSERT_OK(sparseopt_malloc(4 * 8 * 4, &out));
  ASSERT_OK(sparseopt_memcpy_htod(in[0], x.data(), x.size() * 2));
  ASSERT_OK(sparseopt_memcpy_htod(in[1], w.data(), w.size() * 2));
  ASSERT_OK(sparseopt_program_run(program, in, &out, nullptr));
  std::vector<float> y(4 * 8);
  ASSERT_OK(sparseopt_memcpy_dtoh(y.data(), out, y.size() * 4));
  for (unsigned r = 0; r < 4; ++r)
    for (unsigned c = 0; c < 8; ++c) {
      float sum = 0.0f;
      for (unsigned k = 0; k < 12; ++k)
        sum += quarter(r * 12 + k, 1) * quarter(c * 12 + k, 2);
      ASSERT_EQ(y[r * 8 + c], sum) << "(" << r << ", " << c << ")";
    }
  EXPECT_OK(sparseopt_free(in[0]));
  EXPECT_OK(sparseopt_free(in[1]));
  EXPECT_OK(sparseopt_free(out));
  EXPECT_OK(sparseopt_program_destroy(program));
}

//===----------------------------------------------------------------------===//
// GPU: params, prepare steps and checks. The prepare steps are gemm lines
// (cuBLASLt), so no kernel of the compiler is needed: a prepare gemm turns a
// param into a temp that a run gemm consumes, and a prepare gemm of a
// constant and a param writes the int32 that a check reads.
//===----------------------------------------------------------------------===//

/// f16 bits of 1.0, 2.0, 3.0, 0.5 and -2.0.
constexpr uint16_t kF16One = 0x3C00, kF16Two = 0x4000, kF16Three = 0x4200,
                   kF16Half = 0x3800, kF16MinusTwo = 0xC000;

// The shapes of the prepared-weight program: x [kPM, kPK], W [kPK, kPK].
constexpr unsigned kPM = 4, kPK = 16;

/// Writes a program with one param W [16, 16] f16 whose prepare stage
/// computes T = 2 W^T (a gemm of the constant 2I and W) and whose run stage
/// computes y0 = x T^T = 2 x W from the prepared T and y1 = x W^T from the
/// param itself, then writes 1.0 into the check buffer (a run step may use
/// any buffer): the next bind must zero it again, or its check fails.
void writePreparedWeightProgram(const TempDir &dir) {
  std::vector<uint16_t> twoI(kPK * kPK, 0);
  for (unsigned i = 0; i < kPK; ++i)
    twoI[i * kPK + i] = kF16Two;
  dir.write("two_i.bin", bytesOf(twoI));
  dir.write("one.bin", bytesOf({kF16One}));
  auto n = [](unsigned value) { return std::to_string(value); };
  dir.writeProgram(
            "sparseopt-program 2\n"
            "buffer 0 input 0 " + n(kPM * kPK * 2) + "\n" +       // 2: x
            "buffer 1 param 0 " + n(kPK * kPK * 2) + "\n" +       // 3: W
            "buffer 2 constant two_i.bin " + n(kPK * kPK * 2) + "\n" +
            "buffer 3 temp " + n(kPK * kPK * 2) + "\n" +          // 5: T
            "buffer 4 output 0 " + n(kPM * kPK * 4) + "\n" +      // 6: y0
            "buffer 5 output 1 " + n(kPM * kPK * 4) + "\n" +      // 7: y1
            "buffer 6 temp 4\n"                                   // 8: check
            "buffer 7 constant one.bin 2\n"                       // 9
            "stage prepare\n"                                     // 10
            "gemm m=16 n=16 k=16 in=f16 out=f16 x=b2 w=b1 y=b3\n" // 11
            "check b6 param 0 pattern 2:4 groups 4\n"             // 12
            "stage run\n"                                         // 13
            "gemm m=4 n=16 k=16 in=f16 out=f32 x=b0 w=b3 y=b4\n"  // 14
            "gemm m=4 n=16 k=16 in=f16 out=f32 x=b0 w=b1 y=b5\n"  // 15
            "gemm m=1 n=1 k=1 in=f16 out=f32 x=b7 w=b7 y=b6\n");  // 16
}

/// Uploads the f16 values of `host` into new device memory.
sparseopt_deviceptr upload(const std::vector<uint16_t> &host) {
  sparseopt_deviceptr device = 0;
  EXPECT_EQ(sparseopt_malloc(host.size() * 2, &device), SPARSEOPT_OK);
  EXPECT_EQ(sparseopt_memcpy_htod(device, host.data(), host.size() * 2),
            SPARSEOPT_OK);
  return device;
}

TEST(Gpu, ProgramBindsParamsAndRunsPreparedWeights) {
  REQUIRE_GPU();
  TempDir dir;
  writePreparedWeightProgram(dir);
  sparseopt_program program = nullptr;
  ASSERT_OK(sparseopt_program_load(dir.c_str(), &program));
  ASSERT_EQ(sparseopt_program_num_params(program), 1);
  ASSERT_EQ(sparseopt_program_param_bytes(program, 0), kPK * kPK * 2u);
  ASSERT_EQ(sparseopt_program_num_inputs(program), 1);
  ASSERT_EQ(sparseopt_program_num_steps(program), 4);
  EXPECT_STREQ(sparseopt_program_step_stage(program, 0), "prepare");
  EXPECT_STREQ(sparseopt_program_step_stage(program, 3), "run");

  std::vector<uint16_t> x(kPM * kPK), w[2] = {std::vector<uint16_t>(kPK * kPK),
                                              std::vector<uint16_t>(kPK * kPK)};
  for (unsigned i = 0; i < x.size(); ++i)
    x[i] = toF16(quarter(i, 7));
  for (unsigned v = 0; v < 2; ++v)
    for (unsigned i = 0; i < kPK * kPK; ++i)
      w[v][i] = toF16(quarter(i, 8 + v));
  sparseopt_deviceptr in = upload(x), param[2] = {upload(w[0]), upload(w[1])};
  sparseopt_deviceptr out[2] = {0, 0};
  const size_t outBytes = kPM * kPK * 4;
  for (int o = 0; o < 2; ++o)
    ASSERT_OK(sparseopt_malloc(outBytes, &out[o]));
  ASSERT_OK(sparseopt_synchronize());

  // Not bound yet.
  EXPECT_EQ(sparseopt_program_run(program, &in, out, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "sparseopt_program_run: the program has 1 params: "
                         "bind them first (sparseopt_program_bind)");
  EXPECT_EQ(sparseopt_program_bind(program, param, 2, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "the program has 1 param(s), got 2"));
  EXPECT_EQ(sparseopt_program_bind(program, nullptr, 1, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "params must not be NULL"));

  sparseopt_stream stream = nullptr;
  ASSERT_OK(sparseopt_stream_create(&stream));
  // Bind W0 on a stream and run twice (the run scribbles on the check
  // buffer, harmless to runs); then bind W1 on the default stream: the
  // check passes only because bind zeroes the temps again.
  struct Case {
    int weight;
    sparseopt_stream stream;
  };
  for (Case c : {Case{0, stream}, Case{1, nullptr}, Case{0, stream}}) {
    ASSERT_OK(sparseopt_program_bind(program, &param[c.weight], 1, c.stream));
    for (int run = 0; run < 2; ++run) {
      for (int o = 0; o < 2; ++o)
        ASSERT_OK(sparseopt_memset_d8(out[o], 0xff, outBytes));
      ASSERT_OK(sparseopt_synchronize());
      ASSERT_OK(sparseopt_program_run(program, &in, out, c.stream));
      ASSERT_OK(sparseopt_stream_synchronize(c.stream));
      std::vector<float> y0(kPM * kPK), y1(kPM * kPK);
      ASSERT_OK(sparseopt_memcpy_dtoh(y0.data(), out[0], outBytes));
      ASSERT_OK(sparseopt_memcpy_dtoh(y1.data(), out[1], outBytes));
      for (unsigned r = 0; r < kPM; ++r)
        for (unsigned j = 0; j < kPK; ++j) {
          float prepared = 0.0f, direct = 0.0f;
          for (unsigned k = 0; k < kPK; ++k) {
            float xv = quarter(r * kPK + k, 7);
            prepared += xv * 2.0f * quarter(k * kPK + j, 8 + c.weight);
            direct += xv * quarter(j * kPK + k, 8 + c.weight);
          }
          ASSERT_EQ(y0[r * kPK + j], prepared)
              << "W" << c.weight << " y0 (" << r << ", " << j << ")";
          ASSERT_EQ(y1[r * kPK + j], direct)
              << "W" << c.weight << " y1 (" << r << ", " << j << ")";
        }
    }
  }

  EXPECT_OK(sparseopt_stream_destroy(stream));
  EXPECT_OK(sparseopt_free(in));
  for (int i = 0; i < 2; ++i) {
    EXPECT_OK(sparseopt_free(param[i]));
    EXPECT_OK(sparseopt_free(out[i]));
  }
  EXPECT_OK(sparseopt_program_destroy(program));
}

/// A program whose check reads 1.0 * W[0] as f32 bits (a prepare gemm of a
/// constant and the param), so the first weight element decides the check,
/// and whose run copies W[0] into its f32 output.
void writeCheckedWeightProgram(const TempDir &dir) {
  dir.write("one.bin", bytesOf({kF16One}));
  dir.writeProgram(
            "sparseopt-program 2\n"
            "buffer 0 param 0 32                                 # W: 16 f16\n"
            "buffer 1 constant one.bin 2\n"
            "buffer 2 temp 4\n"
            "buffer 3 output 0 4\n"
            "stage prepare\n"
            "gemm m=1 n=1 k=1 in=f16 out=f32 x=b1 w=b0 y=b2\n"
            "check b2 param 0 pattern 6:8 groups 1000\n"
            "stage run\n"
            "gemm m=1 n=1 k=1 in=f16 out=f32 x=b1 w=b0 y=b3\n");
}

TEST(Gpu, BindReportsBrokenSparsity) {
  REQUIRE_GPU();
  TempDir dir;
  writeCheckedWeightProgram(dir);
  sparseopt_program program = nullptr;
  ASSERT_OK(sparseopt_program_load(dir.c_str(), &program));
  std::vector<uint16_t> w(16, 0);
  sparseopt_deviceptr param = upload(w), out = 0;
  ASSERT_OK(sparseopt_malloc(4, &out));
  auto setFirst = [&](uint16_t bits) {
    w[0] = bits;
    return sparseopt_memcpy_htod(param, w.data(), w.size() * 2);
  };
  auto runOnce = [&](float &y) {
    y = -1.0f;
    sparseopt_status status =
        sparseopt_program_run(program, nullptr, &out, nullptr);
    if (status == SPARSEOPT_OK)
      status = sparseopt_synchronize();
    if (status == SPARSEOPT_OK)
      status = sparseopt_memcpy_dtoh(&y, out, 4);
    return status;
  };

  // A zero leaves the check at 0.
  ASSERT_OK(sparseopt_program_bind(program, &param, 1, nullptr));
  float y = -1.0f;
  ASSERT_OK(runOnce(y));
  EXPECT_EQ(y, 0.0f);

  // 1.0 as f32 is 0x3F800000 = 1065353216: flat = 2147483647 - 1065353216
  // = 1082130431 = 1082130 * 1000 + 431, columns 431 * 8 = 3448 to 3455.
  ASSERT_OK(setFirst(kF16One));
  EXPECT_EQ(sparseopt_program_bind(program, &param, 1, nullptr),
            SPARSEOPT_ERROR_WEIGHT);
  EXPECT_EQ(lastError(), "sparseopt_program_bind: param 0 breaks its declared "
                         "6:8 sparsity: row 1082130, group 431 (columns "
                         "3448..3455) has more than 6 nonzeros");
  EXPECT_STREQ(sparseopt_status_string(SPARSEOPT_ERROR_WEIGHT),
               "SPARSEOPT_ERROR_WEIGHT");
  // A failed bind leaves the program unbound, even though it was bound.
  EXPECT_EQ(runOnce(y), SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "the program has 1 params: bind them "
                                    "first (sparseopt_program_bind)"));

  // A negative value (-2.0 is 0xC0000000 = -1073741824 as an int32):
  // flat = 3221225471 = 3221225 * 1000 + 471, columns 3768 to 3775.
  ASSERT_OK(setFirst(kF16MinusTwo));
  EXPECT_EQ(sparseopt_program_bind(program, &param, 1, nullptr),
            SPARSEOPT_ERROR_WEIGHT);
  EXPECT_TRUE(contains(lastError(), "row 3221225, group 471 (columns "
                                    "3768..3775) has more than 6 nonzeros"));

  // Fixed in place and bound again: usable.
  ASSERT_OK(setFirst(0));
  ASSERT_OK(sparseopt_program_bind(program, &param, 1, nullptr));
  ASSERT_OK(runOnce(y));
  EXPECT_EQ(y, 0.0f);
  // A weight changed in place without a new bind: the run steps read the
  // param directly, so the run sees it (only prepared temps go stale).
  ASSERT_OK(setFirst(kF16Half));
  ASSERT_OK(runOnce(y));
  EXPECT_EQ(y, 0.5f);

  EXPECT_OK(sparseopt_free(param));
  EXPECT_OK(sparseopt_free(out));
  EXPECT_OK(sparseopt_program_destroy(program));
}

TEST(Gpu, ProgramWithoutParamsPreparesAtLoad) {
  REQUIRE_GPU();
  TempDir dir;
  // Prepare: t = 2 * 3 from constants; run: y = x * t.
  dir.write("two.bin", bytesOf({kF16Two}));
  dir.write("three.bin", bytesOf({kF16Three}));
  dir.writeProgram("sparseopt-program 2\n"
                           "buffer 0 constant two.bin 2\n"
                           "buffer 1 constant three.bin 2\n"
                           "buffer 2 temp 2\n"
                           "buffer 3 input 0 2\n"
                           "buffer 4 output 0 4\n"
                           "stage prepare\n"
                           "gemm m=1 n=1 k=1 in=f16 out=f16 x=b0 w=b1 y=b2\n"
                           "stage run\n"
                           "gemm m=1 n=1 k=1 in=f16 out=f32 x=b3 w=b2 y=b4\n");
  sparseopt_program program = nullptr;
  ASSERT_OK(sparseopt_program_load(dir.c_str(), &program));
  EXPECT_EQ(sparseopt_program_num_params(program), 0);
  sparseopt_deviceptr in = upload({kF16Half}), out = 0;
  ASSERT_OK(sparseopt_malloc(4, &out));
  // No bind needed: load ran the prepare step.
  for (int bind = 0; bind < 2; ++bind) {
    if (bind == 1) { // binding 0 params reruns it
      ASSERT_OK(sparseopt_program_bind(program, nullptr, 0, nullptr));
    }
    ASSERT_OK(sparseopt_memset_d8(out, 0, 4));
    ASSERT_OK(sparseopt_synchronize());
    ASSERT_OK(sparseopt_program_run(program, &in, &out, nullptr));
    ASSERT_OK(sparseopt_synchronize());
    float y = 0.0f;
    ASSERT_OK(sparseopt_memcpy_dtoh(&y, out, 4));
    EXPECT_EQ(y, 3.0f) << "bind " << bind;
  }
  const sparseopt_deviceptr extra[1] = {in};
  EXPECT_EQ(sparseopt_program_bind(program, extra, 1, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "the program has 0 param(s), got 1"));
  EXPECT_OK(sparseopt_free(in));
  EXPECT_OK(sparseopt_free(out));
  EXPECT_OK(sparseopt_program_destroy(program));
}

} // namespace
