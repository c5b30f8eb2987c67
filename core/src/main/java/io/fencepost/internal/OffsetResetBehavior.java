package io.fencepost.internal;

import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;

import io.fencepost.PartitionId;
import io.fencepost.errors.JournalLayoutException;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.pattern.StatusReply;
import org.apache.pekko.persistence.typed.JournalPersistFailed;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.RecoveryFailed;
import org.apache.pekko.persistence.typed.SnapshotAdapter;
import org.apache.pekko.persistence.typed.javadsl.CommandHandler;
import org.apache.pekko.persistence.typed.javadsl.Effect;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehavior;
import org.apache.pekko.persistence.typed.javadsl.SignalHandler;

/**
 * A short-lived writer of one partition's journal that moves its stored next offset (see
 * {@code io.fencepost.OffsetReset}). It recovers only what the move needs, the stored next offset and
 * the partition clock, so it runs without the application's actor; the user's events and state are
 * still read, so their classes must be on the classpath. Its write takes the next sequence number
 * like any incarnation's: a partition actor that wrote meanwhile makes it fail, and an actor that
 * writes after it is fenced by it and recovers the new offset.
 */
public final class OffsetResetBehavior
    extends EventSourcedBehavior<OffsetResetBehavior.Command, BatchEvent, OffsetResetBehavior.Stored> {

  /** Moves the stored next offset to {@code nextOffset} and replies with the offset before it. */
  public record Command(long nextOffset, ActorRef<StatusReply<Long>> replyTo) {
  }

  /** What the move needs of the partition's state. */
  record Stored(long nextOffset, long clockMillis) {
    Stored apply(BatchEvent e) {
      return new Stored(PartitionState.nextOffsetAfter(nextOffset, e), e.atMillis());
    }
  }

  private final PartitionId partition;
  private final String journalPluginId;
  private final String snapshotPluginId;
  /** Who waits for the write in flight: told at once when the journal refuses it (the actor then stops). */
  private ActorRef<StatusReply<Long>> waiting;
  /** Failed at once when the recovery fails (the actor then stops before it reads the command). */
  private final CompletableFuture<Void> recovery;

  public OffsetResetBehavior(PartitionId partition, String journalPluginId, String snapshotPluginId,
      CompletableFuture<Void> recovery) {
    super(PersistenceId.ofUniqueId(partition.persistenceId()));
    this.partition = partition;
    this.recovery = recovery;
    this.journalPluginId = journalPluginId;
    this.snapshotPluginId = snapshotPluginId;
  }

  @Override
  public String journalPluginId() {
    return journalPluginId;
  }

  @Override
  public String snapshotPluginId() {
    return snapshotPluginId;
  }

  @Override
  public Stored emptyState() {
    return new Stored(PartitionState.NO_OFFSET, 0);
  }

  @Override
  public SnapshotAdapter<Stored> snapshotAdapter() {
    return new SnapshotAdapter<>() {
      @Override
      public Object toJournal(Stored state) {
        throw new UnsupportedOperationException("an offset reset stores no snapshot");
      }

      @Override
      public Stored fromJournal(Object from) {
        PartitionState<?> s = (PartitionState<?>) from;
        return new Stored(s.nextOffset(), s.lastWriteMillis());
      }
    };
  }

  @Override
  public EventHandler<Stored, BatchEvent> eventHandler() {
    return newEventHandlerBuilder().forAnyState().onAnyEvent(Stored::apply);
  }

  @Override
  public CommandHandler<Command, BatchEvent, Stored> commandHandler() {
    return newCommandHandlerBuilder().forAnyState().onCommand(Command.class, (state, cmd) -> {
      if (cmd.nextOffset() == state.nextOffset()) {
        return Effect().none().thenRun(s -> cmd.replyTo().tell(StatusReply.success(state.nextOffset()))).thenStop();
      }
      // No records, no keys: only the offset moves (below fromOffset: backwards). The partition clock
      // does not move either.
      BatchEvent reset = new BatchEvent("offset-reset-" + UUID.randomUUID(), state.nextOffset(), cmd.nextOffset(),
          state.clockMillis(), List.of(), new long[0], 0, 0);
      waiting = cmd.replyTo();
      return Effect().persist(reset).thenRun(s -> cmd.replyTo().tell(StatusReply.success(state.nextOffset())))
          .thenStop();
    }).build();
  }

  @Override
  public SignalHandler<Stored> signalHandler() {
    return newSignalHandlerBuilder().onSignal(RecoveryFailed.class, (state, failed) -> recovery.completeExceptionally(
        new IllegalStateException("the recovery of " + partition.shortName() + " for its reset failed, nothing was "
            + "written: " + failed.getFailure(), failed.getFailure())))
        .onSignal(JournalPersistFailed.class, (state, failed) -> {
      if (waiting == null) {
        return;
      }
      Throwable failure = failed.getFailure();
      String moved = JournalFenceRefusal.in(failure, partition.persistenceId()).orElse(null);
      waiting.tell(StatusReply.error(moved != null
          ? new JournalLayoutException("the reset of " + partition.shortName() + " was refused by the journal "
              + "database, nothing was written: " + moved)
          : new IllegalStateException("the journal write of the reset of " + partition.shortName() + " failed "
              + "(it may still commit: look at the stored offset and run it again): " + failure, failure)));
      waiting = null;
    }).build();
  }
}
