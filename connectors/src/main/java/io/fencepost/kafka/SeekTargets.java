package io.fencepost.kafka;

import java.time.Duration;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;

import io.fencepost.PartitionCommand;
import io.fencepost.PartitionId;
import io.fencepost.PartitionStatus;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds where a partition's stream must start: asks the partition's actor on this node (it recovers
 * from the journal first) for its stored next offset and turns that into a seek target.
 */
final class SeekTargets implements OwnershipSeams.StartOffsets {

  private static final Logger log = LoggerFactory.getLogger(SeekTargets.class);
  private static final Duration PROBE = Duration.ofSeconds(5);

  private final ActorSystem<?> system;
  private final PipelineSettings settings;
  private final PartitionHost host;
  private final Admin admin;
  private final Backoff retry;
  // auto-offset-reset latest: where each partition that never stored an offset was first seeked to on
  // this node, kept until it stores one, so that seeking it again (a stream that missed records)
  // does not jump to the new log end over records nobody applied.
  private final Map<TopicPartition, Long> freshStarts = new ConcurrentHashMap<>();

  SeekTargets(ActorSystem<?> system, PipelineSettings settings, PartitionHost host, Admin admin) {
    this.system = system;
    this.settings = settings;
    this.host = host;
    this.admin = admin;
    this.retry = new Backoff(settings.retryBackoff().min(), settings.retryBackoff().max(), 2.0);
  }

  /**
   * Where the partition's stream starts: its actor's stored offset, or the auto-offset-reset position
   * for a partition that never stored one. Reads the log start into {@code progress}. Asks again
   * (with backoff) while the actor cannot answer, e.g. while the journal is down; fails with
   * {@link CancellationException} as soon as {@code wanted} turns false.
   */
  @Override
  public CompletionStage<Long> seekTarget(PartitionId id, PartitionProgress progress, BooleanSupplier wanted) {
    return storedOffset(id, wanted, 0).thenCompose(stored -> target(id, progress, stored));
  }

  private CompletionStage<OptionalLong> storedOffset(PartitionId id, BooleanSupplier wanted, int failures) {
    if (!wanted.getAsBoolean()) {
      return CompletableFuture.failedFuture(new CancellationException("revoked"));
    }
    // Short probes: an answer lost with a stopping incarnation's mailbox is asked for again soon.
    Duration probe = settings.askTimeout().compareTo(PROBE) < 0 ? settings.askTimeout() : PROBE;
    return askStatus(id, probe).handle((status, error) -> {
      if (error == null) {
        return CompletableFuture.completedFuture(status.nextOffset());
      }
      Duration wait = retry.delay(failures);
      log.warn("[{}] actor of [{}] could not tell its stored offset: {}; the partition stays paused, asking again in "
          + "{} ms", settings.name(), id.shortName(), error.toString(), wait.toMillis());
      return Backoff.after(system, wait, () -> storedOffset(id, wanted, failures + 1));
    }).thenCompose(f -> f);
  }

  /**
   * The stored offset, or the auto-offset-reset position for a partition that never stored one. A
   * stored offset below the log start (retention deleted records nobody applied) seeks to the log
   * start, so that {@code auto-offset-reset = latest} cannot skip the records that are still there.
   */
  private CompletionStage<Long> target(PartitionId id, PartitionProgress progress, OptionalLong stored) {
    TopicPartition tp = new TopicPartition(id.topic(), id.partition());
    if (stored.isEmpty() && settings.autoOffsetReset() == AutoOffsetReset.LATEST) {
      Long first = freshStarts.get(tp);
      CompletionStage<Long> end = first != null ? CompletableFuture.completedFuture(first)
          : listOffset(tp, OffsetSpec.latest()).thenApply(e -> freshStarts.computeIfAbsent(tp, k -> e));
      return end.thenApply(at -> {
        progress.freshStart = at;
        return at;
      });
    }
    if (stored.isPresent()) {
      freshStarts.remove(tp);
    }
    CompletionStage<Long> end = stored.isEmpty() ? CompletableFuture.completedFuture(-1L)
        : listOffset(tp, OffsetSpec.latest());
    return listOffset(tp, OffsetSpec.earliest()).thenCombine(end, (start, e) -> new long[] {start, e})
        .handle((bounds, error) -> {
      if (error != null) {
        // Without the log start the stored offset still is the safe target (and 0 resets to it).
        log.warn("[{}] could not read the log start offset of {}: {}", settings.name(), tp, error.toString());
        return stored.orElse(0);
      }
      long start = bounds[0];
      progress.logStart = start;
      if (stored.isEmpty()) {
        return start;
      }
      long next = stored.getAsLong();
      if (next > bounds[1]) {
        throw new AboveLogEnd(id, next, bounds[1]);
      }
      if (start > next) {
        log.error("[{}] {}: stored next offset {} is below the log start {}: records [{}..{}] were deleted by "
            + "retention before they were applied; seeking to the log start", settings.name(), tp, next, start,
            next, start - 1);
        return start;
      }
      return next;
    });
  }

  /** The stored next offset lies above the end of the partition's log: seeking there would lose records. */
  static final class AboveLogEnd extends RuntimeException {
    AboveLogEnd(PartitionId id, long stored, long end) {
      super("its stored next offset " + stored + " is above the end " + end + " of its log: the topic was deleted and "
          + "recreated, or an unclean leader election truncated the log. Records at offsets below " + stored
          + " would be dropped as redeliveries, so nothing is consumed from it; see docs/operations.md, \"A stored "
          + "offset above the log end\"");
    }
  }

  private CompletionStage<Long> listOffset(TopicPartition tp, OffsetSpec spec) {
    return admin.listOffsets(Map.of(tp, spec)).partitionResult(tp).toCompletionStage().thenApply(info -> info.offset());
  }

  /** The status of the partition's actor on this node (fails for a partition not assigned here). */
  CompletionStage<PartitionStatus> askStatus(PartitionId id, Duration timeout) {
    return host.actor(id).thenCompose(actor -> AskPattern.ask(actor,
        (ActorRef<PartitionStatus> replyTo) -> new PartitionCommand.GetStatus(replyTo), timeout, system.scheduler()));
  }
}
