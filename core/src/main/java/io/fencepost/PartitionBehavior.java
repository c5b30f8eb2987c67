package io.fencepost;

import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.UUID;

import io.fencepost.errors.FatalException;
import io.fencepost.errors.FencepostException;
import io.fencepost.errors.HandlerFailedException;
import io.fencepost.errors.OffsetGapException;
import io.fencepost.errors.PartitionHaltedException;
import io.fencepost.errors.PartitionFencedException;
import io.fencepost.errors.RecordsParkedException;
import io.fencepost.errors.RetriableException;
import io.fencepost.internal.BatchEvent;
import io.fencepost.internal.CallOutcome;
import io.fencepost.internal.DeadLetterEntry;
import io.fencepost.internal.KeyWindow;
import io.fencepost.internal.PartitionMetrics;
import io.fencepost.internal.PartitionState;
import io.fencepost.internal.SnapshotWriter;
import io.fencepost.internal.UniqueKeyViolation;
import io.fencepost.internal.WindowClock;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.persistence.typed.JournalPersistFailed;
import org.apache.pekko.persistence.typed.JournalPersistRejected;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.RecoveryCompleted;
import org.apache.pekko.persistence.typed.RecoveryFailed;
import org.apache.pekko.persistence.typed.SnapshotAdapter;
import org.apache.pekko.persistence.typed.javadsl.CommandHandler;
import org.apache.pekko.persistence.typed.javadsl.Effect;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehavior;
import org.apache.pekko.persistence.typed.javadsl.ReplyEffect;
import org.apache.pekko.persistence.typed.javadsl.RetentionCriteria;
import org.apache.pekko.persistence.typed.javadsl.SignalHandler;

/**
 * The event-sourced behavior behind every {@link PartitionActor}: one {@link BatchEvent} per batch,
 * holding the user's events, the next offset and the new keys.
 *
 * <p>Fencing: each write takes the next sequence number after the state this incarnation recovered,
 * and the journal's unique (persistence id, sequence number) key lets only one incarnation commit
 * it. A failed write restarts this behavior with backoff (same object, so the in-flight batch is
 * remembered) and recovers; the recovered journal then tells what happened: our own event is there
 * (the write committed after all: success), another incarnation's event is there (fenced: nothing
 * applied, stop), or nothing new (journal failure: reject as retriable).
 */
final class PartitionBehavior<V, S, E> extends EventSourcedBehavior<PartitionCommand, BatchEvent, PartitionState<S>> {

  private final ActorContext<PartitionCommand> ctx;
  private final PartitionContext pc;
  private final PartitionActor<V, S, E> actor;
  private final PartitionActorSettings settings;
  private final PartitionId partition;
  private final String incarnation = UUID.randomUUID().toString();
  private final PartitionMetrics metrics;
  private final BatchSelector<V> selector;
  private final WindowClock clock;
  private final SnapshotWriter snapshots;
  // Set when this partition cannot go on without an operator (see PartitionHaltedException): every
  // batch is refused with it and nothing is written until the actor stops.
  private PartitionHaltedException halted;
  // Recoveries in a row that met a journal entry not following the state before it (see onJournalGap).
  private int recoveryGaps;
  private static final int RECOVERY_GAPS_BEFORE_HALT = 3;

  // The batch whose write is in flight (or failed and awaits the recovery verdict).
  private BatchEvent pendingEvent;
  private S pendingUserState;
  private BatchOutcome.Applied pendingOutcome;
  private org.apache.pekko.actor.typed.ActorRef<BatchOutcome> pendingReplyTo;
  private long pendingBatchesBefore;
  private long pendingStartNanos;
  // The records of the batch in flight, for the end-to-end latency metric once it is durable.
  private List<? extends Inbound<?>> pendingRecords = List.of();
  // at-most-once: the records whose effects run once the offset write is durable
  private List<Inbound<?>> pendingAccepted;
  // For each event of the batch in flight, the offset of the record that produced it (to name the
  // record whose event the journal refuses).
  private long[] pendingEventOffsets = new long[0];
  // at-most-once: batches whose offset is durable but whose effects have not run yet (a Stop waits for them)
  private int acceptedNotRun;
  // at-most-once: effects whose handlers ran, waiting for a write (the next batch's, or their own)
  private final AtMostOnceEffects<V, S, E> unjournaled;
  // at-most-once: a Stop waits for the write of waiting effects; set while it does (a failed write retries)
  private boolean stopAfterWrite;

  private long droppedRedelivery;
  private boolean statementLogged;
  private final long startedNanos = System.nanoTime();
  // First recovery only, for its log line: when the snapshot arrived (0: none), entries replayed after it.
  private long snapshotReadNanos;
  private long replayedEntries;
  // Set when the journal refused the in-flight write on its unique key (counted and logged then).
  private boolean fencedByKey;
  // Set when this incarnation lost a write: it answers nothing more but "fenced" until it stops.
  private PartitionFencedException fenced;
  // External calls: while one is in flight, batches wait in the stash.
  private final ExternalCalls calls;

