package io.fencepost.benchmarks;

import java.time.Duration;

/**
 * How big an invocation is.
 *
 * @param name {@code quick} or {@code full}
 * @param records payments on the side-by-side topic
 * @param partitions its partitions
 * @param recordBytes size of each record value
 * @param inboxPerRecord the most records the per-record naive inbox applies
 * @param inboxPerHundred the most records the 100-per-transaction naive inbox applies
 * @param warmupRecords records of the warm-up topic (0: no warm-up)
 * @param warmupRounds how often each peer (but the naive inboxes) runs on it before the measured runs
 * @param repetitions how often each throughput run (side by side and per sweep point) is repeated
 * @param latencyRun how long each latency run measures, after a warm-up of a quarter of that (zero: no
 *     latency runs)
 * @param sweepRecords records per sweep point (0: no sweeps)
 */
record Plan(String name, int records, int partitions, int recordBytes, int inboxPerRecord, int inboxPerHundred,
    int warmupRecords, int warmupRounds, int repetitions, Duration latencyRun, int sweepRecords) {

  /** A CI-sized smoke run: every peer once on a small topic, correctness only (well under 2 minutes). */
  static Plan quick() {
    return new Plan("quick", 20_000, 4, 150, 2_000, 5_000, 0, 0, 1, Duration.ZERO, 0);
  }

  /**
   * The numbers: warm-up, side by side (three throughput runs per peer, one latency run), then the
   * sweeps (three runs per point); about 15 minutes on 2 cores. The JIT needs about a million
   * records through the pipeline before Fencepost's rate stops climbing, hence the long warm-up.
   */
  static Plan full() {
    return new Plan("full", 500_000, 16, 150, 20_000, 50_000, 300_000, 2, 3, Duration.ofSeconds(20), 300_000);
  }

  boolean measuresLatency() {
    return !latencyRun.isZero();
  }

  boolean sweeps() {
    return sweepRecords > 0;
  }
}
