package io.fencepost.benchmarks;

import java.util.Locale;

/**
 * What a peer's run cost in Kafka transactions and in threads of its own process, sampled while it
 * still runs (before it stops).
 *
 * @param transactions Kafka transactions committed during the run
 * @param producers Kafka producers alive at the end of the run (one network thread each)
 * @param threads threads alive at the end of the run that were not before it started (the peer's own:
 *     its consumers, producers, actor system or stream threads)
 */
record Footprint(long transactions, int producers, int threads) {

  /** Live threads now. */
  static int liveThreads() {
    return Thread.getAllStackTraces().size();
  }

  /** The footprint now, of a peer that started when {@code threadsBefore} threads were alive. */
  static Footprint sample(long transactions, int threadsBefore) {
    int producers = (int) Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().startsWith("kafka-producer-network-thread")).count();
    return new Footprint(transactions, producers, liveThreads() - threadsBefore);
  }

  /** Transactions per second over a run of {@code seconds}. */
  double transactionsPerSecond(double seconds) {
    return transactions / seconds;
  }

  @Override
  public String toString() {
    return String.format(Locale.ROOT, "%,d transactions, %d producers, %d threads", transactions, producers, threads);
  }
}