  PartitionBehavior(ActorContext<PartitionCommand> ctx, PartitionContext pc, PartitionActor<V, S, E> actor) {
    super(PersistenceId.ofUniqueId(pc.partition().persistenceId()),
        // The signal handlers log each journal failure (a fenced write at WARN, as the fence doing its
        // job): the supervisor's own ERROR per failure would page an operator for an expected fence.
        SupervisorStrategy.restartWithBackoff(pc.settings().backoffMin(), pc.settings().backoffMax(),
            pc.settings().backoffRandomFactor()).withLoggingEnabled(false));
    this.ctx = ctx;
    this.pc = pc;
    this.actor = actor;
    this.settings = pc.settings();
    this.partition = pc.partition();
    this.metrics = new PartitionMetrics(ctx.getSystem(), partition);
    this.selector = new BatchSelector<>(partition, settings, actor, ctx.getLog());
    this.unjournaled = new AtMostOnceEffects<>(actor, ctx.getLog(), partition.shortName());
    this.calls = new ExternalCalls(ctx, partition, settings);
    this.clock = settings.newWindowClock();
    this.snapshots = new SnapshotWriter(ctx.getSystem(), settings.snapshotPluginId(), partition.persistenceId(),
        partition.shortName(), settings.snapshotEvery(), settings.keepSnapshots(), ctx.getLog());
  }

  @Override
  public PartitionState<S> emptyState() {
    return PartitionState.empty(actor.callEmptyState(), newWindow());
  }

  private KeyWindow newWindow() {
    return settings.keyWindowEnabled()
        ? new KeyWindow(settings.keyWindowMaxKeys(), settings.keyWindowMaxAge().toMillis())
        : null;
  }

  @Override
  public String journalPluginId() {
    return settings.journalPluginId();
  }

  @Override
  public String snapshotPluginId() {
    return settings.snapshotPluginId();
  }

  @Override
  public RetentionCriteria retentionCriteria() {
    // Pekko snapshots nothing: its snapshots stash every command until the store answers. The
    // SnapshotWriter stores them beside the command path instead, every snapshot-every writes.
    // Events are never deleted: deletion frees sequence numbers, and a stale incarnation could then
    // commit into the freed range (see docs/guarantees.md).
    return RetentionCriteria.disabled();
  }

  @Override
  public SnapshotAdapter<PartitionState<S>> snapshotAdapter() {
    return new SnapshotAdapter<>() {
      @Override
      public Object toJournal(PartitionState<S> state) {
        // Runs on the actor's thread; the copy is what the snapshot store serializes later.
        return state.copyForSnapshot();
      }

      @Override
      @SuppressWarnings("unchecked")
      public PartitionState<S> fromJournal(Object from) {
        if (!statementLogged) {
          snapshotReadNanos = System.nanoTime();
        }
        PartitionState<S> stored = (PartitionState<S>) from;
        // Re-apply the current window bounds when settings changed since the snapshot; with the same
        // bounds the restored window is kept as it is (rebuilding a million keys took 55-180 ms).
        KeyWindow window = newWindow();
        KeyWindow restored = stored.window();
        if (window != null && restored != null) {
          if (restored.maxKeys() == window.maxKeys() && restored.maxAgeMillis() == window.maxAgeMillis()
              && restored.size() <= window.maxKeys()) {
            window = restored;
          } else {
            restored.forEach(window::add);
          }
        }
        return new PartitionState<>(stored.user(), stored.nextOffset(), window, stored.lastIncarnation(),
            stored.appliedRecords(), stored.droppedByKey(), stored.batches(), stored.lastWriteMillis(),
            stored.deadLettered(), stored.parkedKeys(), stored.callOutcomes().values()).replaysFrom(stored);
      }
    };
  }

  @Override
  public SignalHandler<PartitionState<S>> signalHandler() {
    return newSignalHandlerBuilder()
        .onSignal(RecoveryCompleted.instance(), this::onRecoveryCompleted)
        .onSignal(JournalPersistFailed.class, (state, failed) -> onPersistFailed(failed.getFailure()))
        .onSignal(JournalPersistRejected.class, (state, rejected) -> onPersistRejected(rejected.getFailure()))
        .onSignal(RecoveryFailed.class, (state, failed) -> onRecoveryFailed(failed.getFailure()))
        .build();
  }

