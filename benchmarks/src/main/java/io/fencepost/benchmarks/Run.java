package io.fencepost.benchmarks;

import java.time.Duration;

/**
 * One run of one peer: what to consume, and what to measure.
 *
 * @param infra the shared broker and database server
 * @param topic the input topic
 * @param partitions its partition count
 * @param workload the payments on the topic (or about to be)
 * @param producer the paced producer that fills the topic once the peer is ready, for a latency
 *     run; null when the topic is filled beforehand (a throughput run)
 * @param probe where a latency run's peer records (or points to) its latency; null for throughput runs
 * @param onReady called once the peer consumes all partitions
 */
record Run(Infrastructure infra, String topic, int partitions, Workload workload, PacedProducer producer,
    LatencyProbe probe, Runnable onReady) {

  /** A throughput run on a topic already holding the workload. */
  static Run prefilled(Infrastructure infra, String topic, int partitions, Workload workload) {
    return new Run(infra, topic, partitions, workload, null, null, () -> { });
  }

  /** A latency run on an empty topic that {@code producer} fills at its offered load. */
  static Run paced(Infrastructure infra, String topic, int partitions, PacedProducer producer, Duration warmup) {
    return new Run(infra, topic, partitions, producer.workload(), producer, new LatencyProbe(warmup), () -> { });
  }

  /** The same run, calling {@code action} too once the peer is ready. */
  Run whenReady(Runnable action) {
    return new Run(infra, topic, partitions, workload, producer, probe, action);
  }

  /** Whether to record end-to-end latency. */
  boolean latency() {
    return producer != null;
  }

  /** The peer consumes all partitions: starts the latency warm-up and the paced producer, if any. */
  void ready() {
    onReady.run();
    if (producer != null) {
      probe.ready();
      producer.start();
    }
  }
}
