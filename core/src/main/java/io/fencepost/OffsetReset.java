package io.fencepost;

import java.time.Duration;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;

import io.fencepost.errors.JournalLayoutException;
import io.fencepost.internal.OffsetResetBehavior;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.AskPattern;

/**
 * Moves a partition's stored next offset, journaled like a batch: the operator's way out of a
 * partition halted because its stored offset lies above the end of its log (the topic was deleted and
 * recreated, or an unclean leader election truncated it). Records below the new offset are dropped
 * as redeliveries from then on, records from it on are consumed.
 *
 * <pre>{@code
 * OffsetReset.Result r = OffsetReset.to(system, new PartitionId("ledger", "payments", 3), 0,
 *     PartitionActorSettings.create(system), Duration.ofSeconds(30)).toCompletableFuture().get();
 * }</pre>
 *
 * <p>Run it with the application's journal configuration and classpath (it reads the partition's
 * journal). Run it while the partition is halted or its pipeline stopped; then let the partition be
 * assigned again (restart the node that holds it). A partition actor that is still writing is
 * fenced by the reset (or fences it) like any other incarnation: nothing is written twice, but a
 * reset under a running consumer re-reads or skips records, as any reset does.
 */
public final class OffsetReset {

  /** What the reset did: the partition's stored next offset before and after (-1: none stored). */
  public record Result(PartitionId partition, long before, long after) {
  }

  private OffsetReset() {
  }

  /**
   * Sets the stored next offset of {@code partition} to {@code nextOffset} in the journal that
   * {@code settings} name. Completes once the write is durable (nothing is written when the offset is
   * there already); fails after {@code timeout} (the partition's recovery and one write), and at once
   * with a {@link JournalLayoutException} when the journal database refuses the write because a
   * journal move took the partition's history to another database (the list of databases in
   * {@code settings} is an old one).
   */
  public static CompletionStage<Result> to(ActorSystem<?> system, PartitionId partition, long nextOffset,
      PartitionActorSettings settings, Duration timeout) {
    Objects.requireNonNull(partition, "partition");
    if (nextOffset < 0) {
      throw new IllegalArgumentException("the new next offset must be >= 0, was [" + nextOffset + "]");
    }
    CompletableFuture<Void> recovery = new CompletableFuture<>();
    ActorRef<OffsetResetBehavior.Command> writer = system.systemActorOf(new OffsetResetBehavior(partition,
        settings.journalPluginId(partition), settings.snapshotPluginId(partition), recovery),
        "fencepost-offset-reset-" + UUID.randomUUID(), Props.empty());
    CompletableFuture<Long> recovered = recovery.thenApply(never -> 0L);
    return AskPattern.<OffsetResetBehavior.Command, Long>askWithStatus(writer,
        replyTo -> new OffsetResetBehavior.Command(nextOffset, replyTo), timeout, system.scheduler())
        .applyToEither(recovered, before -> before)
        .handle((before, error) -> {
          Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
          if (cause instanceof JournalLayoutException || recovery.isCompletedExceptionally()) {
            throw new CompletionException(cause);
          }
          if (error != null) {
            throw new CompletionException(new IllegalStateException("the reset of "
                + partition.shortName() + " to " + nextOffset + " did not complete within " + timeout + ": the "
                + "journal is unreachable, or a partition actor wrote meanwhile (its write wins; is the pipeline still "
                + "consuming the partition?). Nothing or the whole reset was written: look at the stored offset and "
                + "run it again (" + error + ")", error));
          }
          return new Result(partition, before, nextOffset);
        });
  }
}
