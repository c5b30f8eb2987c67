package io.fencepost.kafka;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeoutException;

import io.fencepost.BatchOutcome;
import io.fencepost.DeadLetter;
import io.fencepost.PartitionCommand;
import io.fencepost.PartitionId;
import io.fencepost.errors.HandlerFailedException;
import io.fencepost.errors.OffsetGapException;
import io.fencepost.errors.PartitionHaltedException;
import io.fencepost.errors.RecordsParkedException;
import io.fencepost.kafka.internal.LogProbe;
import io.fencepost.kafka.internal.PipelineMetrics;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Delivers one partition's batches to its actor until each is applied, and decides what every
 * rejection means: handler failures are retried or dead-lettered, parked keys dead-lettered, offset
 * gaps checked against the log, journal failures, fences and timeouts resent with backoff. A batch
 * is never skipped; it is abandoned only when its partition's assignment ends.
 */
final class BatchDelivery<V> implements OwnershipSeams.Batches {

  private static final Logger log = LoggerFactory.getLogger(BatchDelivery.class);

  /** What delivery asks of the partition's ownership. */
  interface StreamControl {
    /**
     * Re-seek a partition whose stream lacks records (see {@link #onGap}) or whose actor answers
     * nothing; {@code cause} tags {@code fencepost.partition.restarts}.
     */
    void restart(PartitionId id, PartitionProgress assignment, String cause, String why);

    /**
     * Stop consuming a partition that cannot go on without an operator (see PartitionHaltedException):
     * at once for the assignment's later batches, paused by the consumer thread.
     */
    void halt(PartitionId id, PartitionProgress assignment, String why, String cause);
  }

  private final ActorSystem<?> system;
  private final PipelineSettings settings;
  private final PartitionHost host;
  private final RecordDecoder<V> decoder;
  private final DeadLetterPublisher deadLetters;
  private final RelayRegistry relays;
  private final LogProbe logProbe;
  private final Executor blocking;
  private final PipelineMetrics metrics;
  private final Backoff resend;
  private final Backoff handlerRetry;
  private final StreamControl control;
  private final NodeTotals totals;
  private final Ticker ticker;
  /** Sends of one batch left unanswered within ask-timeout before the partition is started afresh. */
  private static final int UNANSWERED_BEFORE_RESTART = 3;

  BatchDelivery(ActorSystem<?> system, PipelineSettings settings, PartitionHost host,
      RecordDecoder<V> decoder, DeadLetterPublisher deadLetters, RelayRegistry relays, LogProbe logProbe,
      Executor blocking, StreamControl control, NodeTotals totals, Ticker ticker) {
    this.system = system;
    this.ticker = ticker;
    this.totals = totals;
    this.settings = settings;
    this.host = host;
    this.decoder = decoder;
    this.deadLetters = deadLetters;
    this.relays = relays;
    this.logProbe = logProbe;
    this.blocking = blocking;
    this.control = control;
    this.metrics = new PipelineMetrics(system);
    this.resend = new Backoff(settings.retryBackoff().min(), settings.retryBackoff().max(), 2.0);
    this.handlerRetry = new Backoff(settings.handlerRetry().initial(), settings.handlerRetry().max(),
        settings.handlerRetry().multiplier());
  }

  /**
   * Applies one batch of a partition's records (ascending offsets, read by this assignment's
   * stream); completes with the offset to commit, or empty when the assignment ended first.
   */
  @Override
  public CompletionStage<OptionalLong> deliver(PartitionId id, PartitionProgress progress,
      List<ConsumerRecord<byte[], byte[]>> batch) {
    if (progress.revoked || progress.halted != null) {
      // Buffered when the assignment ended (or halted): the next owner reads them from the stored offset.
      return CompletableFuture.completedFuture(OptionalLong.empty());
    }
    BatchWork work = new BatchWork(id, progress, batch, r -> decoder.toInbound(id, r, settings.deadLetter().maxRecordBytes()),
        settings.handlerRetry().maxAttempts());
    if (work.first <= progress.highestDelivered) {
      // Within one assignment the stream only moves forward: the consumer's position was reset.
      control.halt(id, progress, "its log went back under a running consumer (offset " + work.first + " after "
          + progress.highestDelivered + "): the topic was deleted and recreated, or an unclean leader election "
          + "truncated the log. Records at offsets below the stored next offset would be dropped as redeliveries, so "
          + "nothing more is consumed from it; see docs/operations.md, \"A stored offset above the log end\"",
          "offset-above-log-end");
      return CompletableFuture.completedFuture(OptionalLong.empty());
    }
    progress.highestDelivered = work.last;
    progress.inFlightActivityNanos = ticker.nanoTime();
    progress.inFlight = true;
    return deadLetters.publish(id, progress, work.raw, work.deadLetters)
        .thenCompose(v -> applyUntilDone(work, 0))
        .whenComplete((o, e) -> {
          progress.inFlight = false;
          progress.lastProgressNanos = ticker.nanoTime();
          if (o != null && o.isPresent()) {
            progress.knownNextOffset = o.getAsLong();
          }
        });
  }

