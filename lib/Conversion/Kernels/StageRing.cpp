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
    asmVoid(b, loc, "mbarrier.init.shared::cta.b64 [$0], $1;",
            {k.smemAddr(fullOffset(st)), im.i32(fullArrivals)}, "r,r");
    // One release per consumer warp of every block that reads the
    // stage: with a cluster, the peer's consumers release it too (its
    // B half is multicast into both blocks).
    asmVoid(b, loc, "mbarrier.init.shared::cta.b64 [$0], $1;",
            {k.smemAddr(emptyOffset(st)), im.i32(kConsumerWarps * cfg.cluster)},
            "r,r");
    if (cfg.fusedLift)
      asmVoid(b, loc, "mbarrier.init.shared::cta.b64 [$0], $1;",
              {k.smemAddr(readyOffset(st)), im.i32(kGatherThreads)}, "r,r");
  }
  asmVoid(b, loc, "fence.mbarrier_init.release.cluster;", {}, "");
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
void StageRing::wait(Value addr, Value parity) {
  asmVoid(b, loc,
          "{\n.reg .pred p;\nwait_again:\n"
          "mbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1;\n"
          "@!p bra wait_again;\n}",
          {addr, parity}, "r,r");
}

/// One arrival on this block's `empty` barrier at `addr` and, with a
/// cluster, one on each other block's barrier at the same offset (their
/// producers multicast into this block). The remote arrival has the
/// default semantics (release, CTA scope), as CUTLASS's cluster barriers
/// do: it only orders this warp's shared memory reads, which the wgmma wait
/// already completed. With `.release.cluster` the kernel measured 1.7x
/// slower on the H200 (bench/results/spmm_cluster_ab_h200.json).
void StageRing::release(Value addr) {
  asmVoid(b, loc, "mbarrier.arrive.shared::cta.b64 _, [$0];", {addr}, "r");
  // Clusters of four: the three other ranks, (rank + j) % 4.
  for (int64_t j = 1; j < cfg.cluster; ++j) {
    Value other = cfg.cluster == 2
                      ? k.peer
                      : arith::RemUIOp::create(
                            b, loc,
                            arith::AddIOp::create(b, loc, k.toI32(k.rank),
                                                  im.i32(j)),
                            im.i32(cfg.cluster));
    asmVoid(b, loc,
            "{\n.reg .b32 remote;\n"
            "mapa.shared::cluster.u32 remote, $0, $1;\n"
            "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}",
            {addr, other}, "r,r");
  }
}
