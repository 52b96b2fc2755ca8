//===- CudnnAttentionGraph.cpp - an attention line as a cuDNN graph -------===//
//
// cuDNN runs fused flash attention for an operation graph of the shape its
// runtime-fusion engines recognise (the composite form of cuDNN's SDPA
// forward for inference, which every cuDNN 9 release takes):
//
//   S  = Q . K^T                      matmul, f32     [b, h, sq, sk]
//   S1 = S * scale                    pointwise MUL
//  (causal)
//   r  = row index, c = column index  pointwise GEN_INDEX, axes 2 and 3
//   keep = r >= c                     pointwise CMP_GE
//   S1 = keep ? S1 : fill             pointwise BINARY_SELECT
//   M  = max over keys of S1          reduction MAX   [b, h, sq, 1]
//   E  = exp(S1 - M)                  pointwise SUB, EXP
//   Z  = sum over keys of E           reduction ADD   [b, h, sq, 1]
//   stats = M + log Z                 pointwise LOG, ADD (virtual)
//   P  = E / Z                        pointwise DIV, in the i/o type
//   O  = P . V                        matmul
//
// Q, K, V and O are B x H x S x D, or B x S x H x D with layout=bshd (the
// same dimensions, other strides: the projections' layout, read in place).
// K enters transposed ([b, hkv, d, sk] with K's strides swapped); grouped
// heads are expressed by K and V having hkv heads where Q has h. Q, K, V, O
// and the two by-value scalars (scale, the masked score) are the graph's
// only non-virtual tensors (their ids in Cudnn.h); every intermediate is a
// virtual f32 tensor, except the index, mask and P tensors.
//
//===----------------------------------------------------------------------===//

#include "Cudnn.h"

#include <array>
#include <cfloat>
#include <cmath>
#include <limits>

namespace sparseopt {
namespace {

/// Builds backend descriptors, keeping each one in the plan (they live as
/// long as the plan) and the first failure.
class GraphBuilder {
public:
  GraphBuilder(const char *api, const std::string &where, AttentionPlan &plan)
      : api(api), where(where), plan(plan), dnn(cudnn()) {}

  Status status = SPARSEOPT_OK;

  cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t type,
                                const char *what) {
    cudnnBackendDescriptor_t d = nullptr;
    if (status != SPARSEOPT_OK)
      return nullptr;
    cudnnStatus_t result = dnn.cudnnBackendCreateDescriptor(type, &d);
    if (result != CUDNN_STATUS_SUCCESS) {
      status = cudnnFail(result, api,
                         where + ": cudnnBackendCreateDescriptor(" + what + ")");
      return nullptr;
    }
    plan.descriptors.push_back(d);
    return d;
  }

  template <typename T>
  void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
           cudnnBackendAttributeType_t type, int64_t count, const T *values,
           const char *what) {
    if (status != SPARSEOPT_OK)
      return;
    cudnnStatus_t result =
        dnn.cudnnBackendSetAttribute(d, name, type, count, values);
    if (result != CUDNN_STATUS_SUCCESS)
      status = cudnnFail(result, api,
                         where + ": cudnnBackendSetAttribute(" + what + ")");
  }
  void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
           cudnnBackendDescriptor_t value, const char *what) {
    set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &value, what);
  }

  void finalize(cudnnBackendDescriptor_t d, const char *what) {
    if (status != SPARSEOPT_OK)
      return;
    cudnnStatus_t result = dnn.cudnnBackendFinalize(d);
    if (result != CUDNN_STATUS_SUCCESS)
      status = cudnnFail(result, api,
                         where + ": cudnnBackendFinalize(" + what + ")");
  }

  /// A 4-d tensor; `uid` 0 takes the next virtual id.
  cudnnBackendDescriptor_t tensor(cudnnDataType_t type,
                                  std::array<int64_t, 4> dims,
                                  std::array<int64_t, 4> strides,
                                  int64_t uid = 0, bool byValue = false) {
    cudnnBackendDescriptor_t t =
        make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor");
    bool isVirtual = uid == 0;
    if (isVirtual)
      uid = nextVirtual++;
    const int64_t alignment = 16;
    set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type,
        "TENSOR_DATA_TYPE");
    set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data(),
        "TENSOR_DIMENSIONS");
    set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data(),
        "TENSOR_STRIDES");
    set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid,
        "TENSOR_UNIQUE_ID");
    set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment,
        "TENSOR_BYTE_ALIGNMENT");
    const bool yes = true;
    if (isVirtual)
      set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes,
          "TENSOR_IS_VIRTUAL");
    if (byValue)
      set(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &yes,
          "TENSOR_IS_BY_VALUE");
    finalize(t, "tensor");
    return t;
  }

  /// A pointwise operation y = mode(x [, b [, t]]) computed in `precision`.
  cudnnBackendDescriptor_t pointwise(cudnnPointwiseMode_t mode,
                                     cudnnDataType_t precision,
                                     cudnnBackendDescriptor_t x,
                                     cudnnBackendDescriptor_t y,
                                     cudnnBackendDescriptor_t b = nullptr,
                                     cudnnBackendDescriptor_t t = nullptr,
                                     int64_t axis = -1) {
    cudnnBackendDescriptor_t pw =
        make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise");
    set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode,
        "POINTWISE_MODE");
    set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1,
        &precision, "POINTWISE_MATH_PREC");
    if (axis >= 0)
      set(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis,
          "POINTWISE_AXIS");
    finalize(pw, "pointwise");
    cudnnBackendDescriptor_t op = make(
        CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise operation");
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw, "PW_DESCRIPTOR");
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x, "POINTWISE_XDESC");
    if (b != nullptr)
      set(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b, "POINTWISE_BDESC");
    if (t != nullptr)
      set(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t, "POINTWISE_TDESC");
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y, "POINTWISE_YDESC");
    const float one = 1.0f;
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one,
        "POINTWISE_ALPHA1");
    if (b != nullptr)
      set(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one,
          "POINTWISE_ALPHA2");
    finalize(op, "pointwise operation");
    ops.push_back(op);
    return op;
  }

  /// A reduction y = op over the dimensions where y has extent 1.
  void reduction(cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x,
                 cudnnBackendDescriptor_t y) {
    cudnnBackendDescriptor_t r =
        make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "reduction");
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    set(r, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32,
        "REDUCTION_COMP_TYPE");
    set(r, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE,
        1, &mode, "REDUCTION_OPERATOR");
    finalize(r, "reduction");
    cudnnBackendDescriptor_t op = make(
        CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, "reduction operation");
    set(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, r, "REDUCTION_DESC");
    set(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x, "REDUCTION_XDESC");
    set(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y, "REDUCTION_YDESC");
    finalize(op, "reduction operation");
    ops.push_back(op);
  }

  /// c = a . b with f32 accumulation.
  void matmul(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b,
              cudnnBackendDescriptor_t c) {
    cudnnBackendDescriptor_t mm =
        make(CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul");
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32,
        "MATMUL_COMP_TYPE");
    finalize(mm, "matmul");
    cudnnBackendDescriptor_t op =
        make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "matmul operation");
    set(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a, "MATMUL_ADESC");
    set(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b, "MATMUL_BDESC");
    set(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c, "MATMUL_CDESC");
    set(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm, "MATMUL_DESC");
    finalize(op, "matmul operation");
    ops.push_back(op);
  }

  std::vector<cudnnBackendDescriptor_t> ops;

