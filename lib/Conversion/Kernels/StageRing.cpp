//===- StageRing.cpp - the TMA pipeline's mbarrier ring -------------------===//
//
// The barriers sit after the stages (and the TMA-store staging boxes) at
// cfg.barriersOffset: `full` of every stage, then `empty`, then (fused
// lift) `ready`, 8 bytes each. A k-tile `it` of the block uses stage
// it % stages in phase (it / stages) % 2; the producer's first pass over
// the stages waits on the parity of the phase before the first, which
// counts as complete from the start.
//
//===----------------------------------------------------------------------===//

#include "Kernels/TmaPipeline.h"
#include "NVVMHelpers.h"
#include "WgmmaAsm.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::sgpu;
using namespace mlir::sgpu::tma;

int64_t StageRing::fullOffset(int64_t st) const {
  return cfg.barriersOffset + 8 * st;
}

int64_t StageRing::emptyOffset(int64_t st) const {
  return cfg.barriersOffset + 8 * (cfg.stages + st);
}

int64_t StageRing::readyOffset(int64_t st) const {
  return cfg.barriersOffset + 8 * (2 * cfg.stages + st);
}

void StageRing::initBarrier(int64_t offset, int64_t arrivals) {
  NVVM::MBarrierInitOp::create(b, loc, k.sharedPtr(k.smemAddr(offset)),
                               im.i32(arrivals), /*predicate=*/Value());
}

void StageRing::init(Value isThread0) {
  auto init = scf::IfOp::create(b, loc, isThread0, false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&init.getThenRegion().front());
  for (int64_t st = 0; st < cfg.stages; ++st) {
    // Gathered mode: the TMA thread's arrival and one cp.async
    // arrival per producer thread.
    int64_t fullArrivals =
        cfg.gather != TmaGatherKind::none && !cfg.gatherByTma
            ? 1 + kGatherCopyThreads
            : 1;
    initBarrier(fullOffset(st), fullArrivals);
    // One release per consumer warp of every block that reads the
    // stage: with a cluster, the peer's consumers release it too (its
    // B half is multicast into both blocks).
    initBarrier(emptyOffset(st), kConsumerWarps * cfg.cluster);
    if (cfg.fusedLift)
      initBarrier(readyOffset(st), kGatherThreads);
  }
  NVVM::FenceMbarrierInitOp::create(b, loc);
}

Value StageRing::full(Value st) {
  return k.smemAddr(im.add(im.mul(st, 8), cfg.barriersOffset));
}

Value StageRing::empty(Value st) {
  return k.smemAddr(im.add(im.mul(st, 8), cfg.barriersOffset + 8 * cfg.stages));
}

Value StageRing::ready(Value st) {
  return k.smemAddr(
      im.add(im.mul(st, 8), cfg.barriersOffset + 16 * cfg.stages));
}

/// The wait has the default semantics (acquire, CTA scope) also for the
/// empty barriers that the peer block arrives on: the producer's next
/// writes into the peer are TMA copies, ordered by the barrier itself
/// (CUTLASS's pattern; measured, bench/results/spmm_cluster_ab_h200.json).
/// Inline PTX, not nvvm.mbarrier.try_wait.parity: the NVVM op always
/// passes a suspend-time hint, and with it (10 ms, CUTLASS's value) the
/// kernels measured about 2.5% slower at 16 to 512 tokens on the H200
/// (docs/design.md, NVVM ops).
void StageRing::wait(Value addr, Value parity) {
  asmVoid(b, loc,
          "{\n.reg .pred p;\nwait_again:\n"
          "mbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1;\n"
          "@!p bra wait_again;\n}",
          {addr, parity}, "r,r");
}

void StageRing::arriveExpectingBytes(Value addr, int64_t bytes) {
  NVVM::MBarrierArriveExpectTxOp::create(
      b, loc, Type(), k.sharedPtr(addr), im.i32(bytes),
      NVVM::MemScopeKindAttr::get(b.getContext(), NVVM::MemScopeKind::CTA),
      b.getBoolAttr(false), /*predicate=*/Value());
}

void StageRing::arrive(Value addr) {
  NVVM::MBarrierArriveOp::create(
      b, loc, Type(), k.sharedPtr(addr), /*count=*/Value(),
      NVVM::MemScopeKindAttr::get(b.getContext(), NVVM::MemScopeKind::CTA));
}

/// One arrival on this block's `empty` barrier at `addr` and, with a
/// cluster, one on each other block's barrier at the same offset (their
/// producers multicast into this block). The remote arrival has the
/// default semantics (release, CTA scope), as CUTLASS's cluster barriers
/// do: it only orders this warp's shared memory reads, which the wgmma wait
/// already completed. With `.release.cluster` the kernel measured 1.7x
/// slower on the H200 (bench/results/spmm_cluster_ab_h200.json).
void StageRing::release(Value addr) {
  arrive(addr);
  // Clusters of four: the three other ranks, (rank + j) % 4.
  for (int64_t j = 1; j < cfg.cluster; ++j) {
    Value other = cfg.cluster == 2
                      ? k.peer
                      : arith::RemUIOp::create(
                            b, loc,
                            arith::AddIOp::create(b, loc, k.toI32(k.rank),
                                                  im.i32(j)),
                            im.i32(cfg.cluster));
    auto clusterPtrType = LLVM::LLVMPointerType::get(
        b.getContext(), kSharedClusterAddressSpace);
    Value remote = NVVM::MapaOp::create(b, loc, clusterPtrType,
                                        k.sharedPtr(addr), other);
    NVVM::MBarrierArriveOp::create(
        b, loc, Type(), remote, /*count=*/Value(),
        NVVM::MemScopeKindAttr::get(b.getContext(), NVVM::MemScopeKind::CTA));
  }
}
