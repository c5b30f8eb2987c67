package io.fencepost.internal.writepath;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.LongConsumer;

import io.fencepost.Effects;
import io.fencepost.Inbound;
import io.fencepost.errors.FatalException;
import io.fencepost.internal.BatchEvent;
import org.slf4j.Logger;

/**
 * At-most-once's effects between their offset write and their own. The handlers of records whose
 * offset is durable run here; their events and outbox records then wait, in memory, for the next
 * batch's offset write to carry them, or for a write of their own once
 * {@code at-most-once-linger} has passed. A busy partition so makes one journal write per batch
 * instead of two (a second write of its own would hold back the next batch).
 *
 * <p>A crash before the write loses them, as at-most-once promises. A write carrying them that fails
 * without committing hands them back ({@link #recovered}), because the state they were computed on is
 * still the partition's state; once anything else was written on that state they are lost, logged
 * by {@link #lose}. Every other loss is logged too, the actor's stop included ({@link #stopped}).
 *
 * <p>It also remembers an offset write that failed and was not in the journal when the actor
 * recovered ({@link #acceptFailed}): such a write can still commit late, and when a later write of
 * this incarnation collides with it, the actor must run that batch's handlers rather than take the
 * collision for another owner's write ({@link #lateCommit}). Used on the actor's thread only.
 */
final class AtMostOnceEffects<V, S, E> {

  private final UserHandlers<V, S, E> handlers;
  private final Logger log;
  private final String name;
  private CarriedEffects<S> carried;
  // Names one carried set, so that a flush timer set for an earlier one does nothing.
  private long generation;
  // The set the write in flight carries (null: none, or no write in flight).
  private CarriedEffects<S> inWrite;
  // Offset writes that failed and were not journaled at the recovery after each: any one of them may
  // still commit late (they all wait for the same sequence number), until a write commits.
  private final List<FailedAccept> failedAccepts = new ArrayList<>();

  /** An offset write whose failure left its records' handlers unrun. */
  record FailedAccept(long batchesBefore, long fromOffset, long nextOffset, List<Inbound<?>> records) {
    String describe() {
      return range(fromOffset, nextOffset - 1);
    }
  }

  static String range(long first, long last) {
    return "[" + first + ".." + last + "]";
  }

  private static String range(List<Inbound<?>> records) {
    return range(records.get(0).offset(), records.get(records.size() - 1).offset());
  }

  AtMostOnceEffects(UserHandlers<V, S, E> handlers, Logger log, String name) {
    this.handlers = handlers;
    this.log = log;
    this.name = name;
  }

