package io.fencepost.internal.writepath;

import java.util.List;

import io.fencepost.BatchOutcome;
import io.fencepost.Inbound;
import io.fencepost.PartitionId;
import io.fencepost.errors.HandlerFailedException;
import io.fencepost.errors.PartitionFencedException;
import io.fencepost.errors.RetriableException;
import io.fencepost.errors.PartitionHaltedException;
import io.fencepost.internal.BatchEvent;
import io.fencepost.internal.JournalFenceRefusal;
import io.fencepost.internal.PartitionMetrics;
import io.fencepost.internal.PartitionState;
import io.fencepost.internal.UniqueKeyViolation;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.serialization.Serialization;
import org.slf4j.Logger;

/**
 * The verdict on a write that did not report success: refused by the journal, failed, or committed
 * late. A failed write restarts the actor with backoff (same object, so the write in flight is
 * remembered) and recovers; the recovered journal then tells what happened: this incarnation's own
 * entry is there (the write committed after all: success), another incarnation's is (fenced: nothing
 * applied, stop), or nothing new (journal failure: the batch is resent). Used on the actor's thread
 * only.
 */
public final class WriteVerdicts<S> {

  private final PartitionId partition;
  private final String incarnation;
  private final PendingWrite<S> pending;
  private final Standing standing;
  private final AtMostOncePath<?, S, ?> atMostOnce;
  private final SelfMessages self;
  private final PartitionMetrics metrics;
  private final Serialization serialization;
  private final Logger log;
  // Set when the journal refused the in-flight write on its unique key (counted and logged then).
  private boolean fencedByKey;

  public WriteVerdicts(PartitionId partition, String incarnation, PendingWrite<S> pending, Standing standing,
      AtMostOncePath<?, S, ?> atMostOnce, SelfMessages self, PartitionMetrics metrics, Serialization serialization,
      Logger log) {
    this.partition = partition;
    this.incarnation = incarnation;
    this.pending = pending;
    this.standing = standing;
    this.atMostOnce = atMostOnce;
    this.self = self;
    this.metrics = metrics;
    this.serialization = serialization;
    this.log = log;
  }

  /**
   * A write failed. When the journal refused it on its unique (persistence id, sequence number) key,
   * another incarnation wrote that sequence number first: this one is fenced, and that is known now,
   * before the recovery that follows (which a node shutting down may never run).
   */
  public void failed(Throwable failure) {
    String moved = JournalFenceRefusal.in(failure, partition.persistenceId()).orElse(null);
    if (moved != null) {
      haltMoved(moved, failure);
      return;
    }
    if (!UniqueKeyViolation.in(failure, partition.persistenceId())) {
      log.warn("[{}] journal write failed; the actor recovers (with backoff) and the batch is resent: {}{}",
          partition.shortName(), failure, failure.getCause() == null ? "" : " (" + failure.getCause() + ")");
      return;
    }
    fencedByKey = true;
    metrics.fenced();
    String what = pending.event() != null && pending.awaited()
        ? "write of offsets [" + pending.event().fromOffset() + ".." + (pending.event().nextOffset() - 1) + "]"
        : "write";
    log.warn("[{}] [{}] fenced: the journal refused this incarnation's {} on its unique key: another "
        + "incarnation wrote the same sequence number first. Nothing of it was applied; the actor recovers the "
        + "other's write and stops.", partition.shortName(), partition.qualifiedName(), what);
  }

  /**
   * The database refused the write because a journal move took this partition's history to another
   * database: this node writes with an old list of databases. Nothing was applied; resending would be
   * refused forever, so the partition halts (the batch waiting for the write and every later one are
   * refused with that) until the node is restarted on the list the databases record.
   */
  private void haltMoved(String refusal, Throwable failure) {
    PartitionHaltedException halted = standing.halt("journal-moved", "the journal database refused this "
        + "partition's write: " + refusal + ". Nothing of it was applied. This node writes with an old list of "
        + "journal databases (a journal move ran while it was running): stop it, and start it with the list the "
        + "databases record", failure);
    atMostOnce.effects().abandoned("the partition's history moved to another journal database");
    if (pending.awaited()) {
      ActorRef<BatchOutcome> replyTo = pending.replyTo();
      pending.clear();
      replyTo.tell(new BatchOutcome.Rejected(partition, halted));
    } else {
      pending.clear();
    }
  }

  /**
   * The journal refused a write (it never commits; the actor stops after this signal). Usually one
   * record's event cannot be serialized: that record is named, so the pipeline dead-letters it and
   * resends the rest. When no single event is at fault the partition halts rather than loop.
   */
  public void refused(Throwable failure) {
    if (atMostOnce.effects().refused(failure)) {
      if (pending.awaited()) {
        // The batch whose offset write carried them is resent without them.
        ActorRef<BatchOutcome> replyTo = pending.replyTo();
        BatchEvent event = pending.event();
        pending.clear();
        replyTo.tell(new BatchOutcome.Rejected(partition, new RetriableException("[" + partition.qualifiedName()
            + "] the journal refused the write of " + event.describeOffsets() + ", which carried the at-most-once "
            + "effects of an earlier batch (lost, logged); resend the batch")));
      }
      return;
    }
    if (!pending.awaited()) {
      log.error("[{}] the journal refused a write without a waiting batch ({}): {}", partition.shortName(),
          pending.event() != null ? "at-most-once effects, LOST" : "an external call's outcome; its batch calls again",
          failure.toString());
      return;
    }
    BatchEvent event = pending.event();
    ActorRef<BatchOutcome> replyTo = pending.replyTo();
    long[] offsets = pending.eventOffsets();
    pending.clear();
    for (int i = 0; i < event.events().size(); i++) {
      Object e = event.events().get(i);
      try {
        serialization.findSerializerFor(e).toBinary(e);
      } catch (Exception refused) {   // NotSerializableException is thrown unchecked
        log.warn("[{}] the journal refused the write of {}: the event {} of offset [{}] "
            + "cannot be serialized: {}", partition.shortName(), event.describeOffsets(),
            e.getClass().getName(), offsets[i], refused.toString());
        replyTo.tell(new BatchOutcome.Rejected(partition, new HandlerFailedException(partition.qualifiedName(), offsets[i],
            false, refused.getClass().getName(), "the journal cannot store its event " + e.getClass().getName()
            + " (bind a serializer for it in pekko.actor.serialization-bindings): " + refused.getMessage(), refused)));
        return;
      }
    }
    replyTo.tell(new BatchOutcome.Rejected(partition, standing.halt("journal-rejected", "the journal refused the "
        + "write of " + event.describeOffsets() + " (" + failure + ") and no single "
        + "record's event fails to serialize, so no record can be dead-lettered for it. Nothing of it was applied; "
        + "fix the cause and restart the node", failure)));
  }

