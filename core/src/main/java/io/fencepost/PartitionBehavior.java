package io.fencepost;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;

import io.fencepost.errors.FatalException;
import io.fencepost.errors.FencepostException;
import io.fencepost.errors.HandlerFailedException;
import io.fencepost.errors.OffsetGapException;
import io.fencepost.errors.PartitionFencedException;
import io.fencepost.errors.RecordsParkedException;
import io.fencepost.errors.RetriableException;
import io.fencepost.internal.BatchEvent;
import io.fencepost.internal.CallOutcome;
import io.fencepost.internal.DeadLetterEntry;
import io.fencepost.internal.KeyDigest;
import io.fencepost.internal.KeyWindow;
import io.fencepost.internal.PartitionMetrics;
import io.fencepost.internal.PartitionState;
import io.fencepost.internal.UniqueKeyViolation;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.persistence.typed.JournalPersistFailed;
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

  private static final Comparator<Inbound<?>> BY_OFFSET = Comparator.comparingLong(Inbound::offset);
  private static final String CALL_TIMEOUT_KEY = PartitionActorSettings.CONFIG_PATH + ".external-call.timeout";

  private final ActorContext<PartitionCommand> ctx;
  private final PartitionContext pc;
  private final PartitionActor<V, S, E> actor;
  private final PartitionActorSettings settings;
  private final PartitionId partition;
  // The PartitionId instance the last batch's records carried (they share one per pipeline stream).
  private PartitionId lastCheckedPartition;
  // When the last batch write completed (a snapshot, if due, is stored right after it).
  private long lastWrittenNanos = System.nanoTime();
  private final String incarnation = UUID.randomUUID().toString();
  private final KeyDigest digest = new KeyDigest();
  private final long[] digestOut = new long[2];
  private final PartitionMetrics metrics;

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

  private long droppedRedelivery;
  private boolean statementLogged;
  private final long startedNanos = System.nanoTime();
  // Set when the journal refused the in-flight write on its unique key (counted and logged then).
  private boolean fencedByKey;
  // Set when this incarnation lost a write: it answers nothing more but "fenced" until it stops.
  private PartitionFencedException fenced;
  // The external call in flight (its id): while set, batches wait in the stash.
  private String callInFlight;
  // Calls that failed, by idempotency key: the stashed batch that asked for one is rejected with it.
  private final java.util.Map<String, Throwable> failedCalls = new java.util.HashMap<>();

  PartitionBehavior(ActorContext<PartitionCommand> ctx, PartitionContext pc, PartitionActor<V, S, E> actor) {
    super(PersistenceId.ofUniqueId(pc.partition().persistenceId()),
        SupervisorStrategy.restartWithBackoff(pc.settings().backoffMin(), pc.settings().backoffMax(),
            pc.settings().backoffRandomFactor()));
    this.ctx = ctx;
    this.pc = pc;
    this.actor = actor;
    this.settings = pc.settings();
    this.partition = pc.partition();
    this.metrics = new PartitionMetrics(partition.group(), partition.topic(), partition.partition());
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
    // Snapshots only. Events are never deleted: deletion frees sequence numbers, and a stale
    // incarnation could then commit into the freed range (see docs/guarantees.md).
    return RetentionCriteria.snapshotEvery(settings.snapshotEvery(), settings.keepSnapshots());
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
        PartitionState<S> stored = (PartitionState<S>) from;
        // Re-apply the current window bounds: settings may have changed since the snapshot.
        KeyWindow window = newWindow();
        if (window != null && stored.window() != null) {
          stored.window().forEach(window::add);
        }
        return new PartitionState<>(stored.user(), stored.nextOffset(), window, stored.lastIncarnation(),
            stored.appliedRecords(), stored.droppedByKey(), stored.batches(), stored.lastWriteMillis(),
            stored.deadLettered(), stored.parkedKeys(), stored.callOutcomes().values());
      }
    };
  }

  @Override
  public SignalHandler<PartitionState<S>> signalHandler() {
    return newSignalHandlerBuilder()
        .onSignal(RecoveryCompleted.instance(), this::onRecoveryCompleted)
        .onSignal(JournalPersistFailed.class, (state, failed) -> onPersistFailed(failed.getFailure()))
        .onSignal(RecoveryFailed.class, (state, failed) ->
            ctx.getLog().warn("[{}] recovery failed, retrying with backoff: {}", partition.shortName(),
                failed.getFailure().toString()))
        // The actor takes no command (and the batch that triggered it gets no reply) until its
        // snapshot is stored: a latency spike every snapshot-every writes (docs/operations.md).
        .onSignal(org.apache.pekko.persistence.typed.SnapshotCompleted.class, (state, done) ->
            ctx.getLog().debug("[{}] snapshot at sequence number [{}] stored {} ms after its write",
                partition.shortName(), done.metadata().sequenceNr(), (System.nanoTime() - lastWrittenNanos) / 1_000_000))
        .onSignal(org.apache.pekko.persistence.typed.SnapshotFailed.class, (state, failed) ->
            ctx.getLog().warn("[{}] snapshot at sequence number [{}] failed (recovery replays more events until the "
                + "next one succeeds): {}", partition.shortName(), failed.metadata().sequenceNr(),
                failed.getFailure().toString()))
        .build();
  }

  /**
   * A write failed. When the journal refused it on its unique (persistence id, sequence number) key,
   * another incarnation wrote that sequence number first: this one is fenced, and that is known now,
   * before the recovery that follows (which a node shutting down may never run).
   */
  private void onPersistFailed(Throwable failure) {
    if (!UniqueKeyViolation.in(failure, partition.persistenceId())) {
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

  private void onRecoveryCompleted(PartitionState<S> state) {
    if (!statementLogged) {
      statementLogged = true;
      // Part of every fail-over and assignment: how long this partition took to become ready.
      ctx.getLog().info("[{}] recovered in {} ms: next offset {}, sequence number {}", partition.shortName(),
          (System.nanoTime() - startedNanos) / 1_000_000,
          state.nextOffset() == PartitionState.NO_OFFSET ? "none stored" : Long.toString(state.nextOffset()),
          lastSequenceNumber(ctx));
      if (settings.deliveryMode() == DeliveryMode.AT_MOST_ONCE) {
        ctx.getLog().warn("[{}] runs AT-MOST-ONCE: a crash between the offset write and the effects loses "
            + "that batch's effects", partition.shortName());
      }
    }
    // A call of the incarnation before the restart is abandoned: its batch is resent and asks again.
    callInFlight = null;
    failedCalls.clear();
    boolean refusedByKey = fencedByKey;
    fencedByKey = false;
    if (pendingReplyTo != null) {
      resolvePending(state, refusedByKey);
    } else {
      clearPending();
      if (refusedByKey) {
        // A write without a waiting batch (at-most-once effects, a call outcome) lost to another
        // incarnation: this one stops; the next message starts a fresh incarnation on the winner's state.
        fenced = new PartitionFencedException(partition.entityId(), state.nextOffset(), state.nextOffset());
        ctx.getSelf().tell(new PartitionCommand.Stop());
      }
    }
    actor.callOnRecovered(state.user(), state.nextOffset());
  }

  /** After a failed write and a fresh recovery: decide what became of the in-flight batch. */
  private void resolvePending(PartitionState<S> state, boolean counted) {
    org.apache.pekko.actor.typed.ActorRef<BatchOutcome> replyTo = pendingReplyTo;
    BatchEvent event = pendingEvent;
    BatchOutcome.Applied outcome = pendingOutcome;
    long before = pendingBatchesBefore;
    clearPending();
    List<Inbound<?>> accepted = pendingAccepted;
    pendingAccepted = null;
    if (state.batches() > before && incarnation.equals(state.lastIncarnation())
        && state.nextOffset() >= event.nextOffset() && state.batches() == before + 1) {
      // The write committed although the journal reported a failure (e.g. a timeout).
      metrics.written(outcome.applied(), System.nanoTime() - pendingStartNanos);
      if (accepted != null) {
        ctx.getSelf().tell(new PartitionCommand.RunAccepted(accepted));
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
      replyTo.tell(new BatchOutcome.Rejected(partition, fenced));
      ctx.getSelf().tell(new PartitionCommand.Stop());
      return;
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
  }

  @Override
  public CommandHandler<PartitionCommand, BatchEvent, PartitionState<S>> commandHandler() {
    return newCommandHandlerBuilder().forAnyState()
        .onCommand(PartitionCommand.ApplyBatch.class, (state, cmd) ->
            callInFlight != null ? Effect().stash() : onApplyBatch(state, cmd))
        .onCommand(PartitionCommand.GetStatus.class, (state, cmd) -> {
          cmd.replyTo().tell(status(state));
          return Effect().none();
        })
        .onCommand(PartitionCommand.Stop.class, (state, cmd) -> Effect().stop())
        .onCommand(PartitionCommand.RunAccepted.class, (state, cmd) ->
            callInFlight != null ? Effect().stash() : onRunAccepted(state, cmd))
        .onCommand(PartitionCommand.CallDone.class, this::onCallDone)
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
    } else {
      user = state.user();
      for (Object e : event.events()) {
        user = actor.callApplyEvent(user, (E) e);
      }
    }
    return state.apply(event, user);
  }

  /** The records of a batch after dropping redeliveries, key duplicates and dead letters. */
  private final class Selection {
    final List<Inbound<V>> fresh = new ArrayList<>();
    final List<Long> freshDigests = new ArrayList<>();
    final List<DeadLetterEntry> deadLetters = new ArrayList<>();
    final List<String> unparked = new ArrayList<>();
    final List<Long> toPark = new ArrayList<>();
    long nextOffset;
    int droppedRedelivery;
    int droppedByKey;
  }

  @SuppressWarnings("unchecked")
  /**
   * Throws {@link OffsetGapException} when the batch lacks an offset between the stored next offset
   * and {@code coveredFrom} (see {@link PartitionCommand.ApplyBatch}): applying it would move the
   * fencing offset over records nobody applied. A partition without a stored offset starts at its
   * first batch's first offset when the sender vouches for it ({@code coveredFrom} at or below it).
   */
  private Selection select(PartitionState<S> state, List<Inbound<?>> records, List<DeadLetter> deadLetters,
      long coveredFrom) {
    // Usually a batch is records in ascending offsets without dead letters: taken as it is. Otherwise
    // ordered by offset, a dead letter replacing the record at its offset.
    boolean ascending = deadLetters.isEmpty();
    long previous = Long.MIN_VALUE;
    for (Inbound<?> raw : records) {
      checkPartition(raw.partition(), "record", raw.offset());
      ascending &= raw.offset() > previous;
      previous = raw.offset();
    }
    Collection<?> ordered = records;
    java.util.Map<Long, Inbound<?>> recordAt = java.util.Map.of();
    if (!ascending) {
      java.util.TreeMap<Long, Object> byOffset = new java.util.TreeMap<>();
      recordAt = new java.util.HashMap<>();
      for (Inbound<?> raw : records) {
        recordAt.put(raw.offset(), raw);
        byOffset.put(raw.offset(), raw);
      }
      for (DeadLetter d : deadLetters) {
        checkPartition(d.partition(), "dead letter", d.offset());
        byOffset.put(d.offset(), d);
      }
      ordered = byOffset.values();
    }
    Selection sel = new Selection();
    sel.nextOffset = state.nextOffset();
    Set<Digest> batchKeys = new HashSet<>(Math.max(16, records.size() * 2));
    KeyWindow window = state.window();
    java.util.Map<String, Long> parked = settings.perKeyOrdering() ? new java.util.HashMap<>(state.parkedKeys())
        : java.util.Map.of();
    long expected = state.nextOffset();   // the next offset the batch must hold, unless vouched for
    for (Object item : ordered) {
      long offset = item instanceof DeadLetter d ? d.offset() : ((Inbound<?>) item).offset();
      if (sel.nextOffset != PartitionState.NO_OFFSET && offset < sel.nextOffset) {
        sel.droppedRedelivery++;
        continue;
      }
      if (expected == PartitionState.NO_OFFSET ? coveredFrom > offset : offset > expected && expected < coveredFrom) {
        throw new OffsetGapException(partition.entityId(), state.nextOffset(),
            expected == PartitionState.NO_OFFSET ? 0 : expected, offset);
      }
      expected = offset + 1;
      if (item instanceof DeadLetter d) {
        boolean parksKey = settings.perKeyOrdering() && !d.parked() && d.key().isPresent();
        if (parksKey) {
          String k = d.key().get();
          Inbound<?> original = recordAt.get(d.offset());
          if (parked.containsKey(k) && original != null && replayOf(original) == parked.get(k)) {
            // The replay of the record that parked K failed again: K stays parked, now behind this
            // new dead letter (the one a later replay will carry).
            sel.unparked.add(k);
            parked.put(k, d.offset());
          } else {
            parked.putIfAbsent(k, d.offset());
          }
        }
        sel.deadLetters.add(new DeadLetterEntry(d.offset(), d.key().orElse(""), d.errorClass(), d.errorMessage(),
            d.attempts(), d.parked(), parksKey));
        sel.nextOffset = d.offset() + 1;
        continue;
      }
      Inbound<V> record = (Inbound<V>) item;
      if (!parked.isEmpty() && record.key().isPresent() && parked.containsKey(record.key().get())) {
        String k = record.key().get();
        long parkedBy = parked.get(k);
        if (replayOf(record) == parkedBy) {
          // The failed record itself is back (replayed): the key is free again, in order.
          parked.remove(k);
          sel.unparked.add(k);
        } else {
          sel.toPark.add(record.offset());
          continue;
        }
      }
      Optional<String> key = window == null ? Optional.empty() : actor.callBusinessKey(record);
      if (key.isPresent()) {
        digest.digest(key.get(), digestOut);
        Digest d = new Digest(digestOut[0], digestOut[1]);
        if (window.contains(d.hi, d.lo) || !batchKeys.add(d)) {
          sel.droppedByKey++;
          sel.nextOffset = record.offset() + 1;
          ctx.getLog().debug("[{}] offset [{}] dropped: business key [{}] already applied", partition.shortName(),
              record.offset(), key.get());
          continue;
        }
        sel.freshDigests.add(d.hi);
        sel.freshDigests.add(d.lo);
      }
      sel.fresh.add(record);
      sel.nextOffset = record.offset() + 1;
    }
    return sel;
  }

  private record Digest(long hi, long lo) {
  }

  /** Fails on an item of another partition; compares each distinct PartitionId instance once. */
  private void checkPartition(PartitionId of, String what, long offset) {
    if (of == lastCheckedPartition) {
      return;
    }
    if (!of.equals(partition)) {
      throw new FatalException("[" + partition.entityId() + "] received a " + what + " of another partition ["
          + of.entityId() + "] at offset [" + offset + "]; the pipeline routes wrongly");
    }
    lastCheckedPartition = of;
  }

  /** The original offset a replayed record stood at ({@code fencepost.replay-of} header), or -1. */
  private static long replayOf(Inbound<?> record) {
    return record.header("fencepost.replay-of").map(id -> {
      int dash = id.lastIndexOf('-');
      try {
        return Long.parseLong(id.substring(dash + 1));
      } catch (RuntimeException e) {
        return -1L;
      }
    }).orElse(-1L);
  }

  private ReplyEffect<BatchEvent, PartitionState<S>> onApplyBatch(PartitionState<S> state,
      PartitionCommand.ApplyBatch cmd) {
    if (fenced != null) {
      // Batches queued before the Stop must not be written by a losing incarnation.
      return Effect().reply(cmd.replyTo(), new BatchOutcome.Rejected(partition, fenced));
    }
    Selection sel;
    try {
      sel = select(state, cmd.records(), cmd.deadLetters(), cmd.coveredFrom());
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
    List<OutboxRecord> outbox = new ArrayList<>();
    for (Inbound<V> record : sel.fresh) {
      Effects<E> effects;
      try {
        effects = actor.callOnRecord(user, record);
        if (effects.hasCall()) {
          String key = actor.idempotencyKey(record);
          Throwable failed = failedCalls.remove(key);
          if (failed != null) {
            return Effect().reply(cmd.replyTo(), new BatchOutcome.Rejected(partition, callFailure(record, failed)));
          }
          CallOutcome stored = state.callOutcomes().get(key);
          if (stored == null) {
            // Make the call off the actor; this batch waits in the stash (with any that follow) until
            // its outcome is journaled, then runs again and finds the outcome.
            startCall(record, key, effects.call());
            return Effect().stash();
          }
          effects = effects.then(stored.outcome());
          if (effects.hasCall()) {
            throw new FatalException("the continuation of Effects.call asked for another call; one external "
                + "call per record");
          }
        }
      } catch (RuntimeException e) {
        // The events of earlier records were folded into a new state that is simply dropped (the
        // state is immutable: applyEvent returns a new one), so the actor goes on from its last write.
        return Effect().reply(cmd.replyTo(), new BatchOutcome.Rejected(partition, handlerFailure(record, e)));
      }
      for (E event : effects.events()) {
        user = actor.callApplyEvent(user, event);
        events.add(event);
      }
      outbox.addAll(effects.outbox());
    }
    BatchEvent event = new BatchEvent(incarnation, state.nextOffset(), sel.nextOffset, clock(state), events,
        toArray(sel.freshDigests), sel.fresh.size(), sel.droppedByKey, sel.deadLetters, sel.unparked, outbox,
        List.of());
    BatchOutcome.Applied outcome = new BatchOutcome.Applied(partition, sel.nextOffset, sel.fresh.size(),
        sel.droppedRedelivery, sel.droppedByKey, true, sel.deadLetters.size(), outbox.size());
    pendingRecords = sel.fresh;
    return persist(state, event, user, outcome, cmd.replyTo());
  }

  private ReplyEffect<BatchEvent, PartitionState<S>> acceptAtMostOnce(PartitionState<S> state,
      PartitionCommand.ApplyBatch cmd, Selection sel) {
    BatchEvent accept = new BatchEvent(incarnation, state.nextOffset(), sel.nextOffset, clock(state), List.of(),
        toArray(sel.freshDigests), sel.fresh.size(), sel.droppedByKey, sel.deadLetters, sel.unparked, List.of(),
        List.of());
    BatchOutcome.Applied outcome = new BatchOutcome.Applied(partition, sel.nextOffset, sel.fresh.size(),
        sel.droppedRedelivery, sel.droppedByKey, true, sel.deadLetters.size(), 0);
    List<Inbound<?>> accepted = List.copyOf(sel.fresh);
    pendingRecords = accepted;
    pendingAccepted = accepted;
    pendingEvent = accept;
    pendingUserState = state.user();
    pendingOutcome = outcome;
    pendingReplyTo = cmd.replyTo();
    pendingBatchesBefore = state.batches();
    pendingStartNanos = System.nanoTime();
    return Effect().persist(accept)
        .thenRun(s -> {
          written(outcome);
          pendingAccepted = null;
          // Second step: effects after the offset is durable. A crash before it completes loses them.
          ctx.getSelf().tell(new PartitionCommand.RunAccepted(accepted));
        })
        .thenReply(cmd.replyTo(), s -> outcome);
  }

  @SuppressWarnings("unchecked")
  private Effect<BatchEvent, PartitionState<S>> onRunAccepted(PartitionState<S> state,
      PartitionCommand.RunAccepted cmd) {
    S user = state.user();
    List<Object> events = new ArrayList<>();
    List<OutboxRecord> outbox = new ArrayList<>();
    for (Inbound<?> raw : cmd.records()) {
      Inbound<V> record = (Inbound<V>) raw;
      try {
        Effects<E> effects = actor.callOnRecord(user, record);
        if (effects.hasCall()) {
          throw new FatalException("Effects.call is not supported in at-most-once mode (the outcome could not be "
              + "journaled before the offset); use exactly-once or at-least-once");
        }
        for (E event : effects.events()) {
          user = actor.callApplyEvent(user, event);
          events.add(event);
        }
        outbox.addAll(effects.outbox());
      } catch (RuntimeException e) {
        ctx.getLog().warn("[{}] offset [{}] LOST (at-most-once, never retried): handler failed: {}",
            partition.shortName(), record.offset(), e.toString());
      }
    }
    if (events.isEmpty() && outbox.isEmpty()) {
      return Effect().none();
    }
    BatchEvent effects = new BatchEvent(incarnation, state.nextOffset(), state.nextOffset(), clock(state), events,
        new long[0], 0, 0, List.of(), List.of(), outbox, List.of());
    pendingEvent = effects;
    pendingUserState = user;
    return Effect().persist(effects).thenRun(s -> {
      pendingEvent = null;
      pendingUserState = null;
    });
  }

  private ReplyEffect<BatchEvent, PartitionState<S>> persist(PartitionState<S> state, BatchEvent event, S user,
      BatchOutcome.Applied outcome, org.apache.pekko.actor.typed.ActorRef<BatchOutcome> replyTo) {
    pendingEvent = event;
    pendingUserState = user;
    pendingOutcome = outcome;
    pendingReplyTo = replyTo;
    pendingBatchesBefore = state.batches();
    pendingStartNanos = System.nanoTime();
    return Effect().persist(event)
        .thenRun(s -> written(outcome))
        .thenReply(replyTo, s -> outcome);
  }

  private void written(BatchOutcome.Applied outcome) {
    lastWrittenNanos = System.nanoTime();
    metrics.written(outcome.applied(), System.nanoTime() - pendingStartNanos);
    long now = System.currentTimeMillis();
    for (Inbound<?> record : pendingRecords) {
      metrics.durable(record.timestamp().toEpochMilli(), now);
    }
    clearPending();
  }

  /** Runs an external call on the blocking dispatcher; its outcome comes back as {@code CallDone}. */
  private void startCall(Inbound<V> record, String key, ExternalCall call) {
    String callId = UUID.randomUUID().toString();
    callInFlight = callId;
    long offset = record.offset();
    java.util.concurrent.Executor blocking = ctx.getSystem().dispatchers().lookup(DispatcherSelector.blocking());
    java.util.concurrent.CompletableFuture<String> result = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
      try {
        return Objects.requireNonNull(call.call(key), "the external call returned null; return an outcome text");
      } catch (RuntimeException e) {
        throw e;
      } catch (Exception e) {
        throw new java.util.concurrent.CompletionException(e);
      }
    }, blocking).orTimeout(settings.callTimeout().toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
    ctx.getLog().debug("[{}] offset [{}]: external call with idempotency key [{}]", partition.shortName(), offset,
        key);
    ctx.pipeToSelf(result, (outcome, failure) -> new PartitionCommand.CallDone(callId, offset, key, outcome, failure));
  }

  /** Journals a call's outcome (the offset does not move), then lets the waiting batch run again. */
  private Effect<BatchEvent, PartitionState<S>> onCallDone(PartitionState<S> state, PartitionCommand.CallDone done) {
    if (!done.callId().equals(callInFlight)) {
      return Effect().none();   // a call abandoned by a restart
    }
    callInFlight = null;
    if (done.failure() != null) {
      failedCalls.put(done.key(), done.failure());
      return Effect().unstashAll();
    }
    BatchEvent outcome = BatchEvent.callOutcomes(incarnation, state.nextOffset(), clock(state),
        List.of(new CallOutcome(done.offset(), done.key(), done.outcome())));
    return Effect().persist(outcome).thenUnstashAll();
  }

  private FencepostException callFailure(Inbound<V> record, Throwable failure) {
    Throwable cause = failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null
        ? failure.getCause() : failure;
    boolean retriable = cause instanceof FencepostException fe ? fe.isRetriable()
        : cause instanceof java.io.IOException || cause instanceof java.util.concurrent.TimeoutException;
    String message = cause instanceof java.util.concurrent.TimeoutException
        ? "external call took longer than " + CALL_TIMEOUT_KEY + " [" + settings.callTimeout() + "]"
        : "external call failed: " + cause.getMessage();
    return new HandlerFailedException(partition.entityId(), record.offset(), retriable, cause.getClass().getName(),
        message, cause);
  }

  private FencepostException handlerFailure(Inbound<V> record, RuntimeException e) {
    boolean retriable = e instanceof FencepostException fe && fe.isRetriable();
    return new HandlerFailedException(partition.entityId(), record.offset(), retriable, e.getClass().getName(),
        e.getMessage(), e);
  }

  /** Monotonic per partition, so the key window's clock never runs backwards across nodes. */
  private static long clock(PartitionState<?> state) {
    return Math.max(System.currentTimeMillis(), state.lastWriteMillis());
  }

  private static long[] toArray(List<Long> values) {
    long[] out = new long[values.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = values.get(i);
    }
    return out;
  }
}
