package io.fencepost.benchmarks;

import java.util.BitSet;
import java.util.HashMap;
import java.util.Map;

/**
 * The in-memory effect of the peers without a database: balance and payment count per merchant,
 * plus the payment ids seen, so duplicates and losses are counted exactly. One writer thread;
 * {@link #distinct()} may be read from any thread.
 */
final class MemoryLedger {

  private final Map<String, long[]> balances = new HashMap<>();
  private final BitSet seen = new BitSet();
  private long applied;
  private volatile int distinct;

  /** Credits the payment; returns how many distinct payments are applied now. */
  int credit(Payment p) {
    long[] balance = balances.computeIfAbsent(p.merchant(), m -> new long[2]);
    balance[0]++;
    balance[1] += p.cents();
    applied++;
    if (!seen.get(p.id())) {
      seen.set(p.id());
      distinct++;
    }
    return distinct;
  }

  int distinct() {
    return distinct;
  }

  /** The outcome, once the writer has stopped. */
  Outcome outcome(long records, double seconds, long peakHeapMib, Latency latency) {
    long payments = 0;
    for (long[] b : balances.values()) {
      payments += b[0];
    }
    if (payments != applied) {
      throw new IllegalStateException("ledger inconsistent: " + payments + " payments credited, " + applied + " applied");
    }
    return new Outcome(records, applied, applied - distinct, records - distinct, seconds, peakHeapMib, null, latency,
        "payment ids credited in memory");
  }
}