private:
  const char *api;
  const std::string &where;
  AttentionPlan &plan;
  const CudnnApi &dnn;
  int64_t nextVirtual = 100;
};

/// Row-major strides of `dims`.
std::array<int64_t, 4> rowMajor(std::array<int64_t, 4> dims) {
  return {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
}

/// The strides of operand [b, heads, s, d] in the line's layout: row-major,
/// or with layout=bshd stored as [b, s, heads, d].
std::array<int64_t, 4> operandStrides(const AttentionDecl &a, int64_t heads,
                                      int64_t s, int64_t d) {
  if (!a.seqMajor)
    return rowMajor({int64_t(a.b), heads, s, d});
  return {s * heads * d, d, heads * d, 1};
}

/// The operation graph of `a` (see the file comment) into `g.ops`.
void describeGraph(GraphBuilder &g, const AttentionDecl &a) {
  const int64_t b = a.b, h = a.h, hkv = a.hkv, sq = a.sq, sk = a.sk, d = a.d;
  const cudnnDataType_t io =
      a.type == GemmDType::BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  const std::array<int64_t, 4> one = {1, 1, 1, 1};
  // K^T: K's strides with the last two swapped.
  std::array<int64_t, 4> ks = operandStrides(a, hkv, sk, d);
  auto q = g.tensor(io, {b, h, sq, d}, operandStrides(a, h, sq, d),
                    kAttentionQ);
  auto kt = g.tensor(io, {b, hkv, d, sk}, {ks[0], ks[1], ks[3], ks[2]},
                     kAttentionK);
  auto v = g.tensor(io, {b, hkv, sk, d}, ks, kAttentionV);
  auto o = g.tensor(io, {b, h, sq, d}, operandStrides(a, h, sq, d),
                    kAttentionO);
  auto scale = g.tensor(f32, one, one, kAttentionScale, /*byValue=*/true);

  const std::array<int64_t, 4> scores = {b, h, sq, sk}, rows = {b, h, sq, 1};
  auto score = [&](cudnnDataType_t type = CUDNN_DATA_FLOAT) {
    return g.tensor(type, scores, rowMajor(scores));
  };
  auto perRow = [&] { return g.tensor(f32, rows, rowMajor(rows)); };

  auto s = score();
  g.matmul(q, kt, s);
  auto scaled = score();
  g.pointwise(CUDNN_POINTWISE_MUL, f32, s, scaled, scale);
  if (a.causal) {
    auto fill = g.tensor(f32, one, one, kAttentionMaskFill, /*byValue=*/true);
    auto row = score(CUDNN_DATA_INT32), col = score(CUDNN_DATA_INT32);
    g.pointwise(CUDNN_POINTWISE_GEN_INDEX, f32, scaled, row, nullptr, nullptr,
                /*axis=*/2);
    g.pointwise(CUDNN_POINTWISE_GEN_INDEX, f32, scaled, col, nullptr, nullptr,
                /*axis=*/3);
    auto keep = score(CUDNN_DATA_BOOLEAN);
    g.pointwise(CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, keep, col);
    auto masked = score();
    g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, f32, scaled, masked, fill,
                keep);
    scaled = masked;
  }
  auto max = perRow();
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, scaled, max);
  auto shifted = score();
  g.pointwise(CUDNN_POINTWISE_SUB, f32, scaled, shifted, max);
  auto e = score();
  g.pointwise(CUDNN_POINTWISE_EXP, f32, shifted, e);
  auto sum = perRow();
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, e, sum);
  auto logSum = perRow();
  g.pointwise(CUDNN_POINTWISE_LOG, f32, sum, logSum);
  auto stats = perRow();
  g.pointwise(CUDNN_POINTWISE_ADD, f32, max, stats, logSum);
  auto p = score(io);
  g.pointwise(CUDNN_POINTWISE_DIV, f32, e, p, sum);
  g.matmul(p, v, o);
}

} // namespace