  /**
   * Recovery failed; the actor restarts with backoff and tries again. A database that is down heals by
   * itself (WARN). A journal entry or snapshot that cannot be deserialized never will: the partition
   * consumes nothing on this node until a version that reads it runs, so that is an ERROR (at most
   * once a minute per partition, counted as a halt with cause {@code journal-undecodable}).
   */
  private void onRecoveryFailed(Throwable failure) {
    Throwable undecodable = RecoveryFailures.undecodable(failure);
    if (undecodable == null) {
      ctx.getLog().warn("[{}] recovery failed, retrying with backoff: {}", partition.shortName(), failure.toString());
      return;
    }
    metrics.halted("journal-undecodable");
    String message = "[" + partition.shortName() + "] cannot recover: a journal entry or snapshot of ["
        + partition.persistenceId() + "] cannot be deserialized (" + undecodable + "). Nothing of this partition is "
        + "consumed on this node until a version that reads it runs: bind a serializer for its class in "
        + "pekko.actor.serialization-bindings, add a Jackson migration for a changed event class, or roll back. "
        + "Retrying with backoff";
    if (RecoveryFailures.errorDue(partition.persistenceId())) {
      ctx.getLog().error(message);
    } else {
      ctx.getLog().warn(message);
    }
  }

  /**
   * A write failed. When the journal refused it on its unique (persistence id, sequence number) key,
   * another incarnation wrote that sequence number first: this one is fenced, and that is known now,
   * before the recovery that follows (which a node shutting down may never run).
   */
  private void onPersistFailed(Throwable failure) {
    if (!UniqueKeyViolation.in(failure, partition.persistenceId())) {
      ctx.getLog().warn("[{}] journal write failed; the actor recovers (with backoff) and the batch is resent: {}{}",
          partition.shortName(), failure, failure.getCause() == null ? "" : " (" + failure.getCause() + ")");
      return;
    }
    fencedByKey = true;
    metrics.fenced();
    String what = pendingEvent != null && pendingReplyTo != null
        ? "write of offsets [" + pendingEvent.fromOffset() + ".." + (pendingEvent.nextOffset() - 1) + "]"
        : "write";
    ctx.getLog().warn("[{}] [{}] fenced: the journal refused this incarnation's {} on its unique key: another "
        + "incarnation wrote the same sequence number first. Nothing of it was applied; the actor recovers the "
        + "other's write and stops.", partition.shortName(), partition.entityId(), what);
  }

  /**
   * The journal refused a write (it never commits; the actor stops after this signal). Usually one
   * record's event cannot be serialized: that record is named, so the pipeline dead-letters it and
   * resends the rest. When no single event is at fault the partition halts rather than loop.
   */
  private void onPersistRejected(Throwable failure) {
    if (unjournaled.refused(failure)) {
      if (pendingReplyTo != null) {
        // The batch whose offset write carried them is resent without them.
        org.apache.pekko.actor.typed.ActorRef<BatchOutcome> replyTo = pendingReplyTo;
        BatchEvent event = pendingEvent;
        clearPending();
        replyTo.tell(new BatchOutcome.Rejected(partition, new RetriableException("[" + partition.entityId()
            + "] the journal refused the write of " + offsets(event) + ", which carried the at-most-once effects "
            + "of an earlier batch (lost, logged); resend the batch")));
      }
      return;
    }
    if (pendingReplyTo == null) {
      ctx.getLog().error("[{}] the journal refused a write without a waiting batch ({}): {}", partition.shortName(),
          pendingEvent != null ? "at-most-once effects, LOST" : "an external call's outcome; its batch calls again",
          failure.toString());
      return;
    }
    BatchEvent event = pendingEvent;
    org.apache.pekko.actor.typed.ActorRef<BatchOutcome> replyTo = pendingReplyTo;
    long[] offsets = pendingEventOffsets;
    clearPending();
    org.apache.pekko.serialization.Serialization serialization = org.apache.pekko.serialization.SerializationExtension
        .get(org.apache.pekko.actor.typed.javadsl.Adapter.toClassic(ctx.getSystem()));
    for (int i = 0; i < event.events().size(); i++) {
      Object e = event.events().get(i);
      try {
        serialization.findSerializerFor(e).toBinary(e);
      } catch (Exception refused) {   // NotSerializableException is thrown unchecked
        ctx.getLog().warn("[{}] the journal refused the write of {}: the event {} of offset [{}] "
            + "cannot be serialized: {}", partition.shortName(), offsets(event),
            e.getClass().getName(), offsets[i], refused.toString());
        replyTo.tell(new BatchOutcome.Rejected(partition, new HandlerFailedException(partition.entityId(), offsets[i],
            false, refused.getClass().getName(), "the journal cannot store its event " + e.getClass().getName()
            + " (bind a serializer for it in pekko.actor.serialization-bindings): " + refused.getMessage(), refused)));
        return;
      }
    }
    replyTo.tell(new BatchOutcome.Rejected(partition, halt("journal-rejected", "the journal refused the write of "
        + offsets(event) + " (" + failure + ") and no single "
        + "record's event fails to serialize, so no record can be dead-lettered for it. Nothing of it was applied; "
        + "fix the cause and restart the node", failure)));
  }

  /** "offsets [a..b]" of a journal entry; "offsets up to b" for a partition's first. */
  private static String offsets(BatchEvent e) {
    return e.fromOffset() == PartitionState.NO_OFFSET ? "offsets up to " + (e.nextOffset() - 1)
        : "offsets [" + e.fromOffset() + ".." + (e.nextOffset() - 1) + "]";
  }

