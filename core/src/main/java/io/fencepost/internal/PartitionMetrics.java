package io.fencepost.internal;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.fencepost.FencepostMeters;
import io.fencepost.PartitionId;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * Micrometer meters of one partition actor, in the actor system's {@link FencepostMeters} registry.
 * Tags: group, topic, partition. Names and meanings are listed in docs/operations.md, "Meters".
 */
public final class PartitionMetrics {

  /** The shared cell holding the partition's last journal sequence number (read by its outbox relay). */
  public static final String JOURNAL_HEAD = "fencepost.journal.head";

  /** The causes of {@code fencepost.partition.halts}; each counter exists from the start, at 0. */
  public static final List<String> HALT_CAUSES =
      List.of("event-handler", "journal-rejected", "journal-moved", "journal-gap", "journal-undecodable", "offset-above-log-end",
          "window-unreadable");

  private final MeterRegistry registry;
  private final Tags tags;
  private final Counter applied;
  private final Counter droppedRedelivery;
  private final Counter droppedByKey;
  private final Counter deadLettered;
  private final Counter fenced;
  private final Counter snapshotFailures;
  private final DistributionSummary batchSize;
  private final Timer persistLatency;
  private final Timer effectLatency;
  private final AtomicLong parkedKeys;
  private final AtomicLong windowKeys;
  private final AtomicLong journalHead;

  public PartitionMetrics(ActorSystem<?> system, PartitionId id) {
    SharedGauges shared = SharedGauges.get(system);
    registry = shared.registry();
    tags = SharedGauges.tags(id);
    applied = registry.counter("fencepost.records.applied", tags);
    droppedRedelivery = registry.counter("fencepost.records.dropped", tags.and("reason", "redelivery"));
    droppedByKey = registry.counter("fencepost.records.dropped", tags.and("reason", "business-key"));
    deadLettered = Counter.builder("fencepost.records.dead-lettered")
        .description("records written to the journal as dead letters (parked ones included)").tags(tags)
        .register(registry);
    fenced = registry.counter("fencepost.writes.fenced", tags);
    snapshotFailures = Counter.builder("fencepost.snapshot.failures")
        .description("snapshots not stored (recovery replays more, compaction waits)").tags(tags).register(registry);
    batchSize = DistributionSummary.builder("fencepost.batch.records").tags(tags).register(registry);
    persistLatency = Timer.builder("fencepost.persist.latency").tags(tags).register(registry);
    effectLatency = Timer.builder("fencepost.effect.latency")
        .description("record timestamp (producer or broker time) to its effects being durable in the journal")
        .tags(tags).register(registry);
    parkedKeys = shared.gauge("fencepost.keys.parked",
        "business keys parked behind a dead-lettered record until it is replayed", id);
    windowKeys = shared.gauge("fencepost.keys.window", "business keys in the partition's duplicate window", id);
    journalHead = shared.cell(JOURNAL_HEAD, id);
    // At 0 from the start: Prometheus sees a partition's first halt as an increase.
    HALT_CAUSES.forEach(cause -> registry.counter("fencepost.partition.halts", tags.and("cause", cause)));
  }

  public void dropped(int redelivery, int byKey) {
    if (redelivery > 0) {
      droppedRedelivery.increment(redelivery);
    }
    if (byKey > 0) {
      droppedByKey.increment(byKey);
    }
  }

  public void written(int appliedRecords, int deadLetteredRecords, long nanos) {
    applied.increment(appliedRecords);
    if (deadLetteredRecords > 0) {
      deadLettered.increment(deadLetteredRecords);
    }
    batchSize.record(appliedRecords);
    persistLatency.record(nanos, TimeUnit.NANOSECONDS);
  }

  /** The partition's state after recovery or a write. */
  public void state(int parked, int window, long sequenceNr) {
    parkedKeys.set(parked);
    windowKeys.set(window);
    journalHead.set(sequenceNr);
  }

  /** End-to-end latency of one applied record: its effects are durable now (negative clock skew counts as 0). */
  public void durable(long recordTimestampMillis, long nowMillis) {
    effectLatency.record(Math.max(0, nowMillis - recordTimestampMillis), TimeUnit.MILLISECONDS);
  }

  public void fenced() {
    fenced.increment();
  }

  /** A snapshot was not stored. */
  public void snapshotFailed() {
    snapshotFailures.increment();
  }

  /**
   * A partition halted ({@code PartitionHaltedException}); {@code cause} is one of
   * {@code event-handler}, {@code journal-rejected}, {@code journal-gap}, {@code journal-undecodable},
   * {@code offset-above-log-end}, {@code window-unreadable}.
   */
  public void halted(String cause) {
    halted(registry, tags, cause);
  }

  /** The halt counter of a partition, shared by the actor and the pipeline that detects halts too. */
  public static void halted(MeterRegistry registry, Tags partitionTags, String cause) {
    registry.counter("fencepost.partition.halts", partitionTags.and("cause", cause)).increment();
  }
}
