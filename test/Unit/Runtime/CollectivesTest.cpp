//===- CollectivesTest.cpp - Communicators and allreduce lines ------------===//
//
// Without a GPU: the allreduce/wait lines of the manifest (valid programs,
// every malformed case), argument checks of the communicator API, NCCL
// library errors and the torchrun environment checks. With a GPU (the
// `Gpu` suite skips itself otherwise): a world-size-1 communicator runs a
// program's all-reduces through NCCL, in order with its other steps.
//
//===----------------------------------------------------------------------===//

#include "sparseopt/runtime.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {


using sparseopt_test::TempDir;

std::string lastError() { return sparseopt_last_error(); }

using sparseopt_test::contains;

/// Parses manifests in a fresh directory.
class CollectiveManifest : public ::testing::Test {
protected:
  sparseopt_status parse(const std::string &manifest) {
    dir.write("kernels.ptx", "// not compiled by the parser\n");
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

/// Two all-reduces in flight at once (slots 0 and 1), a slot reused after
/// its wait, in place and out of place, every type and reduction.
const char *const kTwoInFlight =
    "sparseopt-program 2\n"
    "buffer 0 input 0 64\n"
    "buffer 1 temp 64\n"
    "buffer 2 temp 128\n"
    "buffer 3 output 0 64\n"
    "allreduce slot=0 send=b0 recv=b1 count=32 type=f16 op=sum\n"
    "allreduce slot=1 send=b2 recv=b2 count=32 type=f32 op=max\n"
    "wait slot=0\n"
    "allreduce slot=0 send=b1 recv=b3 count=32 type=bf16 op=avg\n"
    "wait slot=1\n"
    "wait slot=0\n";

TEST_F(CollectiveManifest, ParsesAllReduceAndWaitLines) {
  ASSERT_EQ(parse(kTwoInFlight), SPARSEOPT_OK) << lastError();
  EXPECT_EQ(sparseopt_program_num_allreduces(program), 3);
  EXPECT_EQ(sparseopt_program_num_launches(program), 0);
  ASSERT_EQ(sparseopt_program_num_steps(program), 6);
  const char *expected[] = {
      "allreduce slot=0 send=b0 recv=b1 count=32 type=f16 op=sum",
      "allreduce slot=1 send=b2 recv=b2 count=32 type=f32 op=max",
      "wait slot=0",
      "allreduce slot=0 send=b1 recv=b3 count=32 type=bf16 op=avg",
      "wait slot=1",
      "wait slot=0"};
  for (int i = 0; i < 6; ++i) {
    EXPECT_STREQ(sparseopt_program_step(program, i), expected[i]);
    EXPECT_STREQ(sparseopt_program_step_stage(program, i), "run");
  }
}

TEST_F(CollectiveManifest, EveryReductionParses) {
  for (const char *op : {"sum", "prod", "max", "min", "avg"}) {
    ASSERT_EQ(parse(std::string("sparseopt-program 2\nbuffer 0 input 0 8\n"
                                "allreduce slot=3 send=b0 recv=b0 count=4 "
                                "type=f16 op=") +
                    op + "\nwait slot=3\n"),
              SPARSEOPT_OK)
        << lastError();
    EXPECT_TRUE(contains(sparseopt_program_step(program, 0),
                         std::string("op=") + op));
    EXPECT_EQ(sparseopt_program_destroy(program), SPARSEOPT_OK);
    program = nullptr;
  }
}

TEST_F(CollectiveManifest, ParsedProgramWithAllReducesCannotRunOrTakeAComm) {
  ASSERT_EQ(parse(kTwoInFlight), SPARSEOPT_OK) << lastError();
  EXPECT_EQ(sparseopt_program_set_comm(program, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "was only parsed"));
}

struct BadCase {
  const char *name;
  const char *body; ///< lines after the header and buffers b0 (input, 8 B),
                    ///< b1 (temp, 8 B), b2 (constant-free output, 8 B)
  int line;
  const char *expected;
};

std::ostream &operator<<(std::ostream &os, const BadCase &c) {
  return os << c.name;
}

class MalformedCollective : public CollectiveManifest,
                            public ::testing::WithParamInterface<BadCase> {};

#define HEAD                                                                   \
  "sparseopt-program 2\nbuffer 0 input 0 8\nbuffer 1 temp 8\n"                 \
  "buffer 2 output 0 8\n"
#define AR(rest) "allreduce slot=0 send=b0 recv=b1 " rest "\n"

TEST_P(MalformedCollective, IsRejectedWithLineNumber) {
  const BadCase &c = GetParam();
  EXPECT_EQ(parse(std::string(HEAD) + c.body), SPARSEOPT_ERROR_PARSE)
      << lastError();
  EXPECT_EQ(program, nullptr);
  EXPECT_TRUE(contains(lastError(),
                       "program.txt:" + std::to_string(c.line) + ": "));
  EXPECT_TRUE(contains(lastError(), c.expected));
}

const BadCase kBadCases[] = {
    {"NoWait", AR("count=4 type=f16 op=sum"), 5,
     "allreduce slot 0 has no 'wait slot=0' line after it"},
    {"WaitWithoutStart", "wait slot=2\n", 5,
     "wait for slot 2, which has no all-reduce in flight"},
    {"WaitTwice", AR("count=4 type=f16 op=sum") "wait slot=0\nwait slot=0\n",
     7, "wait for slot 0, which has no all-reduce in flight"},
    {"SlotInFlight",
     AR("count=4 type=f16 op=sum") AR("count=4 type=f16 op=sum")
         "wait slot=0\n",
     6, "allreduce slot 0 is still in flight (started at line 5)"},
    {"BadWaitSyntax", AR("count=4 type=f16 op=sum") "wait 0\n", 6,
     "expected 'wait slot=<k>'"},
    {"MissingField", "allreduce slot=0 send=b0 recv=b1 count=4 type=f16\n", 5,
     "expected 6 fields on an allreduce line, got 5"},
    {"FieldOutOfOrder",
     "allreduce slot=0 recv=b1 send=b0 count=4 type=f16 op=sum\n", 5,
     "allreduce field 2: expected 'send=...', got 'recv=b1'"},
    {"NegativeSlot", "allreduce slot=-1 send=b0 recv=b1 count=4 type=f16 "
                     "op=sum\nwait slot=0\n",
     5, "allreduce slot: expected a non-negative integer, got '-1'"},
    {"BadBuffer", "allreduce slot=0 send=x0 recv=b1 count=4 type=f16 op=sum\n",
     5, "allreduce send: expected b<buffer id>, got 'x0'"},
    {"ZeroCount", AR("count=0 type=f16 op=sum"), 5,
     "allreduce count: expected an integer from 1 to"},
    {"BadType", AR("count=4 type=i8 op=sum"), 5,
     "allreduce type: unknown element type 'i8' (expected f16, bf16 or f32)"},
    {"BadOp", AR("count=4 type=f16 op=xor"), 5,
     "allreduce op: unknown reduction 'xor' (expected sum, prod, max, min or "
     "avg)"},
    {"UnknownBuffer",
     "allreduce slot=0 send=b9 recv=b1 count=4 type=f16 op=sum\nwait slot=0\n",
     5, "allreduce send uses unknown buffer b9"},
    {"TooManyElements", AR("count=5 type=f16 op=sum") "wait slot=0\n", 5,
     "allreduce send b0 has 8 bytes, fewer than 5 f16 elements (10 bytes)"},
    {"F32NeedsFourBytes", AR("count=4 type=f32 op=sum") "wait slot=0\n", 5,
     "fewer than 4 f32 elements (16 bytes)"},
    {"InPrepareStage",
     "stage prepare\n" AR("count=4 type=f16 op=sum") "stage run\nwait slot=0\n",
     6, "an 'allreduce' line is only allowed in the run stage"},
};

#undef AR
#undef HEAD

INSTANTIATE_TEST_SUITE_P(
    Parser, MalformedCollective, ::testing::ValuesIn(kBadCases),
    [](const ::testing::TestParamInfo<BadCase> &info) {
      return std::string(info.param.name);
    });

TEST_F(CollectiveManifest, RecvMustNotBeAConstantOrParam) {
  dir.write("c.bin", std::string(8, '\0'));
  EXPECT_EQ(parse("sparseopt-program 2\nbuffer 0 input 0 8\n"
                  "buffer 1 constant c.bin 8\n"
                  "allreduce slot=0 send=b0 recv=b1 count=4 type=f16 op=sum\n"
                  "wait slot=0\n"),
            SPARSEOPT_ERROR_PARSE);
  EXPECT_TRUE(contains(lastError(), "program.txt:4: allreduce recv b1 is a "
                                    "constant buffer, which a run must not "
                                    "write"));
}

//===----------------------------------------------------------------------===//
// The communicator API without a GPU
//===----------------------------------------------------------------------===//

TEST(Comm, NullArguments) {
  unsigned char id[SPARSEOPT_COMM_ID_BYTES] = {0};
  sparseopt_comm comm = nullptr;
  EXPECT_EQ(sparseopt_comm_unique_id(nullptr), SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "sparseopt_comm_unique_id: id must not be NULL"));
  EXPECT_EQ(sparseopt_comm_init(0, 1, id, 0, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sparseopt_comm_init(0, 1, nullptr, 0, &comm),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "id must not be NULL"));
  EXPECT_EQ(sparseopt_comm_init_from_env(0, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sparseopt_comm_adopt(nullptr, &comm),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "nccl_comm must not be NULL"));
  EXPECT_EQ(sparseopt_comm_rank(nullptr), -1);
  EXPECT_EQ(sparseopt_comm_size(nullptr), -1);
  EXPECT_EQ(sparseopt_comm_stream(nullptr), nullptr);
  EXPECT_EQ(sparseopt_comm_synchronize(nullptr, nullptr, 0),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sparseopt_comm_destroy(nullptr), SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sparseopt_program_set_comm(nullptr, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sparseopt_program_num_allreduces(nullptr), -1);
  EXPECT_TRUE(contains(lastError(), "sparseopt_program_num_allreduces"));
  EXPECT_STREQ(sparseopt_status_string(SPARSEOPT_ERROR_COLLECTIVE),
               "SPARSEOPT_ERROR_COLLECTIVE");
}

TEST(Comm, RankOutsideTheGroupIsInvalid) {
  unsigned char id[SPARSEOPT_COMM_ID_BYTES] = {0};
  sparseopt_comm comm = nullptr;
  EXPECT_EQ(sparseopt_comm_init(2, 2, id, 0, &comm),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "rank 2 is not in [0, 2)"));
  EXPECT_EQ(sparseopt_comm_init(0, 0, id, 0, &comm),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(comm, nullptr);
}

/// Runs `body` in a child process with a clean slate of environment
/// variables (death-test style) and expects its message on stderr.
#define EXPECT_IN_CHILD(body, regex)                                           \
  do {                                                                         \
    GTEST_FLAG_SET(death_test_style, "threadsafe");                            \
    EXPECT_EXIT(                                                               \
        {                                                                      \
          for (const char *v : {"RANK", "WORLD_SIZE", "MASTER_ADDR",           \
                                "MASTER_PORT", "SPARSEOPT_COMM_PORT",          \
                                "SPARSEOPT_COMM_ID_FILE"})                     \
            unsetenv(v);                                                       \
          body;                                                                \
        },                                                                     \
        ::testing::ExitedWithCode(0), regex);                                  \
  } while (0)

/// Calls sparseopt_comm_init_from_env and reports status and message.
#define REPORT_INIT_FROM_ENV(expected)                                         \
  sparseopt_comm comm = nullptr;                                               \
  sparseopt_status status = sparseopt_comm_init_from_env(1000, &comm);         \
  std::fprintf(stderr, "status=%s message=%s\n",                               \
               sparseopt_status_string(status), sparseopt_last_error());       \
  std::exit(status == (expected) && comm == nullptr ? 0 : 1)

TEST(CommEnv, RankMustBeANumberInTheGroup) {
  EXPECT_IN_CHILD(
      {
        setenv("RANK", "one", 1);
        REPORT_INIT_FROM_ENV(SPARSEOPT_ERROR_INVALID_ARGUMENT);
      },
      "RANK='one' is not a non-negative integer");
  EXPECT_IN_CHILD(
      {
        setenv("RANK", "4", 1);
        setenv("WORLD_SIZE", "4", 1);
        REPORT_INIT_FROM_ENV(SPARSEOPT_ERROR_INVALID_ARGUMENT);
      },
      "RANK=4 is not in \\[0, WORLD_SIZE=4\\)");
}

TEST(CommEnv, SeveralRanksNeedAnIdChannel) {
  EXPECT_IN_CHILD(
      {
        setenv("RANK", "1", 1);
        setenv("WORLD_SIZE", "2", 1);
        REPORT_INIT_FROM_ENV(SPARSEOPT_ERROR_INVALID_ARGUMENT);
      },
      "WORLD_SIZE=2 needs a way to share rank 0's NCCL id: set "
      "SPARSEOPT_COMM_ID_FILE to a path all ranks see, or MASTER_ADDR and "
      "MASTER_PORT \\(or SPARSEOPT_COMM_PORT\\)");
  EXPECT_IN_CHILD(
      {
        setenv("WORLD_SIZE", "2", 1);
        setenv("MASTER_ADDR", "127.0.0.1", 1);
        setenv("MASTER_PORT", "65535", 1); // + 1 is no port
        REPORT_INIT_FROM_ENV(SPARSEOPT_ERROR_INVALID_ARGUMENT);
      },
      "MASTER_PORT='65535' does not give a TCP port");
  EXPECT_IN_CHILD(
      {
        setenv("WORLD_SIZE", "2", 1);
        setenv("MASTER_ADDR", "127.0.0.1", 1);
        setenv("SPARSEOPT_COMM_PORT", "http", 1);
        REPORT_INIT_FROM_ENV(SPARSEOPT_ERROR_INVALID_ARGUMENT);
      },
      "SPARSEOPT_COMM_PORT='http' does not give a TCP port");
}

TEST(CommEnv, MissingNcclReportsNoLibrary) {
  // sparseopt_comm_unique_id needs no GPU, only the library.
  EXPECT_IN_CHILD(
      {
        setenv("SPARSEOPT_NCCL_LIBRARY", "/nonexistent/libnccl-missing.so", 1);
        unsigned char id[SPARSEOPT_COMM_ID_BYTES];
        sparseopt_status status = sparseopt_comm_unique_id(id);
        std::fprintf(stderr, "status=%s message=%s\n",
                     sparseopt_status_string(status), sparseopt_last_error());
        std::exit(status == SPARSEOPT_ERROR_NO_LIBRARY ? 0 : 1);
      },
      "status=SPARSEOPT_ERROR_NO_LIBRARY message=sparseopt_comm_unique_id: "
      "collectives need NCCL, which could not be opened: tried "
      "/nonexistent/libnccl-missing.so \\(.*\\) \\(from "
      "SPARSEOPT_NCCL_LIBRARY\\)");
  EXPECT_IN_CHILD(
      {
        setenv("SPARSEOPT_NCCL_LIBRARY", "libc.so.6", 1);
        unsigned char id[SPARSEOPT_COMM_ID_BYTES];
        sparseopt_status status = sparseopt_comm_unique_id(id);
        std::fprintf(stderr, "message=%s\n", sparseopt_last_error());
        std::exit(status == SPARSEOPT_ERROR_NO_LIBRARY ? 0 : 1);
      },
      "tried libc.so.6 \\(does not export ncclGetVersion");
}

//===----------------------------------------------------------------------===//
// On a GPU: world size 1 through NCCL
//===----------------------------------------------------------------------===//

#define REQUIRE_GPU()                                                          \
  do {                                                                         \
    sparseopt_status initStatus = sparseopt_init(0);                           \
    if (initStatus == SPARSEOPT_ERROR_NO_DRIVER ||                             \
        initStatus == SPARSEOPT_ERROR_NO_DEVICE)                               \
      GTEST_SKIP() << "no CUDA GPU: " << sparseopt_last_error();               \
    ASSERT_EQ(initStatus, SPARSEOPT_OK) << sparseopt_last_error();             \
  } while (0)

#define ASSERT_OK(call) ASSERT_EQ((call), SPARSEOPT_OK) << sparseopt_last_error()

TEST(Gpu, WorldSizeOneRunsAllReducesThroughNccl) {
  REQUIRE_GPU();
  sparseopt_comm comm = nullptr;
  unsigned char id[SPARSEOPT_COMM_ID_BYTES];
  ASSERT_OK(sparseopt_comm_unique_id(id));
  ASSERT_OK(sparseopt_comm_init(0, 1, id, 60000, &comm));
  EXPECT_EQ(sparseopt_comm_rank(comm), 0);
  EXPECT_EQ(sparseopt_comm_size(comm), 1);
  EXPECT_NE(sparseopt_comm_stream(comm), nullptr);

  // Two reductions in flight; with one rank each is a copy (f32 sum, f32
  // max), so the outputs equal the inputs bit for bit.
  TempDir dir;
  dir.writeProgram("sparseopt-program 2\n"
                           "buffer 0 input 0 4096\n"
                           "buffer 1 output 0 4096\n"
                           "buffer 2 input 1 4096\n"
                           "buffer 3 output 1 4096\n"
                           "allreduce slot=0 send=b0 recv=b1 count=1024 "
                           "type=f32 op=sum\n"
                           "allreduce slot=1 send=b2 recv=b3 count=1024 "
                           "type=f32 op=max\n"
                           "wait slot=1\n"
                           "wait slot=0\n");
  sparseopt_program program = nullptr;
  ASSERT_OK(sparseopt_program_load(dir.c_str(), &program));
  std::vector<float> a(1024), b(1024), outA(1024), outB(1024);
  for (int i = 0; i < 1024; ++i) {
    a[i] = 0.5f * i - 3.0f;
    b[i] = -0.25f * i;
  }
  sparseopt_deviceptr in[2] = {0, 0}, out[2] = {0, 0};
  for (sparseopt_deviceptr *p : {&in[0], &in[1], &out[0], &out[1]})
    ASSERT_OK(sparseopt_malloc(4096, p));
  ASSERT_OK(sparseopt_memcpy_htod(in[0], a.data(), 4096));
  ASSERT_OK(sparseopt_memcpy_htod(in[1], b.data(), 4096));

  // Without a communicator the run is refused.
  EXPECT_EQ(sparseopt_program_run(program, in, out, nullptr),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "the program has 2 allreduce line(s): "
                                    "give it a communicator first"));
  ASSERT_OK(sparseopt_program_set_comm(program, comm));
  sparseopt_stream stream = nullptr;
  ASSERT_OK(sparseopt_stream_create(&stream));
  ASSERT_OK(sparseopt_program_run(program, in, out, stream));
  ASSERT_OK(sparseopt_comm_synchronize(comm, stream, 60000));
  ASSERT_OK(sparseopt_memcpy_dtoh(outA.data(), out[0], 4096));
  ASSERT_OK(sparseopt_memcpy_dtoh(outB.data(), out[1], 4096));
  EXPECT_EQ(std::memcmp(outA.data(), a.data(), 4096), 0);
  EXPECT_EQ(std::memcmp(outB.data(), b.data(), 4096), 0);

  ASSERT_OK(sparseopt_program_destroy(program));
  ASSERT_OK(sparseopt_stream_destroy(stream));
  for (sparseopt_deviceptr p : {in[0], in[1], out[0], out[1]})
    ASSERT_OK(sparseopt_free(p));
  ASSERT_OK(sparseopt_comm_destroy(comm));
}

TEST(Gpu, InitFromEnvWithOneRankNeedsNoChannel) {
  REQUIRE_GPU();
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
  sparseopt_comm comm = nullptr;
  ASSERT_OK(sparseopt_comm_init_from_env(60000, &comm));
  EXPECT_EQ(sparseopt_comm_size(comm), 1);
  ASSERT_OK(sparseopt_comm_synchronize(comm, nullptr, 1000));
  ASSERT_OK(sparseopt_comm_destroy(comm));
}

} // namespace