  /** Halts the partition: one ERROR, a metric, and every batch refused with the returned exception. */
  private PartitionHaltedException halt(String cause, String reason, Throwable failure) {
    halted = new PartitionHaltedException(partition.entityId(), reason, failure);
    metrics.halted(cause);
    ctx.getLog().error("[{}] {}", partition.shortName(), halted.getMessage(), failure);
    return halted;
  }

  /** The gauges that follow the stored state: parked and window keys, the journal's last sequence number. */
  private void recordState(PartitionState<S> state) {
    metrics.state(state.parkedKeys().size(), state.window() == null ? 0 : state.window().size(),
        lastSequenceNumber(ctx));
  }

  /** After every write: the gauges, and a snapshot when one is due (stored beside the command path). */
  private void afterWrite(PartitionState<S> state) {
    recordState(state);
    long sequenceNr = lastSequenceNumber(ctx);
    if (snapshots.due(sequenceNr)) {
      snapshots.offer(sequenceNr, state.copyForSnapshot());
    }
  }

  private void onRecoveryCompleted(PartitionState<S> state) {
    recordState(state);
    snapshots.recovered(lastSequenceNumber(ctx));
    if (!statementLogged) {
      statementLogged = true;
      // Part of every fail-over and assignment: how long this partition took to become ready.
      ctx.getLog().info("[{}] recovered in {} ms: next offset {}, sequence number {} ({}, then {} journal "
          + "entries replayed)", partition.shortName(), (System.nanoTime() - startedNanos) / 1_000_000,
          state.nextOffset() == PartitionState.NO_OFFSET ? "none stored" : Long.toString(state.nextOffset()),
          lastSequenceNumber(ctx), snapshotReadNanos == 0 ? "no snapshot"
              : "snapshot read after " + (snapshotReadNanos - startedNanos) / 1_000_000 + " ms", replayedEntries);
      if (settings.deliveryMode() == DeliveryMode.AT_MOST_ONCE) {
        ctx.getLog().warn("[{}] runs AT-MOST-ONCE: a crash between the offset write and the effects loses "
            + "that batch's effects", partition.shortName());
      }
    }
    clock.recovered(state.lastWriteMillis());
    recoveryGaps = 0;
    // A call of the incarnation before the restart is abandoned: its batch is resent and asks again.
    calls.reset();
    boolean refusedByKey = fencedByKey;
    fencedByKey = false;
    if (unjournaled.recovered(state.batches(), state.lastIncarnation(), incarnation, this::effectsDurable)) {
      scheduleFlush();
    }
    if (lateCommit(state)) {
      refusedByKey = false;   // the write in flight collided with this incarnation's own late write
    }
    if (stopAfterWrite) {
      stopAfterWrite = false;
      ctx.getSelf().tell(new PartitionCommand.Stop());   // its write failed: the Stop tries again
    }
    if (pendingReplyTo != null) {
      resolvePending(state, refusedByKey);
    } else {
      clearPending();
      if (refusedByKey) {
        // A write without a waiting batch (at-most-once effects, a call outcome) lost to another
        // incarnation: this one stops; the next message starts a fresh incarnation on the winner's state.
        fenced = new PartitionFencedException(partition.entityId(), state.nextOffset(), state.nextOffset());
        unjournaled.abandoned("another incarnation wrote first");
        ctx.getSelf().tell(new PartitionCommand.Stop());
      }
    }
    if (halted == null) {
      actor.callOnRecovered(state.user(), state.nextOffset());
    }
  }

  /**
   * at-most-once: an offset write of this incarnation that failed, and was not in the journal at the
   * recovery after it, committed late (the write in flight met it on the unique key). That batch's
   * handlers run now; a batch waiting for the write in flight is resent (its records below the
   * late write's next offset are then dropped as redeliveries). Returns whether it happened.
   */
  private boolean lateCommit(PartitionState<S> state) {
    AtMostOnceEffects.FailedAccept late = unjournaled.lateCommit(state.batches(), state.nextOffset(),
        state.lastIncarnation(), incarnation);
    if (late == null) {
      return false;
    }
    ctx.getLog().warn("[{}] the offset write of {}, which had failed, committed late (the unique-key refusal before "
        + "this was that write, not another owner's): its handlers run now", partition.shortName(), late.describe());
    if (!late.records().isEmpty()) {
      acceptedNotRun++;
      ctx.getSelf().tell(new SelfCommand.RunAccepted(late.records()));
    }
    if (pendingReplyTo != null) {
      pendingReplyTo.tell(new BatchOutcome.Rejected(partition, new RetriableException("[" + partition.entityId()
          + "] an earlier write of this partition committed late, up to offset " + (state.nextOffset() - 1)
          + "; resend the batch")));
    }
    clearPending();
    return true;
  }

