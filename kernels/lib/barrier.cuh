// cugemm/kernels/lib/barrier.cuh: synchronisation beyond __syncthreads, for the producer/consumer
// kernels: named barriers, mbarriers (sm_90: transaction counts, cluster scope), the async-proxy
// fence, setmaxnreg, the thread-block-cluster pieces and the position in a TMA ring.
//
// PTX ISA references: "bar, barrier", "mbarrier", "fence.proxy.async", "setmaxnreg", "Cluster".
#pragma once
#include "core.cuh"

// ---- named barriers (sm_70+) -----------------------------------------------------------------
// bar.sync / bar.arrive on barrier `id` (1..15; 0 is __syncthreads) for `count` threads (a multiple
// of 32). bar.arrive never blocks: a producer arrives, the consumers sync (and vice versa).
CUGEMM_DEVICE void named_barrier_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
CUGEMM_DEVICE void named_barrier_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// ---- register reallocation between warpgroups (sm_90a) -----------------------------------------
// Only effective when the kernel has a register cap at entry (__launch_bounds__(threads, 1)) and
// each warpgroup's role is one branch of an if/else; ptxas warns (C7508) when it ignores them.
template <int REGS>
CUGEMM_DEVICE void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
template <int REGS>
CUGEMM_DEVICE void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

// ---- proxy fence -----------------------------------------------------------------------------
// Make this thread's generic-proxy shared-memory writes (st.shared, cp.async, stmatrix) visible to
// the async proxy (wgmma operand reads, TMA stores); each writing thread, before the barrier.
CUGEMM_DEVICE void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// ---- mbarriers (a 64-bit object in shared memory) --------------------------------------------
// A phase completes when `count` arrivals have been made and every expected transaction byte
// (TMA copies completing on it) has landed; waiters poll the phase's parity (0, 1, 0, ...).
CUGEMM_DEVICE void mbarrier_init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
// Make initialised mbarriers visible to the other threads of the cluster and to the async proxy
// (once, by the initialising thread, before the barrier that publishes them).
CUGEMM_DEVICE void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// One arrival, and `bytes` more transaction bytes expected in the current phase (the producer, right
// before issuing the TMA copies that will complete on this barrier).
CUGEMM_DEVICE void mbarrier_arrive_expect_tx(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)),
               "r"(bytes)
               : "memory");
}
CUGEMM_DEVICE void mbarrier_arrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
// An arrival on the mbarrier at the same offset in the shared memory of block `cta` of this
// cluster (a consumer releasing a stage that another block's TMA multicast fills).
CUGEMM_DEVICE void mbarrier_arrive_cluster(unsigned long long* bar, unsigned cta) {
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(cta)
      : "memory");
}
// Whether the phase with parity `parity` has completed (try_wait may suspend the thread for a
// system-dependent time before it answers no); mbarrier_wait loops on it.
CUGEMM_DEVICE bool mbarrier_try_wait(unsigned long long* bar, unsigned parity) {
  unsigned done;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(smem_addr(bar)), "r"(parity)
      : "memory");
  return done != 0;
}
CUGEMM_DEVICE void mbarrier_wait(unsigned long long* bar, unsigned parity) {
  while (!mbarrier_try_wait(bar, parity)) {
  }
}

// ---- thread-block clusters (sm_90) -----------------------------------------------------------
CUGEMM_DEVICE unsigned cluster_ctarank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
// All threads of all blocks of the cluster, without ordering memory (arrive.relaxed): what the blocks
// publish to each other is ordered by other means (the mbarrier inits: fence.mbarrier_init.release.cluster,
// CUTLASS's cluster_arrive_relaxed + cluster_wait). The release form (barrier.cluster.arrive.release)
// is a MEMBAR.ALL.GPU: about 0.7 us per barrier on an H100, whatever is outstanding
// (scripts/cluster_floor_probe.py: an empty 128-block kernel in clusters of 2 takes 0.99 us, 2.37 us
// with two release/acquire barriers, 1.10 us with two relaxed ones); no kernel of the zoo needs it.
CUGEMM_DEVICE void cluster_sync_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;\n" ::: "memory");
}
// An arrival on block `cta`'s mbarrier at the same offset, with the default (.release.cta)
// semantics instead of a cluster-scope release: no MEMBAR.GPU in front of it. Enough when the
// arrival only says that this thread's reads of a buffer have completed, with no generic writes
// to publish: a consumer releasing a ring stage whose wgmmas it has waited for (wgmma.wait_group),
// that another block's TMA multicast refills. (CUTLASS's ClusterBarrier::arrive(cta_id, pred).)
CUGEMM_DEVICE void mbarrier_arrive_remote(unsigned long long* bar, unsigned cta) {
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(cta)
      : "memory");
}

