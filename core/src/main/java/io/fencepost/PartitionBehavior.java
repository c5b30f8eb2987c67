package io.fencepost;

import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;

import io.fencepost.errors.FencepostException;
import io.fencepost.internal.BatchEvent;
import io.fencepost.internal.CallOutcome;
import io.fencepost.internal.NodeName;
import io.fencepost.internal.PartitionMetrics;
import io.fencepost.internal.PartitionState;
import io.fencepost.internal.SnapshotWriter;
import io.fencepost.internal.WindowImage;
import io.fencepost.internal.WindowSegment;
import io.fencepost.internal.WindowClock;
import io.fencepost.internal.writepath.AtMostOncePath;
import io.fencepost.internal.writepath.BatchIntake;
import io.fencepost.internal.writepath.BatchSelector;
import io.fencepost.internal.writepath.ExactlyOnceFold;
import io.fencepost.internal.writepath.ExternalCalls;
import io.fencepost.internal.writepath.PartitionFailures;
import io.fencepost.internal.writepath.PendingWrite;
import io.fencepost.internal.writepath.RecoveryChecks;
import io.fencepost.internal.writepath.SelfMessages;
import io.fencepost.internal.writepath.Standing;
import io.fencepost.internal.writepath.UserHandlers;
import io.fencepost.internal.writepath.WindowReads;
import io.fencepost.internal.writepath.WriteVerdicts;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Adapter;
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
import org.apache.pekko.serialization.SerializationExtension;

/**
 * The event-sourced behavior behind every {@link PartitionActor}: one {@link BatchEvent} per batch,
 * holding the user's events, the next offset and the new keys. This class holds the handler tables;
 * the write path they call is in {@code io.fencepost.internal.writepath}.
 *
 * <p>Fencing: each write takes the next sequence number after the state this incarnation recovered,
 * and the journal's unique (persistence id, sequence number) key lets only one incarnation commit
 * it. A failed write restarts this behavior with backoff (same object, so the in-flight batch is
 * remembered) and recovers; the recovered journal then tells what happened ({@link WriteVerdicts}).
 */