  /** After a failed write and a fresh recovery: decide what became of the in-flight batch. */
  private void resolvePending(PartitionState<S> state, boolean counted) {
    org.apache.pekko.actor.typed.ActorRef<BatchOutcome> replyTo = pendingReplyTo;
    BatchEvent event = pendingEvent;
    BatchOutcome.Applied outcome = pendingOutcome;
    long before = pendingBatchesBefore;
    List<Inbound<?>> accepted = pendingAccepted;
    clearPending();
    if (state.batches() > before && incarnation.equals(state.lastIncarnation())
        && state.nextOffset() >= event.nextOffset() && state.batches() == before + 1) {
      // The write committed although the journal reported a failure (e.g. a timeout).
      metrics.written(outcome.applied(), outcome.deadLettered(), System.nanoTime() - pendingStartNanos);
      if (accepted != null) {
        acceptedNotRun++;
        ctx.getSelf().tell(new SelfCommand.RunAccepted(accepted));
      }
      replyTo.tell(outcome);
      return;
    }
    if (state.batches() > before) {
      PartitionFencedException fenced =
          new PartitionFencedException(partition.entityId(), event.fromOffset(), state.nextOffset());
      if (counted) {
        ctx.getLog().debug("[{}] {}", partition.shortName(), fenced.getMessage());
      } else {
        metrics.fenced();
        ctx.getLog().warn("[{}] {}", partition.shortName(), fenced.getMessage());
      }
      this.fenced = fenced;
      if (accepted != null && !counted && state.batches() > before + 1) {
        // Not refused by the key, and another write came after the entry it would have taken: it may
        // be that entry, committed late.
        unjournaled.acceptFailed(event, before, accepted);
      }
      unjournaled.abandoned("another incarnation wrote first");
      replyTo.tell(new BatchOutcome.Rejected(partition, fenced));
      ctx.getSelf().tell(new PartitionCommand.Stop());
      return;
    }
    if (accepted != null) {
      unjournaled.acceptFailed(event, before, accepted);
    }
    replyTo.tell(new BatchOutcome.Rejected(partition, new RetriableException("[" + partition.entityId()
        + "] journal write of offsets [" + event.fromOffset() + ".." + (event.nextOffset() - 1)
        + "] failed and was not in the journal when the actor recovered; resend the batch (the actor is ready; if "
        + "the failed write still commits late, the resend is fenced by it and its records dropped as redeliveries)")));
  }

  private void clearPending() {
    pendingEvent = null;
    pendingUserState = null;
    pendingOutcome = null;
    pendingReplyTo = null;
    pendingRecords = List.of();
    pendingEventOffsets = new long[0];
    pendingAccepted = null;
  }

  @Override
  public CommandHandler<PartitionCommand, BatchEvent, PartitionState<S>> commandHandler() {
    return newCommandHandlerBuilder().forAnyState()
        .onCommand(PartitionCommand.ApplyBatch.class, (state, cmd) ->
            calls.inFlight() ? Effect().stash() : onApplyBatch(state, cmd))
        .onCommand(PartitionCommand.GetStatus.class, (state, cmd) -> {
          cmd.replyTo().tell(status(state));
          return Effect().none();
        })
        .onCommand(PartitionCommand.GetState.class, (state, cmd) -> {
          cmd.replyTo().tell(state.user());
          return Effect().none();
        })
        // at-most-once: the effects of records whose offset is durable run before the actor stops.
        .onCommand(PartitionCommand.Stop.class, this::onStop)
        .onCommand(SelfCommand.RunAccepted.class, (state, cmd) ->
            calls.inFlight() ? Effect().stash() : onRunAccepted(state, cmd))
        .onCommand(SelfCommand.FlushEffects.class, this::onFlushEffects)
        .onCommand(SelfCommand.CallDone.class, this::onCallDone)
        .build();
  }

  private PartitionStatus status(PartitionState<S> state) {
    return new PartitionStatus(partition,
        state.nextOffset() == PartitionState.NO_OFFSET ? OptionalLong.empty() : OptionalLong.of(state.nextOffset()),
        state.appliedRecords(), state.droppedByKey(), droppedRedelivery,
        state.window() == null ? 0 : state.window().size(), incarnation, ctx.getSystem().address().toString(),
        state.deadLettered());
  }

  @Override
  public EventHandler<PartitionState<S>, BatchEvent> eventHandler() {
    return newEventHandlerBuilder().forAnyState().onAnyEvent(this::applyBatch);
  }

  @SuppressWarnings("unchecked")
  private PartitionState<S> applyBatch(PartitionState<S> state, BatchEvent event) {
    S user;
    if (event == pendingEvent) {
      // Live write: the command handler already folded these events into a new state.
      user = pendingUserState;
    } else if (halted != null) {
      return state;   // nothing after the entry that could not be applied is applied
    } else if (event.fromOffset() != state.nextOffset()) {
      return onJournalGap(state, event);
    } else {
      replayedEntries++;
      user = state.user();
      try {
        for (Object e : event.events()) {
          user = actor.callApplyEvent(user, (E) e);
        }
      } catch (RuntimeException e) {
        halt("event-handler", actor.getClass().getName() + ".applyEvent threw on recovery for the journal entry of "
            + offsets(event) + ": " + e + ". Its events are in the "
            + "journal and cannot be skipped; nothing more is applied to this partition until a version whose "
            + "applyEvent applies them is deployed and the node restarted", e);
        return state;
      }
    }
    return state.apply(event, user);
  }