  /** A batch goes to its actor again: counted on the partition's status and meter. */
  private void retried(BatchWork work, String reason, String message) {
    work.progress.retries.incrementAndGet();
    work.progress.lastError = message;
    work.progress.inFlightActivityNanos = ticker.nanoTime();
    metrics.retried(work.id, reason);
  }

  /**
   * Sends the batch to its actor until it is applied; never skips it. Handler failures are retried
   * (retriable ones, up to handler-retry.max-attempts) or dead-lettered; journal failures, fences and
   * timeouts are resent with backoff. Stops trying (without committing) once the assignment ended:
   * the next owner reads the actor's stored offset.
   */
  private CompletionStage<OptionalLong> applyUntilDone(BatchWork work, int attempt) {
    if (work.progress.revoked || work.progress.halted != null) {
      return CompletableFuture.completedFuture(OptionalLong.empty());
    }
    CompletionStage<BatchOutcome> reply = host.actor(work.id).thenCompose(actor -> AskPattern.ask(actor,
        (ActorRef<BatchOutcome> replyTo) -> new PartitionCommand.ApplyBatch(work.records, work.deadLetters,
            work.coveredFrom, replyTo),
        settings.askTimeout(), system.scheduler()));
    return reply.handle((outcome, error) -> {
      work.progress.inFlightActivityNanos = ticker.nanoTime();   // an answer, or a timeout: not silent
      if (outcome != null) {
        work.unanswered = 0;
      }
      if (outcome instanceof BatchOutcome.Applied applied) {
        totals.record(applied);
        relays.afterApplied(work.id, applied);
        return CompletableFuture.completedFuture(OptionalLong.of(work.last + 1));
      }
      if (outcome instanceof BatchOutcome.Rejected rejected && rejected.error() instanceof HandlerFailedException h) {
        return onHandlerFailure(work, h, attempt);
      }
      if (outcome instanceof BatchOutcome.Rejected rejected && rejected.error() instanceof RecordsParkedException p) {
        return onParked(work, p, attempt);
      }
      if (outcome instanceof BatchOutcome.Rejected rejected && rejected.error() instanceof OffsetGapException gap) {
        return onGap(work, gap, attempt);
      }
      if (outcome instanceof BatchOutcome.Rejected rejected
          && rejected.error() instanceof PartitionHaltedException halted) {
        // Not resent: the actor already logged the ERROR; nothing is committed or skipped.
        work.progress.lastError = halted.getMessage();
        control.halt(work.id, work.progress, halted.reason(), null);
        return CompletableFuture.completedFuture(OptionalLong.empty());
      }
      String reason;
      boolean noReply = false;
      if (outcome instanceof BatchOutcome.Rejected rejected) {
        reason = rejected.error().getMessage();
      } else {
        noReply = error instanceof TimeoutException || (error != null && error.getCause() instanceof TimeoutException);
        reason = noReply ? "no reply within ask-timeout " + settings.askTimeout() : String.valueOf(error);
      }
      retried(work, noReply ? "no-reply" : "rejected", reason);
      if (noReply && ++work.unanswered >= UNANSWERED_BEFORE_RESTART) {
        // An actor that answers nothing is not helped by resending, and the watchdog does not look at
        // a batch in flight: the partition is seeked again, and a keeper that died is replaced.
        control.restart(work.id, work.progress, "no-reply", "its actor answered none of " + work.unanswered
            + " sends in a row of the batch at offsets [" + work.first + ".." + work.last + "] within ask-timeout");
        return CompletableFuture.completedFuture(OptionalLong.empty());
      }
      Duration backoff = resend.delay(attempt);
      log.warn("[{}] batch at offsets [{}..{}] not applied (attempt {}): {}; resending in {} ms", work.id.shortName(),
          work.first, work.last, attempt + 1, reason, backoff.toMillis());
      return Backoff.after(system, backoff, () -> applyUntilDone(work, attempt + 1));
    }).thenCompose(f -> f);
  }