  /**
   * Runs the handlers of accepted records on the state after {@code baseBatches} writes (or after the
   * effects already waiting here). A handler that throws loses its record, logged. Returns whether
   * this started a new set of waiting effects: the caller then sets a flush timer for
   * {@link #generation()}. When nothing waits afterwards (the handlers asked for no effect), the
   * timestamps of the records that ran go to {@code done}: their effects are complete now.
   */
  @SuppressWarnings("unchecked")
  boolean run(S state, long baseBatches, List<Inbound<?>> records, LongConsumer done) {
    boolean started = carried == null;
    CarriedEffects<S> into = started ? new CarriedEffects<>(baseBatches, state) : carried;
    S user = into.user;
    for (Inbound<?> raw : records) {
      Inbound<V> record = (Inbound<V>) raw;
      try {
        Effects<E> effects = handlers.onRecord(user, record);
        if (effects.hasCall()) {
          throw new FatalException("Effects.call is not supported in at-most-once mode (the outcome could not be "
              + "journaled before the offset); use exactly-once or at-least-once");
        }
        S next = user;
        for (E event : effects.events()) {
          next = handlers.applyEvent(next, event);
        }
        // Only a record whose handler and every applyEvent returned counts.
        user = next;
        into.ran(record);
        if (!effects.events().isEmpty() || !effects.outbox().isEmpty()) {
          into.events.addAll(effects.events());
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
      into.forEachTimestamp(done);   // nothing to write (a set that waits always has something)
      return false;
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
  CarriedEffects<S> take() {
    CarriedEffects<S> out = carried;
    carried = null;
    generation++;
    return out;
  }

  /** Whether a write carrying effects is in flight. */
  boolean inWrite() {
    return inWrite != null;
  }

  /** The write about to start carries {@code c} (null: nothing). */
  void writing(CarriedEffects<S> c) {
    inWrite = c;
  }

  /**
   * A write committed: what it carried is journaled (returned, or null), and no earlier failed write
   * can commit any more.
   */
  CarriedEffects<S> committed() {
    CarriedEffects<S> c = inWrite;
    inWrite = null;
    failedAccepts.clear();
    return c;
  }

  /** The journal refused the write in flight: what it carried is lost, logged; returns whether it carried any. */
  boolean refused(Throwable why) {
    CarriedEffects<S> c = inWrite;
    inWrite = null;
    if (c != null) {
      lose(c, "the journal refused the write carrying them: " + why);
    }
    return c != null;
  }

  /**
   * The offset write of {@code records} failed and recovery did not find it: the batch is resent,
   * but the write may still commit late, over the resend's or another write's sequence number.
   */
  void acceptFailed(BatchEvent event, long batchesBefore, List<Inbound<?>> records) {
    failedAccepts.add(new FailedAccept(batchesBefore, event.fromOffset(), event.nextOffset(), records));
  }

  /**
   * After a restart, on the recovered state ({@code batches} writes, the last by
   * {@code lastIncarnation}): the effects the failed write carried wait again when nothing was
   * written since they were computed, are done when that write committed after all, and are lost
   * otherwise (logged); waiting effects computed on another state are lost. Effects found journaled
   * go to {@code journaled}. Returns whether effects wait again (the caller sets a flush timer).
   */
  boolean recovered(long batches, String lastIncarnation, String incarnation,
      Consumer<CarriedEffects<S>> journaled) {
    if (carried != null && carried.baseBatches != batches) {
      lose(take(), "the partition recovered a state they were not computed on");
    }
    CarriedEffects<S> c = inWrite;
    inWrite = null;
    if (c == null) {
      return false;
    }
    if (batches == c.baseBatches) {
      if (carried != null) {   // not expected: handlers run only after a batch's write, which settles first
        lose(c, "other handlers ran before the failed write was settled");
        return false;
      }
      carried = c;
      generation++;
      return true;
    }
    if (batches > c.baseBatches + 1) {
      // The failed write may be among those entries (it committed late, before another incarnation's).
      log.warn("[{}] the effects of {} may be LOST (at-most-once, never retried): the write carrying them failed "
          + "and another incarnation wrote since; they are journaled only if that write committed late", name,
          c.describe());
    } else if (!incarnation.equals(lastIncarnation)) {
      lose(c, "another incarnation wrote first");
    } else {
      journaled.accept(c);   // the write that reported a failure committed after all
    }
    return false;
  }

  /**
   * This incarnation's failed offset write when the recovered state shows it committed late after all
   * (it is the journal's newest entry: the write in flight collided with it); null otherwise. Its
   * records' handlers have not run: the caller runs them.
   */
  FailedAccept lateCommit(long batches, long nextOffset, String lastIncarnation, String incarnation) {
    if (!incarnation.equals(lastIncarnation)) {
      return null;
    }
    for (FailedAccept f : failedAccepts) {
      if (batches == f.batchesBefore + 1 && nextOffset == f.nextOffset) {
        failedAccepts.clear();
        return f;
      }
    }
    return null;
  }

  /**
   * This incarnation stops taking batches, its partition written by another (fenced) or about to be:
   * an offset write that failed earlier may yet have committed, and then its handlers never ran.
   */
  void abandoned(String why) {
    for (FailedAccept f : failedAccepts) {
      log.warn("[{}] the offset write of {} failed earlier and may have committed late; if it did, its handlers "
          + "never ran and their effects are LOST (at-most-once): {}", name, f.describe(), why);
    }
    failedAccepts.clear();
  }

  /** Accepted records whose handlers will not run (this incarnation halted or lost its partition): logged. */
  void skipped(List<Inbound<?>> records, String why) {
    if (!records.isEmpty()) {
      log.warn("[{}] the handlers of offsets {} did not run: their effects are LOST (at-most-once, never "
          + "retried): {}", name, range(records), why);
    }
  }

  /**
   * The actor stopped (a Stop, a forced stop after the pipeline's stop-timeout, the system's end):
   * effects still waiting are lost, and those of a write that had not reported may be; both logged.
   */
  void stopped(int acceptedNotRun, List<Inbound<?>> unsettled) {
    if (unsettled != null && !unsettled.isEmpty()) {
      log.warn("[{}] the offset write of {} had not reported when the actor stopped; if it committed, its "
          + "handlers never ran and their effects are LOST (at-most-once)", name, range(unsettled));
    }
    abandoned("the actor stopped");
    if (carried != null) {
      lose(take(), "the actor stopped before they were written");
    }
    if (inWrite != null) {
      log.warn("[{}] the effects of {} may be LOST (at-most-once): the actor stopped before the write carrying "
          + "them reported", name, inWrite.describe());
      inWrite = null;
    }
    if (acceptedNotRun > 0) {
      log.warn("[{}] the handlers of {} accepted batch(es) did not run before the actor stopped: their effects "
          + "are LOST (at-most-once)", name, acceptedNotRun);
    }
  }

  /** Logs the loss of {@code c}'s effects: one WARN naming the offsets and why. */
  void lose(CarriedEffects<S> c, String why) {
    log.warn("[{}] the effects of {} LOST (at-most-once, never retried): {}", name, c.describe(), why);
  }
}