  /**
   * Every journal entry starts at the offset the state before it ends at. One that does not means
   * recovery did not read the entries between: compaction emptied them while this incarnation
   * recovered from an older snapshot than the one that now covers them. The recovery fails and runs
   * again (with backoff) from the newest snapshot. Met again and again, entries are missing from the
   * journal itself: the partition halts rather than come up with a state that lacks them.
   */
  private PartitionState<S> onJournalGap(PartitionState<S> state, BatchEvent event) {
    String what = "the journal entry of " + offsets(event) + " follows a state whose next offset is "
        + (state.nextOffset() == PartitionState.NO_OFFSET ? "none" : Long.toString(state.nextOffset()))
        + ": recovery did not read the entries between them";
    if (++recoveryGaps <= RECOVERY_GAPS_BEFORE_HALT) {
      ctx.getLog().warn("[{}] {} (compacted while this incarnation recovered from an older snapshot); recovering "
          + "again from the newest snapshot ({} of {})", partition.shortName(), what, recoveryGaps,
          RECOVERY_GAPS_BEFORE_HALT);
      throw new IllegalStateException("[" + partition.entityId() + "] " + what);
    }
    halt("journal-gap", what + ", in " + recoveryGaps + " recoveries in a row: entries are missing from the journal "
        + "(deleted outside Fencepost?), so the partition's state cannot be rebuilt; nothing more is applied to it. "
        + "Restore the journal's missing rows from a backup, then restart the node", null);
    return state;
  }

  private ReplyEffect<BatchEvent, PartitionState<S>> onApplyBatch(PartitionState<S> state,
      PartitionCommand.ApplyBatch cmd) {
    if (fenced != null) {
      // Batches queued before the Stop must not be written by a losing incarnation.
      return Effect().reply(cmd.replyTo(), new BatchOutcome.Rejected(partition, fenced));
    }
    if (halted != null) {
      return Effect().reply(cmd.replyTo(), new BatchOutcome.Rejected(partition, halted));
    }
    BatchSelector.Selection<V> sel;
    try {
      sel = selector.select(state, cmd.records(), cmd.deadLetters(), cmd.coveredFrom());
    } catch (OffsetGapException gap) {
      // Debug: on transactional or compacted topics it is routine (the pipeline then vouches for the hole).
      ctx.getLog().debug("[{}] batch refused: {}", partition.shortName(), gap.getMessage());
      return Effect().reply(cmd.replyTo(), new BatchOutcome.Rejected(partition, gap));
    } catch (FencepostException e) {
      return Effect().reply(cmd.replyTo(), new BatchOutcome.Rejected(partition, e));
    }
    if (!sel.toPark.isEmpty()) {
      return Effect().reply(cmd.replyTo(), new BatchOutcome.Rejected(partition,
          new RecordsParkedException(partition.entityId(), sel.toPark)));
    }
    // Logged after the checks that refuse a batch outright: a refused batch comes again with them.
    for (DeadLetterEntry d : sel.deadLetters) {
      ctx.getLog().warn("[{}] offset [{}] dead-lettered after {} attempt(s): {}: {}", partition.shortName(),
          d.offset(), d.attempts(), d.errorClass(), d.errorMessage());
    }
    if (!sel.droppedReplays.isEmpty()) {
      ctx.getLog().info("[{}] replayed records at offsets {} dropped: the dead letters they replay are not "
          + "replayable on this partition (replayed before, applied by an earlier owner after all, or of another "
          + "partition or consumer group)", partition.shortName(), sel.droppedReplays);
    }
    droppedRedelivery += sel.droppedRedelivery;
    metrics.dropped(sel.droppedRedelivery, sel.droppedByKey);
    if (sel.nextOffset == state.nextOffset()) {
      // Every record was a redelivery: acknowledged without a write.
      return Effect().reply(cmd.replyTo(), new BatchOutcome.Applied(partition, state.nextOffset(), 0,
          sel.droppedRedelivery, sel.droppedByKey, false, 0, 0));
    }
    if (settings.deliveryMode() == DeliveryMode.AT_MOST_ONCE) {
      return acceptAtMostOnce(state, cmd, sel);
    }
    S user = state.user();
    List<Object> events = new ArrayList<>();
    long[] eventOffsets = new long[Math.max(8, sel.fresh.size())];
    List<OutboxRecord> outbox = new ArrayList<>();
    for (Inbound<V> record : sel.fresh) {
      Effects<E> effects;
      try {
        effects = actor.callOnRecord(user, record);
        if (effects.hasCall()) {
          String key = actor.idempotencyKey(record);
          FencepostException failed = calls.takeFailure(record, key);
          if (failed != null) {
            return Effect().reply(cmd.replyTo(), new BatchOutcome.Rejected(partition, failed));
          }
          CallOutcome stored = state.callOutcomes().get(key);
          if (stored == null) {
            // Make the call off the actor; this batch waits in the stash (with any that follow) until
            // its outcome is journaled, then runs again and finds the outcome.
            calls.start(record, key, effects.call());
            return Effect().stash();
          }
          effects = effects.then(stored.outcome());
          if (effects.hasCall()) {
            throw new FatalException("the continuation of Effects.call asked for another call; one external "
                + "call per record");
          }
        }
        for (E event : effects.events()) {
          user = actor.callApplyEvent(user, event);
          if (events.size() == eventOffsets.length) {
            eventOffsets = java.util.Arrays.copyOf(eventOffsets, eventOffsets.length * 2);
          }
          eventOffsets[events.size()] = record.offset();
          events.add(event);
        }
      } catch (RuntimeException e) {
        // onRecord, businessKey or applyEvent threw. The events of earlier records were folded into a
        // new state that is simply dropped (the state is immutable: applyEvent returns a new one), so
        // the actor goes on from its last write; the pipeline retries or dead-letters this record.
        return Effect().reply(cmd.replyTo(), new BatchOutcome.Rejected(partition,
            BatchSelector.handlerFailure(partition.entityId(), record.offset(), e)));
      }
      outbox.addAll(effects.outbox());
    }
    BatchEvent event = new BatchEvent(incarnation, state.nextOffset(), sel.nextOffset, clock(state), events,
        sel.freshDigests(), sel.fresh.size(), sel.droppedByKey, sel.deadLetters, sel.unparked, outbox,
        List.of(), toArray(sel.replayed));
    BatchOutcome.Applied outcome = new BatchOutcome.Applied(partition, sel.nextOffset, sel.fresh.size(),
        sel.droppedRedelivery, sel.droppedByKey, true, sel.deadLetters.size(), outbox.size());
    pendingRecords = sel.fresh;
    pendingEventOffsets = eventOffsets;
    return persist(state, event, user, outcome, cmd.replyTo());
  }

