//===- SharedPrepareTest.cpp - prepared buffers shared between programs ---===//
//
// sparseopt_program_prepare_shareable on parsed programs (no GPU): two
// programs of one model whose prepare stages are the same kernels on the
// same params into temps of the same sizes match, whatever their buffer ids,
// kernel names and run steps; every kind of difference is reported.
//
//===----------------------------------------------------------------------===//

#include "sparseopt/runtime.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using sparseopt_test::contains;
using sparseopt_test::TempDir;

// A module with a compress kernel under two names and a run kernel.
const char *kPtx = R"(.version 8.5
.target sm_90a
.address_size 64
.visible .entry compress_a(.param .u64 w, .param .u64 v)
{
  ld.param.u64 %rd1, [w];
  ret;
}
.visible .entry compress_b(.param .u64 w, .param .u64 v)
{
  ld.param.u64 %rd1, [w];
  ret;
}
.visible .entry other(.param .u64 w, .param .u64 v)
{
  ld.param.u64 %rd2, [v];
  ret;
}
.visible .entry run(.param .u64 x)
{
  ret;
}
)";

/// A parsed program of `text` (program.txt) beside kPtx.
struct Parsed {
  TempDir dir;
  sparseopt_program p = nullptr;
  explicit Parsed(const std::string &text) {
    dir.write("kernels.ptx", kPtx);
    dir.writeProgram(text);
    EXPECT_EQ(sparseopt_program_parse(dir.c_str(), &p), SPARSEOPT_OK)
        << sparseopt_last_error();
  }
  ~Parsed() {
    if (p)
      sparseopt_program_destroy(p);
  }
};

const char *kDonor = "sparseopt-program 2\nmodule kernels.ptx\n"
                     "buffer 0 input 0 64\nbuffer 1 output 0 64\n"
                     "buffer 2 param 0 256\nbuffer 3 temp 128\n"
                     "stage prepare\n"
                     "launch compress_a grid 4 1 1 block 64 1 1 smem 0 args b2 b3\n"
                     "stage run\n"
                     "launch run grid 1 1 1 block 32 1 1 smem 0 args b0\n";

TEST(SharedPrepare, SameStageUnderOtherIdsAndNamesMatches) {
  Parsed donor(kDonor);
  // Other buffer ids, another kernel name for the same PTX, other run steps.
  Parsed p("sparseopt-program 2\nmodule kernels.ptx\n"
           "buffer 7 param 0 256\nbuffer 9 temp 128\nbuffer 4 input 0 16\n"
           "buffer 5 output 0 16\nbuffer 6 temp 32\n"
           "stage prepare\n"
           "launch compress_b grid 4 1 1 block 64 1 1 smem 0 args b7 b9\n"
           "stage run\n"
           "launch run grid 2 1 1 block 32 1 1 smem 0 args b6\n");
  EXPECT_EQ(sparseopt_program_prepare_shareable(p.p, donor.p), 1)
      << sparseopt_last_error();
}

TEST(SharedPrepare, DifferencesAreReported) {
  Parsed donor(kDonor);
  struct Case {
    const char *prepare, *why;
  } cases[] = {
      {"launch other grid 4 1 1 block 64 1 1 smem 0 args b2 b3\n",
       "are not the same PTX"},
      {"launch compress_a grid 8 1 1 block 64 1 1 smem 0 args b2 b3\n",
       "launch shapes or argument counts differ"},
      {"launch compress_a grid 4 1 1 block 64 1 1 smem 0 args b2 b4\n",
       "buffers of other roles or sizes"},
      {"launch compress_a grid 4 1 1 block 64 1 1 smem 0 args b2 i32:1\n",
       "the argument kinds differ"},
      {"launch compress_a grid 4 1 1 block 64 1 1 smem 0 args b2 b3\n"
       "launch compress_a grid 4 1 1 block 64 1 1 smem 0 args b2 b3\n",
       "the prepare stages have 2 and 1 steps"},
  };
  for (const Case &c : cases) {
    Parsed p(std::string("sparseopt-program 2\nmodule kernels.ptx\n"
                         "buffer 0 input 0 64\nbuffer 1 output 0 64\n"
                         "buffer 2 param 0 256\nbuffer 3 temp 128\n"
                         "buffer 4 temp 64\nstage prepare\n") +
             c.prepare +
             "stage run\nlaunch run grid 1 1 1 block 32 1 1 smem 0 args b0\n");
    EXPECT_EQ(sparseopt_program_prepare_shareable(p.p, donor.p), 0) << c.why;
    EXPECT_TRUE(contains(sparseopt_last_error(), c.why));
  }
}

TEST(SharedPrepare, TempsMustCorrespondOneToOne) {
  // The donor writes two temps where p writes one twice.
  Parsed donor("sparseopt-program 2\nmodule kernels.ptx\n"
               "buffer 2 param 0 256\nbuffer 3 temp 128\nbuffer 4 temp 128\n"
               "stage prepare\n"
               "launch compress_a grid 4 1 1 block 64 1 1 smem 0 args b2 b3\n"
               "launch compress_a grid 4 1 1 block 64 1 1 smem 0 args b2 b4\n");
  Parsed p("sparseopt-program 2\nmodule kernels.ptx\n"
           "buffer 2 param 0 256\nbuffer 3 temp 128\n"
           "stage prepare\n"
           "launch compress_a grid 4 1 1 block 64 1 1 smem 0 args b2 b3\n"
           "launch compress_a grid 4 1 1 block 64 1 1 smem 0 args b2 b3\n");
  EXPECT_EQ(sparseopt_program_prepare_shareable(p.p, donor.p), 0);
  EXPECT_TRUE(contains(sparseopt_last_error(), "one to one"));
}

TEST(SharedPrepare, NothingToShareAndNullPrograms) {
  Parsed donor(kDonor);
  Parsed none("sparseopt-program 2\nmodule kernels.ptx\nbuffer 0 input 0 64\n"
              "launch run grid 1 1 1 block 32 1 1 smem 0 args b0\n");
  EXPECT_EQ(sparseopt_program_prepare_shareable(none.p, donor.p), 0);
  EXPECT_TRUE(contains(sparseopt_last_error(), "no prepare steps"));
  EXPECT_EQ(sparseopt_program_prepare_shareable(nullptr, donor.p), -1);
  // A bind that shares needs loaded programs: parsed ones are refused.
  int shared = 7;
  sparseopt_deviceptr param = 256;
  EXPECT_EQ(sparseopt_program_bind_shared(donor.p, &param, 1, none.p, nullptr,
                                          &shared),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sparseopt_last_error(), "must be loaded"));
  EXPECT_EQ(sparseopt_program_bind_shared(donor.p, &param, 1, donor.p, nullptr,
                                          &shared),
            SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sparseopt_last_error(), "its own donor"));
}

} // namespace