  /** After every recovery (the first, and each after a failed write): what became of the write in flight. */
  public void recovered(PartitionState<S> state) {
    boolean refusedByKey = fencedByKey;
    fencedByKey = false;
    atMostOnce.recovered(state);
    if (lateCommit(state)) {
      refusedByKey = false;   // the write in flight collided with this incarnation's own late write
    }
    atMostOnce.resendStop();
    if (pending.awaited()) {
      resolve(state, refusedByKey);
    } else {
      pending.clear();
      if (refusedByKey) {
        // A write without a waiting batch (at-most-once effects, a call outcome) lost to another
        // incarnation: this one stops; the next message starts a fresh incarnation on the winner's state.
        standing.fence(new PartitionFencedException(partition.qualifiedName(), state.nextOffset(), state.nextOffset()));
        atMostOnce.effects().abandoned("another incarnation wrote first");
        self.stop();
      }
    }
  }

  /**
   * at-most-once: an offset write of this incarnation that failed, and was not in the journal at the
   * recovery after it, committed late (the write in flight met it on the unique key). That batch's
   * handlers run now; a batch waiting for the write in flight is resent (its records below the
   * late write's next offset are then dropped as redeliveries). Returns whether it happened.
   */
  private boolean lateCommit(PartitionState<S> state) {
    AtMostOnceEffects.FailedAccept late = atMostOnce.effects().lateCommit(state.batches(), state.nextOffset(),
        state.lastIncarnation(), incarnation);
    if (late == null) {
      return false;
    }
    log.warn("[{}] the offset write of {}, which had failed, committed late (the unique-key refusal before "
        + "this was that write, not another owner's): its handlers run now", partition.shortName(), late.describe());
    if (!late.records().isEmpty()) {
      atMostOnce.runLater(late.records());
    }
    if (pending.awaited()) {
      pending.replyTo().tell(new BatchOutcome.Rejected(partition, new RetriableException("[" + partition.qualifiedName()
          + "] an earlier write of this partition committed late, up to offset " + (state.nextOffset() - 1)
          + "; resend the batch")));
    }
    pending.clear();
    return true;
  }

  /** After a failed write and a fresh recovery: decide what became of the in-flight batch. */
  private void resolve(PartitionState<S> state, boolean counted) {
    ActorRef<BatchOutcome> replyTo = pending.replyTo();
    BatchEvent event = pending.event();
    BatchOutcome.Applied outcome = pending.outcome();
    long before = pending.batchesBefore();
    long startNanos = pending.startNanos();
    List<Inbound<?>> accepted = pending.accepted();
    pending.clear();
    if (state.batches() > before && incarnation.equals(state.lastIncarnation())
        && state.nextOffset() >= event.nextOffset() && state.batches() == before + 1) {
      // The write committed although the journal reported a failure (e.g. a timeout).
      metrics.written(outcome.applied(), outcome.deadLettered(), System.nanoTime() - startNanos);
      if (accepted != null) {
        atMostOnce.runLater(accepted);
      }
      replyTo.tell(outcome);
      return;
    }
    if (state.batches() > before) {
      PartitionFencedException fenced =
          new PartitionFencedException(partition.qualifiedName(), event.fromOffset(), state.nextOffset());
      if (counted) {
        log.debug("[{}] {}", partition.shortName(), fenced.getMessage());
      } else {
        metrics.fenced();
        log.warn("[{}] {}", partition.shortName(), fenced.getMessage());
      }
      standing.fence(fenced);
      if (accepted != null && !counted && state.batches() > before + 1) {
        // Not refused by the key, and another write came after the entry it would have taken: it may
        // be that entry, committed late.
        atMostOnce.effects().acceptFailed(event, before, accepted);
      }
      atMostOnce.effects().abandoned("another incarnation wrote first");
      replyTo.tell(new BatchOutcome.Rejected(partition, fenced));
      self.stop();
      return;
    }
    if (accepted != null) {
      atMostOnce.effects().acceptFailed(event, before, accepted);
    }
    replyTo.tell(new BatchOutcome.Rejected(partition, new RetriableException("[" + partition.qualifiedName()
        + "] journal write of offsets [" + event.fromOffset() + ".." + (event.nextOffset() - 1)
        + "] failed and was not in the journal when the actor recovered; resend the batch (the actor is ready; if "
        + "the failed write still commits late, the resend is fenced by it and its records dropped as redeliveries)")));
  }
}