  private ReplyEffect<BatchEvent, PartitionState<S>> acceptAtMostOnce(PartitionState<S> state,
      PartitionCommand.ApplyBatch cmd, BatchSelector.Selection<V> sel) {
    // The effects of earlier batches that wait for a write go in this one (see AtMostOnceEffects).
    AtMostOnceEffects.Carried<S> carried = unjournaled.take();
    BatchEvent accept = new BatchEvent(incarnation, state.nextOffset(), sel.nextOffset, clock(state),
        carried == null ? List.of() : carried.events(), sel.freshDigests(), sel.fresh.size(), sel.droppedByKey,
        sel.deadLetters, sel.unparked, carried == null ? List.of() : carried.outbox(), List.of(),
        toArray(sel.replayed));
    BatchOutcome.Applied outcome = new BatchOutcome.Applied(partition, sel.nextOffset, sel.fresh.size(),
        sel.droppedRedelivery, sel.droppedByKey, true, sel.deadLetters.size(), 0);
    List<Inbound<?>> accepted = List.copyOf(sel.fresh);
    // Their latency is recorded once their effects are journaled (see effectsDurable), not now.
    pendingRecords = List.of();
    pendingAccepted = accepted;
    unjournaled.writing(carried);
    inFlight(state, accept, carried == null ? state.user() : carried.user(), outcome, cmd.replyTo());
    return Effect().persist(accept)
        .thenRun(s -> {
          written(outcome, s);
          effectsDurable(unjournaled.committed());
          // Second step: effects after the offset is durable. A crash before it completes loses them.
          acceptedNotRun++;
          ctx.getSelf().tell(new SelfCommand.RunAccepted(accepted));
        })
        .thenReply(cmd.replyTo(), s -> outcome);
  }

  /** at-most-once's second step: the handlers of records whose offset is durable run; their effects wait. */
  private Effect<BatchEvent, PartitionState<S>> onRunAccepted(PartitionState<S> state, SelfCommand.RunAccepted cmd) {
    acceptedNotRun = Math.max(0, acceptedNotRun - 1);
    if (halted != null || fenced != null) {
      unjournaled.skipped(cmd.records(), halted != null ? "the partition halted" : "this incarnation is fenced");
      return Effect().unstashAll();
    }
    if (unjournaled.run(state.user(), state.batches(), cmd.records(),
        ts -> metrics.durable(ts, System.currentTimeMillis()))) {
      if (settings.atMostOnceLinger().isZero()) {
        return writeWaitingEffects(state).thenUnstashAll();
      }
      scheduleFlush();
    }
    return Effect().unstashAll();   // a Stop that waited for these handlers
  }

  private void scheduleFlush() {
    ctx.scheduleOnce(settings.atMostOnceLinger(), ctx.getSelf(), new SelfCommand.FlushEffects(unjournaled.generation()));
  }