// A consumer warpgroup's release of ring stage s (bar = &EMPTY[s]) in a cluster of CLUSTER blocks
// that multicast into each other's rings: its thread r < CLUSTER arrives on block r's barrier (one
// arrival per block); without clusters its thread 0 arrives on the block's own. tid: the thread's
// index in the warpgroup. (The persistent and small-M wgmma rungs, the TF32 sibling.)
template <int CLUSTER>
CUGEMM_DEVICE void release_stage(unsigned long long* bar, int tid) {
  if constexpr (CLUSTER > 1) {
    if (tid < CLUSTER) mbarrier_arrive_remote(bar, tid);
  } else {
    if (tid == 0) mbarrier_arrive(bar);
  }
}

// Order this thread's view of global memory, as acquired through the generic proxy (e.g. data
// other blocks stored before an atomic this thread observed), before its later async-proxy
// accesses to global memory (bulk / TMA copies that read it).
CUGEMM_DEVICE void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
}

// The FULL / EMPTY mbarriers of a STAGES-deep TMA ring, made by one thread: FULL[s] completes on
// the producer's one arrival (with the expected bytes), EMPTY[s] on `consumers` arrivals; then the
// fence that makes them visible to the async proxy and, with clusters, to the other blocks. The
// caller syncs the block (or cluster: sync_cta_or_cluster) before any copy or arrival uses them.
template <int STAGES>
CUGEMM_DEVICE void init_ring_barriers(unsigned long long* full, unsigned long long* empty, unsigned consumers) {
#pragma unroll
  for (int s = 0; s < STAGES; ++s) {
    mbarrier_init(&full[s], 1);
    mbarrier_init(&empty[s], consumers);
  }
  fence_mbarrier_init();
}

// Every block of the cluster (CLUSTER > 1) or every thread of the block past this point: the start of
// a kernel, after init_ring_barriers (whose fence.mbarrier_init publishes the barriers to the
// cluster). With clusters the barrier is relaxed, after a block-scope fence for the block's own other
// shared-memory writes (e.g. the grouped forms' tables): no MEMBAR.ALL.GPU.
template <int CLUSTER>
CUGEMM_DEVICE void sync_cta_or_cluster() {
  if constexpr (CLUSTER > 1) {
    __threadfence_block();
    cluster_sync_relaxed();
  } else {
    __syncthreads();
  }
}

// The position in a STAGES-deep mbarrier ring: the stage index and the parity of its current
// phase (a stage's barrier completes once per trip round the ring). Producer and consumers each
// keep one and advance it once per K-tile; persistent kernels carry it on across tiles.
template <int STAGES>
struct Ring {
  int stage = 0;
  unsigned phase = 0;
  __device__ __forceinline__ void advance() {
    if (++stage == STAGES) {
      stage = 0;
      phase ^= 1;
    }
  }
  // n K-tiles on at once (a ping-pong consumer passing over the other consumer's tile)
  __device__ __forceinline__ void skip(int n) {
    stage += n;
    const int trips = stage / STAGES;
    stage -= trips * STAGES;
    phase ^= trips & 1;
  }
};

// The end of a cluster kernel's producer (CUTLASS's producer tail): wait until every consumer of every
// block of the cluster has released the last use of each stage of this block's ring (the EMPTY phase
// the producer would wait for before using the stage again). After it no other block's arrival is on
// its way to this block's barriers, and every copy multicast into this block has landed (its own
// consumers waited for each): the block may leave without a cluster barrier at the end.
template <int STAGES>
CUGEMM_DEVICE void drain_ring(Ring<STAGES>& ring, unsigned long long* empty) {
#pragma unroll 1
  for (int i = 0; i < STAGES; ++i) {
    mbarrier_wait(&empty[ring.stage], ring.phase ^ 1);
    ring.advance();
  }
}
