package io.fencepost.benchmarks;

/**
 * One peer's row of the side-by-side table: its throughput runs and its latency run.
 *
 * @param peer the peer
 * @param throughput the runs on the pre-filled topic, as fast as it goes
 * @param latency the run at the fixed offered load, or null when skipped
 * @param latencyNote the offered and achieved load, or why the latency run was skipped
 */
record PeerResult(Peer peer, Repeated throughput, Outcome latency, String latencyNote) {

  long duplicates() {
    return throughput.duplicates() + (latency == null ? 0 : latency.duplicates());
  }

  long losses() {
    return throughput.losses() + (latency == null ? 0 : latency.losses());
  }

  /** Whether every run keeps the peer's promise. */
  boolean keptPromise() {
    return throughput.keptBy(peer.promise()) && (latency == null || peer.promise().keptBy(latency));
  }

  /** Whether every run applied each record exactly once, as every peer must in a run without crashes. */
  boolean clean() {
    return duplicates() == 0 && losses() == 0 && throughput.allApplied()
        && (latency == null || latency.applied() == latency.records());
  }
}