  /** at-most-once: no batch's write carried the waiting effects within the linger: they are written alone. */
  private Effect<BatchEvent, PartitionState<S>> onFlushEffects(PartitionState<S> state, SelfCommand.FlushEffects cmd) {
    if (cmd.generation() != unjournaled.generation() || !unjournaled.waiting()) {
      return Effect().none();   // carried by a batch's write meanwhile
    }
    if (halted != null || fenced != null) {
      unjournaled.lose(unjournaled.take(), halted != null ? "the partition halted" : "this incarnation is fenced");
      return Effect().none();
    }
    return writeWaitingEffects(state).thenUnstashAll();
  }

  /** at-most-once: the effects of these records are journaled now (the end-to-end latency ends here). */
  private void effectsDurable(AtMostOnceEffects.Carried<S> carried) {
    if (carried != null) {
      long now = System.currentTimeMillis();
      carried.forEachTimestamp(ts -> metrics.durable(ts, now));
    }
  }

  /** The actor stopped, however: at-most-once effects not journaled are logged as lost. */
  void stopped() {
    unjournaled.stopped(acceptedNotRun, pendingAccepted);
  }

  /** A Stop waits for at-most-once handlers whose offset is durable, and for the write of their effects. */
  private Effect<BatchEvent, PartitionState<S>> onStop(PartitionState<S> state, PartitionCommand.Stop cmd) {
    if (acceptedNotRun > 0) {
      return Effect().stash();
    }
    if (unjournaled.waiting() && halted == null && fenced == null) {
      stopAfterWrite = true;
      return writeWaitingEffects(state).thenRun(s -> {
        stopAfterWrite = false;
        ctx.getSelf().tell(cmd);
      });
    }
    return Effect().stop();
  }

  /** The waiting at-most-once effects in a write of their own (the offset does not move). */
  private org.apache.pekko.persistence.typed.javadsl.EffectBuilder<BatchEvent, PartitionState<S>> writeWaitingEffects(
      PartitionState<S> state) {
    AtMostOnceEffects.Carried<S> carried = unjournaled.take();
    BatchEvent effects = new BatchEvent(incarnation, state.nextOffset(), state.nextOffset(), clock(state),
        carried.events(), new long[0], 0, 0, List.of(), List.of(), carried.outbox(), List.of(), new long[0]);
    pendingEvent = effects;
    pendingUserState = carried.user();
    unjournaled.writing(carried);
    return Effect().persist(effects).thenRun(s -> {
      afterWrite(s);
      pendingEvent = null;
      pendingUserState = null;
      effectsDurable(unjournaled.committed());
    });
  }

  private ReplyEffect<BatchEvent, PartitionState<S>> persist(PartitionState<S> state, BatchEvent event, S user,
      BatchOutcome.Applied outcome, org.apache.pekko.actor.typed.ActorRef<BatchOutcome> replyTo) {
    inFlight(state, event, user, outcome, replyTo);
    return Effect().persist(event)
        .thenRun(s -> written(outcome, s))
        .thenReply(replyTo, s -> outcome);
  }

  /** Remembers the batch whose write starts now, for the reply and for the verdict if the write fails. */
  private void inFlight(PartitionState<S> state, BatchEvent event, S user, BatchOutcome.Applied outcome,
      org.apache.pekko.actor.typed.ActorRef<BatchOutcome> replyTo) {
    pendingEvent = event;
    pendingUserState = user;
    pendingOutcome = outcome;
    pendingReplyTo = replyTo;
    pendingBatchesBefore = state.batches();
    pendingStartNanos = System.nanoTime();
  }

  private void written(BatchOutcome.Applied outcome, PartitionState<S> state) {
    afterWrite(state);
    metrics.written(outcome.applied(), outcome.deadLettered(), System.nanoTime() - pendingStartNanos);
    long now = System.currentTimeMillis();
    for (Inbound<?> record : pendingRecords) {
      metrics.durable(record.timestamp().toEpochMilli(), now);
    }
    clearPending();
  }

  /** Journals a call's outcome (the offset does not move), then lets the waiting batch run again. */
  private Effect<BatchEvent, PartitionState<S>> onCallDone(PartitionState<S> state, SelfCommand.CallDone done) {
    if (!calls.done(done)) {
      return Effect().none();   // a call abandoned by a restart
    }
    if (done.failure() != null) {
      return Effect().unstashAll();   // the batch that asked for it is rejected with the failure
    }
    BatchEvent outcome = BatchEvent.callOutcomes(incarnation, state.nextOffset(), clock(state),
        List.of(new CallOutcome(done.offset(), done.key(), done.outcome())));
    return Effect().persist(outcome).thenRun(this::afterWrite).thenUnstashAll();
  }

  /** The key window's clock for a write now (see {@link WindowClock}: no node's wall clock moves it). */
  private long clock(PartitionState<?> state) {
    return clock.now(state.lastWriteMillis());
  }

  private static long[] toArray(List<Long> values) {
    long[] out = new long[values.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = values.get(i);
    }
    return out;
  }
}
