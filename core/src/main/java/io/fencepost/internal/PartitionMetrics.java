package io.fencepost.internal;

import java.util.concurrent.TimeUnit;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;

/**
 * Micrometer meters of one partition, registered in {@link Metrics#globalRegistry} (add your
 * registry to it: {@code Metrics.addRegistry(prometheusRegistry)}). Tags: group, topic, partition.
 */
public final class PartitionMetrics {

  private final Counter applied;
  private final Counter droppedRedelivery;
  private final Counter droppedByKey;
  private final Counter fenced;
  private final DistributionSummary batchSize;
  private final Timer persistLatency;
  private final Timer effectLatency;

  public PartitionMetrics(String group, String topic, int partition) {
    MeterRegistry r = Metrics.globalRegistry;
    Tags tags = Tags.of("group", group, "topic", topic, "partition", Integer.toString(partition));
    applied = r.counter("fencepost.records.applied", tags);
    droppedRedelivery = r.counter("fencepost.records.dropped", tags.and("reason", "redelivery"));
    droppedByKey = r.counter("fencepost.records.dropped", tags.and("reason", "business-key"));
    fenced = r.counter("fencepost.writes.fenced", tags);
    batchSize = DistributionSummary.builder("fencepost.batch.records").tags(tags).register(r);
    persistLatency = Timer.builder("fencepost.persist.latency").tags(tags).register(r);
    effectLatency = Timer.builder("fencepost.effect.latency")
        .description("record timestamp (producer or broker time) to its effects being durable in the journal")
        .tags(tags).register(r);
  }

  public void dropped(int redelivery, int byKey) {
    if (redelivery > 0) {
      droppedRedelivery.increment(redelivery);
    }
    if (byKey > 0) {
      droppedByKey.increment(byKey);
    }
  }

  public void written(int appliedRecords, long nanos) {
    applied.increment(appliedRecords);
    batchSize.record(appliedRecords);
    persistLatency.record(nanos, TimeUnit.NANOSECONDS);
  }

  /** End-to-end latency of one applied record: its effects are durable now (negative clock skew counts as 0). */
  public void durable(long recordTimestampMillis, long nowMillis) {
    effectLatency.record(Math.max(0, nowMillis - recordTimestampMillis), TimeUnit.MILLISECONDS);
  }

  public void fenced() {
    fenced.increment();
  }

  /**
   * A partition halted ({@code PartitionHaltedException}); {@code cause} is one of
   * {@code event-handler}, {@code journal-rejected}, {@code journal-gap}, {@code offset-above-log-end}.
   */
  public static void halted(String group, String topic, int partition, String cause) {
    Metrics.globalRegistry.counter("fencepost.partition.halts", "group", group, "topic", topic, "partition",
        Integer.toString(partition), "cause", cause).increment();
  }
}