final class PartitionBehavior<V, S, E> extends EventSourcedBehavior<PartitionCommand, BatchEvent, PartitionState<S>>
    implements SelfMessages {

  private final ActorContext<PartitionCommand> ctx;
  private final PartitionId partition;
  private final PartitionActorSettings settings;
  private final UserHandlers<V, S, E> handlers;
  private final String incarnation = UUID.randomUUID().toString();
  private final PartitionMetrics metrics;
  private final WindowClock clock;
  private final SnapshotWriter snapshots;
  private final WindowReads windowReads;
  private final Standing standing;
  private final PendingWrite<S> pending = new PendingWrite<>();
  private final BatchIntake<V> intake;
  private final ExternalCalls calls;
  private final ExactlyOnceFold<V, S, E> fold;
  // The offset of the last state published to queries (at most once, a settled one may lag the stored offset).
  private long publishedOffset = PartitionState.NO_OFFSET;
  private final AtMostOncePath<V, S, E> atMostOnce;
  private final WriteVerdicts<S> verdicts;
  private final RecoveryChecks<V, S, E> recovery;
  private final Consumer<AppliedView> views;

  PartitionBehavior(ActorContext<PartitionCommand> ctx, PartitionContext pc, PartitionActor<V, S, E> actor,
      Consumer<AppliedView> views) {
    super(PersistenceId.ofUniqueId(pc.partition().persistenceId()),
        // The signal handlers log each journal failure (a fenced write at WARN, as the fence doing its
        // job): the supervisor's own ERROR per failure would page an operator for an expected fence.
        SupervisorStrategy.restartWithBackoff(pc.settings().backoffMin(), pc.settings().backoffMax(),
            pc.settings().backoffRandomFactor()).withLoggingEnabled(false));
    this.ctx = ctx;
    this.partition = pc.partition();
    this.settings = pc.settings();
    this.handlers = new ActorHandlers<>(actor);
    this.metrics = new PartitionMetrics(ctx.getSystem(), partition);
    this.clock = new WindowClock(settings.wallMillis(), settings.monotonicNanos());
    this.snapshots = new SnapshotWriter(ctx.getSystem(), settings.snapshotPluginId(partition), partition.persistenceId(),
        partition.shortName(), settings.snapshotEvery(), settings.keepSnapshots(), ctx.getLog(),
        metrics::snapshotFailed);
    PartitionFailures failures = PartitionFailures.get(ctx.getSystem());
    this.windowReads = new WindowReads(partition, settings, snapshots, metrics, failures, ctx.getLog());
    this.standing = new Standing(partition, metrics, ctx.getLog());
    this.intake = new BatchIntake<>(partition, settings, handlers, metrics, ctx.getLog());
    this.calls = new ExternalCalls(ctx.getSystem(), this, ctx.getLog(), partition, settings);
    this.fold = new ExactlyOnceFold<>(partition, incarnation, handlers, calls, clock);
    this.atMostOnce = new AtMostOncePath<>(Effect(), partition, settings, incarnation, handlers, pending, standing,
        this, metrics, clock, this::afterWrite, this::publishSettled, ctx.getLog());
    this.verdicts = new WriteVerdicts<>(partition, incarnation, pending, standing, atMostOnce, this, metrics,
        SerializationExtension.get(Adapter.toClassic(ctx.getSystem())), ctx.getLog());
    this.recovery = new RecoveryChecks<>(partition, settings, handlers, standing, metrics, failures, ctx.getLog());
    this.views = views;
  }

  @Override
  public PartitionState<S> emptyState() {
    return PartitionState.empty(handlers.emptyState(), RecoveryChecks.newWindow(settings));
  }

  @Override
  public String journalPluginId() {
    return settings.journalPluginId(partition);
  }

  @Override
  public String snapshotPluginId() {
    return settings.snapshotPluginId(partition);
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
        return state.copyForSnapshot();   // unused: Pekko takes no snapshot (see retentionCriteria)
      }

      @Override
      @SuppressWarnings("unchecked")
      public PartitionState<S> fromJournal(Object from) {
        return recovery.fromSnapshot((PartitionState<S>) from);
      }
    };
  }

  @Override
  public SignalHandler<PartitionState<S>> signalHandler() {
    return newSignalHandlerBuilder()
        .onSignal(RecoveryCompleted.instance(), this::onRecoveryCompleted)
        .onSignal(JournalPersistFailed.class, (state, failed) -> verdicts.failed(failed.getFailure()))
        .onSignal(JournalPersistRejected.class, (state, rejected) -> verdicts.refused(rejected.getFailure()))
        .onSignal(RecoveryFailed.class, (state, failed) -> recovery.failed(failed.getFailure()))
        .build();
  }

  @Override
  public CommandHandler<PartitionCommand, BatchEvent, PartitionState<S>> commandHandler() {
    return newCommandHandlerBuilder().forAnyState()
        .onCommand(PartitionCommand.ApplyBatch.class, (state, cmd) ->
            calls.inFlight() || state.windowPending() ? Effect().stash() : onApplyBatch(state, cmd))
        .onCommand(PartitionCommand.GetStatus.class, (state, cmd) -> Effect().none()
            .thenRun(s -> cmd.replyTo().tell(status(s))))
        .onCommand(PartitionCommand.GetState.class, (state, cmd) -> Effect().none()
            .thenRun(s -> cmd.replyTo().tell(s.user())))
        // at-most-once: the effects of records whose offset is durable run before the actor stops.
        .onCommand(PartitionCommand.Stop.class, (state, cmd) -> atMostOnce.stop(state))
        .onCommand(SelfCommand.RunAccepted.class, (state, cmd) ->
            // handlers of records whose offset is durable: they need no window, and must run before a stop
            calls.inFlight() ? Effect().stash() : runAccepted(state, cmd.records()))
        .onCommand(SelfCommand.WindowRead.class, (state, r) ->   // the key window's segments were read
            switch (windowReads.install(state, r.image(), r.segments(), r.failure(), r.startedNanos())) {
              case STALE -> Effect().none();
              case UNREADABLE -> Effect().stop();
              case INSTALLED -> Effect().unstashAll();
            })
        .onCommand(SelfCommand.FlushEffects.class, (state, cmd) -> atMostOnce.flush(state, cmd.generation()))
        .onCommand(SelfCommand.CallDone.class, this::onCallDone)
        .build();
  }

  @Override
  public EventHandler<PartitionState<S>, BatchEvent> eventHandler() {
    return newEventHandlerBuilder().forAnyState().onAnyEvent((state, event) ->
        // A live write: the command handler already folded its events into a new state.
        pending.isLive(event) ? state.apply(event, pending.user()) : recovery.replay(state, event));
  }

  private ReplyEffect<BatchEvent, PartitionState<S>> onApplyBatch(PartitionState<S> state,
      PartitionCommand.ApplyBatch cmd) {
    FencepostException refusal = standing.refusal();
    BatchSelector.Selection<V> sel = null;
    if (refusal == null) {
      try {
        sel = intake.admit(state, cmd);
      } catch (FencepostException e) {
        refusal = e;
      }
    }
    if (refusal != null) {
      return Effect().reply(cmd.replyTo(), new BatchOutcome.Rejected(partition, refusal));
    }
    if (sel.nextOffset() == state.nextOffset()) {
      // Every record was a redelivery: acknowledged without a write.
      return Effect().reply(cmd.replyTo(), sel.acknowledged(partition));
    }
    if (settings.deliveryMode() == DeliveryMode.AT_MOST_ONCE) {
      return atMostOnce.accept(state, sel, cmd.replyTo());
    }
    ExactlyOnceFold.Folded<S> folded = fold.fold(state, sel);
    if (folded.refusal() != null) {
      return Effect().reply(cmd.replyTo(), new BatchOutcome.Rejected(partition, folded.refusal()));
    }
    if (folded.awaitsCall()) {
      return Effect().stash();
    }
    pending.startBatch(state, folded.event(), folded.user(), folded.outcome(), cmd.replyTo(), sel.fresh(),
        folded.eventOffsets(), null);
    return Effect().persist(folded.event())
        .thenRun(s -> {
          afterWrite(s);
          pending.written(metrics);
        })
        .thenReply(cmd.replyTo(), s -> folded.outcome());
  }

  /** At most once: the handlers of durable offsets run; a state they left without effects to write is settled. */
  private Effect<BatchEvent, PartitionState<S>> runAccepted(PartitionState<S> state, List<Inbound<?>> records) {
    Effect<BatchEvent, PartitionState<S>> effect = atMostOnce.runAccepted(state, records);
    if (atMostOnce.effectsSettled()) {
      publish(state);
    }
    return effect;
  }

  /** Journals a call's outcome (the offset does not move), then lets the waiting batch run again. */
  private Effect<BatchEvent, PartitionState<S>> onCallDone(PartitionState<S> state, SelfCommand.CallDone done) {
    if (!calls.done(done.callId(), done.key(), done.failure())) {
      return Effect().none();   // a call abandoned by a restart
    }
    if (done.failure() != null) {
      return Effect().unstashAll();   // the batch that asked for it is rejected with the failure
    }
    BatchEvent outcome = BatchEvent.callOutcomes(incarnation, state.nextOffset(), clock.now(state.lastWriteMillis()),
        List.of(new CallOutcome(done.offset(), done.key(), done.outcome())));
    return Effect().persist(outcome).thenRun(this::afterWrite).thenUnstashAll();
  }

  private void onRecoveryCompleted(PartitionState<S> state) {
    recordState(state);
    // A window whose segments are still read makes batches wait (stashed) until it is installed.
    windowReads.recovered(state, lastSequenceNumber(ctx), recovery.takeSnapshotWindow(), this);
    recovery.completed(state, lastSequenceNumber(ctx));
    clock.recovered(state.lastWriteMillis());
    // A call of the incarnation before the restart is abandoned: its batch is resent and asks again.
    calls.reset();
    verdicts.recovered(state);
    if (!standing.halted()) {
      handlers.onRecovered(state.user(), state.nextOffset());
    }
    publish(state);
  }

  /** After every write: the gauges, and a snapshot when one is due (stored beside the command path). */
  private void afterWrite(PartitionState<S> state) {
    recordState(state);
    snapshots.written(lastSequenceNumber(ctx), state);
    publish(state);
  }

  /**
   * Queries are answered from the journaled state, beside the write path (which stashes commands).
   * At most once, a state is published only once the effects of every record below its offset are
   * journaled: the offset is written before the handlers run.
   */
  private void publish(PartitionState<S> state) {
    if (settings.deliveryMode() == DeliveryMode.AT_MOST_ONCE && !atMostOnce.effectsSettled()) {
      return;
    }
    publish(state, state.nextOffset());
  }

  /**
   * At most once, after an offset write: the journaled state, whose effects cover every record below
   * {@code below} (short of the stored offset while handlers of durable offsets have not run yet), so
   * that a partition whose handlers never all catch up still offers queries a state that advances.
   */
  private void publishSettled(PartitionState<S> state, long below) {
    if (below != PartitionState.NO_OFFSET && below > publishedOffset) {
      publish(state, below);
    }
  }

  private void publish(PartitionState<S> state, long nextOffset) {
    S user = state.user();
    publishedOffset = nextOffset;
    views.accept(new AppliedView(partition, nextOffset, incarnation, query -> handlers.onQuery(user, query)));
  }

  /** The gauges that follow the stored state: parked and window keys, the journal's last sequence number. */
  private void recordState(PartitionState<S> state) {
    metrics.state(state.parkedKeys().size(), state.windowSize(), lastSequenceNumber(ctx));
  }

  private PartitionStatus status(PartitionState<S> state) {
    return new PartitionStatus(partition,
        state.nextOffset() == PartitionState.NO_OFFSET ? OptionalLong.empty() : OptionalLong.of(state.nextOffset()),
        state.appliedRecords(), state.droppedByKey(), intake.droppedRedelivery(), state.windowSize(), incarnation,
        NodeName.get(ctx.getSystem()).value(), state.deadLettered());
  }

  /** The actor stopped, however: at-most-once effects not journaled are logged as lost. */
  void stopped() {
    atMostOnce.stopped();
  }

  @Override
  public void runAccepted(List<Inbound<?>> records) {
    ctx.getSelf().tell(new SelfCommand.RunAccepted(records));
  }

  @Override
  public void flushEffects(Duration delay, long generation) {
    ctx.scheduleOnce(delay, ctx.getSelf(), new SelfCommand.FlushEffects(generation));
  }

  @Override
  public void stop() {
    ctx.getSelf().tell(new PartitionCommand.Stop());
  }

  @Override
  public void windowRead(WindowImage image, CompletionStage<List<WindowSegment>> read, long started) {
    ctx.pipeToSelf(read, (segments, e) -> new SelfCommand.WindowRead(image, segments, e, started));
  }

  @Override
  public void callDone(CompletionStage<String> result, String callId, long offset, String key) {
    ctx.pipeToSelf(result, (outcome, failure) -> new SelfCommand.CallDone(callId, offset, key, outcome, failure));
  }
}