  private CompletionStage<OptionalLong> onHandlerFailure(BatchWork work, HandlerFailedException h, int attempt) {
    retried(work, "handler", h.getMessage());
    ConsumerRecord<byte[], byte[]> r = work.raw.get(h.offset());
    if (r == null) {
      // Cannot happen: the actor only fails on records of this batch. Resend rather than guess.
      log.error("[{}] handler failure for offset [{}] outside the batch [{}..{}]; resending", work.id.shortName(),
          h.offset(), work.first, work.last);
      return Backoff.after(system, resend.delay(attempt), () -> applyUntilDone(work, attempt + 1));
    }
    Optional<DeadLetter> letter = work.failures.failed(h, BatchWork.key(r), BatchWork.replayOf(work.id, r));
    int tries = work.failures.attempts(h.offset());
    if (letter.isEmpty()) {
      Duration wait = handlerRetry.delay(tries - 1);
      log.warn("[{}] offset [{}]: handler failed (attempt {} of {}), retrying in {} ms: {}: {}", work.id.shortName(),
          h.offset(), tries, settings.handlerRetry().maxAttempts(), wait.toMillis(), h.causeClass(), h.causeMessage());
      return Backoff.after(system, wait, () -> applyUntilDone(work, attempt));
    }
    log.warn("[{}] offset [{}]: handler failed {} after {} attempt(s); dead-lettering it: {}: {}", work.id.shortName(),
        h.offset(), h.isRetriable() ? "retriably" : "fatally", tries, h.causeClass(), h.causeMessage());
    work.records.removeIf(in -> in.offset() == h.offset());
    work.deadLetters.add(letter.get());
    return deadLetters.publish(work.id, work.progress, work.raw, List.of(letter.get()))
        .thenCompose(v -> applyUntilDone(work, attempt));
  }

  /**
   * The batch lacks offsets between the partition's stored offset and its last record. The log
   * decides: when it holds no readable record there (transaction markers, aborted or compacted
   * records, or records deleted by retention: those are lost and said so), the batch is resent
   * covering from the stored offset. When it does, this stream missed records (which the consumer
   * never does within one assignment): resent with backoff a few times, then the partition seeks to
   * its stored offset again.
   */
  private CompletionStage<OptionalLong> onGap(BatchWork work, OffsetGapException gap, int attempt) {
    TopicPartition tp = new TopicPartition(work.id.topic(), work.id.partition());
    boolean fresh = gap.storedNextOffset() < 0;
    // A partition that never stored an offset starts at the log start (earliest) or where it was first
    // seeked to (latest): the log must show the batch holds every readable record from there on.
    long from = fresh && work.progress.freshStart >= 0 ? work.progress.freshStart
        : Math.max(0, gap.storedNextOffset());
    return CompletableFuture.supplyAsync(() -> logProbe.read(tp, from, work.last + 1, settings.askTimeout()), blocking)
        .handle((range, error) -> {
          TreeSet<Long> missing = new TreeSet<>(range == null ? Set.of() : range.readable());
          missing.removeAll(work.raw.keySet());
          if (range != null && range.complete() && missing.isEmpty()) {
            if (range.deletedPart() && fresh) {
              log.info("[{}] first records of the partition: it starts at the log start {} (auto-offset-reset "
                  + "{})", work.id.shortName(), range.logStart(), settings.autoOffsetReset().configValue());
            } else if (range.deletedPart()) {
              log.error("[{}] records at offsets [{}..{}] were deleted by retention before they were applied: they are "
                  + "lost (raise the topic's retention.ms or alert on consumer lag)", work.id.shortName(), from,
                  range.logStart() - 1);
            } else {
              log.debug("[{}] offsets [{}..{}] hold no readable record between the batch's records; resending it",
                  work.id.shortName(), from, work.last);
            }
            work.coveredFrom = from;
            return applyUntilDone(work, attempt);
          }
          String what = range == null ? "the log could not be read (" + error + ")"
              : !range.complete() ? "the log could not be read up to offset " + work.last + " in time"
              : missing.size() + " readable record(s) from offset " + missing.first() + " are not in this stream";
          retried(work, "gap", gap.getMessage());
          if (++work.gapChecks >= 4) {
            control.restart(work.id, work.progress, "gap", "the stream lacks offsets after the stored offset " + from
                + " (" + what + ")");
            return CompletableFuture.completedFuture(OptionalLong.empty());
          }
          Duration backoff = resend.delay(attempt);
          log.warn("[{}] batch at offsets [{}..{}] would skip records after stored offset {}: {}; resending in {} ms",
              work.id.shortName(), work.first, work.last, from, what, backoff.toMillis());
          return Backoff.after(system, backoff, () -> applyUntilDone(work, attempt + 1));
        }).thenCompose(f -> f);
  }

  /** Per-key ordering: dead-letters records whose key is parked (marked parked), then resends the rest. */
  private CompletionStage<OptionalLong> onParked(BatchWork work, RecordsParkedException parked, int attempt) {
    List<DeadLetter> letters = work.failures.parked(parked, work.deadLetters, work.raw::containsKey,
        offset -> BatchWork.key(work.raw.get(offset)), offset -> BatchWork.replayOf(work.id, work.raw.get(offset)));
    log.info("[{}] parking {} record(s) behind failed records of their keys: offsets {}", work.id.shortName(),
        letters.size(), parked.offsets());
    work.records.removeIf(in -> parked.offsets().contains(in.offset()));
    work.deadLetters.addAll(letters);
    return deadLetters.publish(work.id, work.progress, work.raw, letters).thenCompose(v -> applyUntilDone(work, attempt));
  }
}