Status buildAttentionPlan(const char *api, const std::string &where,
                          cudnnHandle_t handle, const AttentionDecl &a,
                          AttentionPlan &plan) {
  const CudnnApi &dnn = cudnn();
  plan.scale = a.scale;
  // cuDNN takes -inf as the masked score from 9.10; older releases need a
  // finite one.
  plan.maskFill = dnn.cudnnGetVersion() >= 91000
                      ? -std::numeric_limits<float>::infinity()
                      : -FLT_MAX;
  GraphBuilder g(api, where, plan);
  describeGraph(g, a);
  cudnnBackendDescriptor_t graph =
      g.make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
  g.set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        int64_t(g.ops.size()), g.ops.data(), "OPERATIONGRAPH_OPS");
  g.set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle,
        "OPERATIONGRAPH_HANDLE");
  g.finalize(graph, "operation graph");
  if (g.status != SPARSEOPT_OK)
    return g.status;

  // The heuristic's configurations in its order (mode A, then the
  // fallback list): the first whose plan finalizes runs the line.
  std::string tried;
  for (cudnnBackendHeurMode_t mode :
       {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    cudnnBackendDescriptor_t heur =
        g.make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "engine heuristics");
    g.set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph,
          "ENGINEHEUR_OPERATION_GRAPH");
    g.set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode,
          "ENGINEHEUR_MODE");
    g.finalize(heur, "engine heuristics");
    if (g.status != SPARSEOPT_OK)
      return g.status;
    int64_t count = 0;
    cudnnStatus_t result = dnn.cudnnBackendGetAttribute(
        heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
        &count, nullptr);
    if (result != CUDNN_STATUS_SUCCESS)
      return cudnnFail(result, api, where + ": counting the heuristic's "
                                            "engine configurations");
    std::vector<cudnnBackendDescriptor_t> configs;
    for (int64_t i = 0; i < count; ++i)
      configs.push_back(
          g.make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine configuration"));
    if (g.status != SPARSEOPT_OK)
      return g.status;
    int64_t returned = 0;
    if (count > 0) {
      result = dnn.cudnnBackendGetAttribute(
          heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
          count, &returned, configs.data());
      if (result != CUDNN_STATUS_SUCCESS)
        return cudnnFail(result, api, where + ": reading the heuristic's "
                                              "engine configurations");
    }
    for (int64_t i = 0; i < returned; ++i) {
      cudnnBackendDescriptor_t candidate = nullptr;
      if (dnn.cudnnBackendCreateDescriptor(
              CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &candidate) !=
          CUDNN_STATUS_SUCCESS)
        continue;
      cudnnStatus_t made = dnn.cudnnBackendSetAttribute(
          candidate, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1,
          &handle);
      if (made == CUDNN_STATUS_SUCCESS)
        made = dnn.cudnnBackendSetAttribute(
            candidate, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &configs[i]);
      if (made == CUDNN_STATUS_SUCCESS)
        made = dnn.cudnnBackendFinalize(candidate);
      int64_t bytes = 0, got = 0;
      if (made == CUDNN_STATUS_SUCCESS)
        made = dnn.cudnnBackendGetAttribute(
            candidate, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
            CUDNN_TYPE_INT64, 1, &got, &bytes);
      if (made == CUDNN_STATUS_SUCCESS) {
        plan.plan = candidate;
        plan.workspaceBytes = bytes;
        return SPARSEOPT_OK;
      }
      tried += std::string(tried.empty() ? "" : ", ") +
               dnn.cudnnGetErrorString(made);
      dnn.cudnnBackendDestroyDescriptor(candidate);
    }
  }
  return fail(SPARSEOPT_ERROR_CUDA, api,
              where + ": cuDNN has no engine for the attention graph (" +
                  (tried.empty() ? std::string("the heuristics offered none")
                                 : "every offered plan failed: " + tried) +
                  ")");
}

} // namespace sparseopt
