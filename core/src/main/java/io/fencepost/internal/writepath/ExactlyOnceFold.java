package io.fencepost.internal.writepath;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import io.fencepost.BatchOutcome;
import io.fencepost.Effects;
import io.fencepost.Inbound;
import io.fencepost.OutboxRecord;
import io.fencepost.PartitionId;
import io.fencepost.errors.FatalException;
import io.fencepost.errors.FencepostException;
import io.fencepost.internal.BatchEvent;
import io.fencepost.internal.CallOutcome;
import io.fencepost.internal.PartitionState;
import io.fencepost.internal.WindowClock;

/**
 * The exactly-once (and at-least-once) fold: each new record's handler runs on the state after the
 * records before it, and the batch becomes one journal entry holding its events, outbox records,
 * dead letters, new keys and next offset. Nothing is applied before the entry is written: the folded
 * state is a tentative one, dropped when the batch is refused. A record whose handler asks for an
 * external call makes the batch wait for the call's outcome to be journaled. Used on the actor's
 * thread only.
 */
public final class ExactlyOnceFold<V, S, E> {

  /** What became of a batch's fold: refused, waiting for an external call, or an entry to write. */
  public static final class Folded<S> {
    private final FencepostException refusal;
    private final BatchEvent event;
    private final S user;
    private final BatchOutcome.Applied outcome;
    private final long[] eventOffsets;

    private Folded(FencepostException refusal, BatchEvent event, S user, BatchOutcome.Applied outcome,
        long[] eventOffsets) {
      this.refusal = refusal;
      this.event = event;
      this.user = user;
      this.outcome = outcome;
      this.eventOffsets = eventOffsets;
    }

    /** Why the batch is refused, or null. */
    public FencepostException refusal() {
      return refusal;
    }

    /** Whether the batch waits (stashed) for an external call made now. */
    public boolean awaitsCall() {
      return refusal == null && event == null;
    }

    /** The journal entry to write. */
    public BatchEvent event() {
      return event;
    }

    /** The user state once the entry is written. */
    public S user() {
      return user;
    }

    /** The reply once the entry is written. */
    public BatchOutcome.Applied outcome() {
      return outcome;
    }

    /** For each event of the entry, the offset of the record that produced it. */
    public long[] eventOffsets() {
      return eventOffsets;
    }
  }

  private final PartitionId partition;
  private final String incarnation;
  private final UserHandlers<V, S, E> handlers;
  private final ExternalCalls calls;
  private final WindowClock clock;

  public ExactlyOnceFold(PartitionId partition, String incarnation, UserHandlers<V, S, E> handlers,
      ExternalCalls calls, WindowClock clock) {
    this.partition = partition;
    this.incarnation = incarnation;
    this.handlers = handlers;
    this.calls = calls;
    this.clock = clock;
  }

  /** Folds the new records of {@code sel} into {@code state}. */
  public Folded<S> fold(PartitionState<S> state, BatchSelector.Selection<V> sel) {
    S user = state.user();
    List<Object> events = new ArrayList<>();
    long[] eventOffsets = new long[Math.max(8, sel.fresh.size())];
    List<OutboxRecord> outbox = new ArrayList<>();
    for (Inbound<V> record : sel.fresh) {
      Effects<E> effects;
      try {
        effects = handlers.onRecord(user, record);
        if (effects.hasCall()) {
          String key = handlers.idempotencyKey(record);
          FencepostException failed = calls.takeFailure(record, key);
          if (failed != null) {
            return new Folded<>(failed, null, null, null, null);
          }
          CallOutcome stored = state.callOutcomes().get(key);
          if (stored == null) {
            // Make the call off the actor; this batch waits in the stash (with any that follow) until
            // its outcome is journaled, then runs again and finds the outcome.
            calls.start(record, key, handlers.callOf(effects));
            return new Folded<>(null, null, null, null, null);
          }
          effects = handlers.afterCall(effects, stored.outcome());
          if (effects.hasCall()) {
            throw new FatalException("the continuation of Effects.call asked for another call; one external "
                + "call per record");
          }
        }
        for (E event : effects.events()) {
          user = handlers.applyEvent(user, event);
          if (events.size() == eventOffsets.length) {
            eventOffsets = Arrays.copyOf(eventOffsets, eventOffsets.length * 2);
          }
          eventOffsets[events.size()] = record.offset();
          events.add(event);
        }
      } catch (RuntimeException e) {
        // onRecord, businessKey or applyEvent threw. The events of earlier records were folded into a
        // new state that is simply dropped (the state is immutable: applyEvent returns a new one), so
        // the actor goes on from its last write; the pipeline retries or dead-letters this record.
        return new Folded<>(BatchSelector.handlerFailure(partition.qualifiedName(), record.offset(), e), null, null, null,
            null);
      }
      outbox.addAll(effects.outbox());
    }
    BatchEvent event = new BatchEvent(incarnation, state.nextOffset(), sel.nextOffset, clock.now(state.lastWriteMillis()), events,
        sel.freshDigests(), sel.fresh.size(), sel.droppedByKey, sel.deadLetters, sel.unparked, outbox,
        List.of(), toArray(sel.replayed));
    BatchOutcome.Applied outcome = new BatchOutcome.Applied(partition, sel.nextOffset, sel.fresh.size(),
        sel.droppedRedelivery, sel.droppedByKey, true, sel.deadLetters.size(), outbox.size());
    return new Folded<>(null, event, user, outcome, eventOffsets);
  }

  static long[] toArray(List<Long> values) {
    long[] out = new long[values.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = values.get(i);
    }
    return out;
  }
}
