package io.fencepost.kafka;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import io.fencepost.PartitionId;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.pekko.actor.Cancellable;
import org.apache.pekko.actor.typed.ActorSystem;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every quarter of {@code stall-timeout}: reads the log ends of this node's partitions (the lag
 * gauges use them), restarts a partition that is stuck, and probes the persistence plugins.
 */
final class StallWatchdog {

  private static final Logger log = LoggerFactory.getLogger(StallWatchdog.class);

  private final ActorSystem<?> system;
  private final PipelineSettings settings;
  private final Admin admin;
  private final Map<String, Object> consumerProperties;
  private final PartitionOwnership ownership;
  private final JournalLiveness journal;
  private final BooleanSupplier stopping;
  private final StallRestarts stallRestarts;
  private final Ticker ticker;
  /** How long a batch in flight may go without a reply, retry or failure before it is taken as hung. */
  private final Duration silentAfter;
  /** Log-end reads that failed in a row (logged at the first and every 20th). */
  private final AtomicInteger endsUnknown = new AtomicInteger();
  private volatile Cancellable timer;

  StallWatchdog(ActorSystem<?> system, PipelineSettings settings, Admin admin, Map<String, Object> consumerProperties,
      PartitionOwnership ownership, JournalLiveness journal, BooleanSupplier stopping, Duration silentAfter,
      Ticker ticker) {
    this.silentAfter = silentAfter;
    this.system = system;
    this.ticker = ticker;
    this.settings = settings;
    this.admin = admin;
    this.consumerProperties = consumerProperties;
    this.ownership = ownership;
    this.journal = journal;
    this.stopping = stopping;
    this.stallRestarts = new StallRestarts(settings.stallTimeout());
  }

  /**
   * A partition that flows, has records to read, no batch in flight and no progress for
   * {@code stall-timeout} is stuck: it seeks to its actor's stored offset again. Never silently
   * stalled (and never seen since the ownership state machine: logged as a WARN to look into). Each
   * round also checks that the persistence plugins run ({@link JournalLiveness}).
   */
  void start() {
    Duration every = Duration.ofSeconds(Math.max(1, settings.stallTimeout().toSeconds() / 4));
    timer = system.scheduler().scheduleWithFixedDelay(every, every, () -> {
      try {
        if (!stopping.getAsBoolean()) {
          journal.probe();
        }
        checkStalls();
      } catch (RuntimeException e) {
        log.debug("[{}] stall check failed: {}", settings.name(), e.toString());
      }
    }, system.executionContext());
  }

  private void checkStalls() {
    if (stopping.getAsBoolean()) {
      return;
    }
    checkSilentBatches();
    Map<TopicPartition, OffsetSpec> all = new HashMap<>();
    Map<TopicPartition, PartitionProgress> progressOf = new HashMap<>();
    ownership.assigned().forEach((id, progress) -> {
      TopicPartition tp = new TopicPartition(id.topic(), id.partition());
      all.put(tp, OffsetSpec.latest());
      progressOf.put(tp, progress);
    });
    if (all.isEmpty()) {
      return;
    }
    // The log end as the consumer sees it: with read_committed, the last stable offset.
    IsolationLevel isolation = "read_uncommitted".equalsIgnoreCase(String.valueOf(
        consumerProperties.get(ConsumerConfig.ISOLATION_LEVEL_CONFIG)).trim()) ? IsolationLevel.READ_UNCOMMITTED
        : IsolationLevel.READ_COMMITTED;
    admin.listOffsets(all, new ListOffsetsOptions(isolation)).all().toCompletionStage()
        .whenComplete((ends, e) -> {
          if (e == null) {
            endsUnknown.set(0);
          } else if (endsUnknown.getAndIncrement() % 20 == 0) {
            log.warn("[{}] cannot read the log ends of its partitions (lag unknown, stalls not checked): {}",
                settings.name(), e.toString());
          }
        })
        .thenAccept(ends -> ends.forEach((tp, info) -> {
      PartitionProgress progress = progressOf.get(tp);
      progress.logEnd = info.offset();   // the lag gauge reads it
      long now = ticker.nanoTime();
      if (progress.flowing && !progress.inFlight && progress.halted == null
          && now - progress.lastProgressNanos > settings.stallTimeout().toNanos()
          && info.offset() > Math.max(0, progress.knownNextOffset)
          && stallRestarts.due(tp, info.offset(), progress.knownNextOffset, now)) {
        // (A transaction's commit marker also lies past the last record: restarts at the same end and
        // position back off rather than repeat every stall-timeout.)
        int times = stallRestarts.times(tp);
        ownership.restart(partitionId(tp), progress, "stall", "no progress for " + settings.stallTimeout().toSeconds()
            + " s (end " + info.offset() + ", at " + progress.knownNextOffset + ")" + (times > 1 ? "; restart " + times
            + " at this place (a transaction marker past the last record also looks like this)" : ""));
      }
    }));
  }

  /**
   * A batch in flight that has had no reply, retry or failure for {@code silentAfter} hangs: every
   * wait of a delivery is bounded (ask-timeout, the backoffs, the dead-letter producer's acknowledgement
   * timeout) and shorter, and every retry is stamped, so this is a bug, and no retry loop will end it.
   * The partition is started afresh from its actor's stored offset (its new stream starts once the
   * hung one is given up on, and the journal refuses any batch that would skip or repeat an offset).
   */
  private void checkSilentBatches() {
    long now = ticker.nanoTime();
    ownership.assigned().forEach((id, progress) -> {
      long silent = progress.silentInFlightNanos(now);
      if (progress.flowing && progress.halted == null && silent > silentAfter.toNanos()) {
        log.error("[{}] its batch in flight has had no reply, retry or failure for {} s (a delivery that hangs: "
            + "please report it with this log); last error: [{}]", id.shortName(), silent / 1_000_000_000,
            progress.lastError);
        ownership.restart(id, progress, "hung-delivery",
            "a batch in flight silent for " + silent / 1_000_000_000 + " s");
      }
    });
  }

  private PartitionId partitionId(TopicPartition tp) {
    return new PartitionId(settings.groupId(), tp.topic(), tp.partition());
  }

  void cancel() {
    Cancellable t = timer;
    if (t != null) {
      t.cancel();
    }
  }
}
