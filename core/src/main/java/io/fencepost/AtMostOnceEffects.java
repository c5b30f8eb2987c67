package io.fencepost;

import java.util.ArrayList;
import java.util.List;

import io.fencepost.errors.FatalException;
import org.slf4j.Logger;

/**
 * At-most-once's effects between their offset write and their own. The handlers of records whose
 * offset is durable run here; their events and outbox records then wait, in memory, for the next
 * batch's offset write to carry them, or for a write of their own once
 * {@code at-most-once-linger} has passed. A busy partition so makes one journal write per batch
 * instead of two (the second write used to hold back the next batch).
 *
 * <p>A crash before the write loses them, as at-most-once promises. A write carrying them that fails
 * without committing hands them back ({@link #restore}), because the state they were computed on is
 * still the partition's state; once anything else was written on that state they are lost, logged
 * by {@link #lose}. Used on the actor's thread only.
 */
final class AtMostOnceEffects<V, S, E> {

  /**
   * Effects of handlers that ran and are not journaled yet: the user state they lead to, computed on
   * the state after {@code baseBatches} journal writes, and the offsets of the records they came from.
   */
  static final class Carried<S> {
    private final long baseBatches;
    private S user;
    private final List<Object> events = new ArrayList<>();
    private final List<OutboxRecord> outbox = new ArrayList<>();
    private long firstOffset = -1;
    private long lastOffset = -1;

    private Carried(long baseBatches, S user) {
      this.baseBatches = baseBatches;
      this.user = user;
    }

    long baseBatches() {
      return baseBatches;
    }

    S user() {
      return user;
    }

    List<Object> events() {
      return events;
    }

    List<OutboxRecord> outbox() {
      return outbox;
    }

    String describe() {
      return "offsets [" + firstOffset + ".." + lastOffset + "] (" + events.size() + " events, " + outbox.size()
          + " outbox records)";
    }
  }

  private final PartitionActor<V, S, E> actor;
  private final Logger log;
  private final String name;
  private Carried<S> carried;
  // Names one carried set, so that a flush timer set for an earlier one does nothing.
  private long generation;

  AtMostOnceEffects(PartitionActor<V, S, E> actor, Logger log, String name) {
    this.actor = actor;
    this.log = log;
    this.name = name;
  }

  /**
   * Runs the handlers of accepted records on the state after {@code baseBatches} writes (or after the
   * effects already waiting here). A handler that throws loses its record, logged. Returns whether
   * this started a new set of waiting effects: the caller then sets a flush timer for
   * {@link #generation()}.
   */
  @SuppressWarnings("unchecked")
  boolean run(S state, long baseBatches, List<Inbound<?>> records) {
    boolean started = carried == null;
    Carried<S> into = started ? new Carried<>(baseBatches, state) : carried;
    S user = into.user;
    for (Inbound<?> raw : records) {
      Inbound<V> record = (Inbound<V>) raw;
      try {
        Effects<E> effects = actor.callOnRecord(user, record);
        if (effects.hasCall()) {
          throw new FatalException("Effects.call is not supported in at-most-once mode (the outcome could not be "
              + "journaled before the offset); use exactly-once or at-least-once");
        }
        S next = user;
        List<Object> events = new ArrayList<>(effects.events().size());
        for (E event : effects.events()) {
          next = actor.callApplyEvent(next, event);
          events.add(event);
        }
        // Only a record whose handler and every applyEvent returned counts.
        user = next;
        if (!events.isEmpty() || !effects.outbox().isEmpty()) {
          into.events.addAll(events);
          into.outbox.addAll(effects.outbox());
          into.firstOffset = into.firstOffset < 0 ? record.offset() : into.firstOffset;
          into.lastOffset = record.offset();
        }
      } catch (RuntimeException e) {
        log.warn("[{}] offset [{}] LOST (at-most-once, never retried): handler failed: {}", name, record.offset(),
            e.toString());
      }
    }
    into.user = user;
    if (into.events.isEmpty() && into.outbox.isEmpty()) {
      return false;   // nothing to write
    }
    if (started) {
      carried = into;
      generation++;
    }
    return started;
  }

  /** Whether effects wait for a write. */
  boolean waiting() {
    return carried != null;
  }

  /** The waiting set's name, for its flush timer. */
  long generation() {
    return generation;
  }

  /** The waiting effects, handed to a write (null when none wait); nothing waits afterwards. */
  Carried<S> take() {
    Carried<S> out = carried;
    carried = null;
    generation++;
    return out;
  }

  /**
   * A write carrying {@code c} failed without committing and the state they were computed on is
   * the partition's state again: they wait again, before any that ran since (none can have: the
   * handlers of the next batch run only after its own write). Returns whether a flush timer is needed.
   */
  boolean restore(Carried<S> c) {
    if (carried != null) {
      lose(c, "handlers ran again before the failed write was settled");
      return false;
    }
    carried = c;
    generation++;
    return true;
  }

  /** The partition recovered on {@code batches} writes: waiting effects computed on another state are lost. */
  void recovered(long batches) {
    if (carried != null && carried.baseBatches != batches) {
      lose(take(), "the partition recovered a state they were not computed on");
    }
  }

  /** Logs the loss of {@code c}'s effects: one WARN naming the offsets and why. */
  void lose(Carried<S> c, String why) {
    log.warn("[{}] the effects of {} LOST (at-most-once, never retried): {}", name, c.describe(), why);
  }
}
