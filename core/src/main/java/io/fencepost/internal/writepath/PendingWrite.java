package io.fencepost.internal.writepath;

import java.util.List;

import io.fencepost.BatchOutcome;
import io.fencepost.Inbound;
import io.fencepost.internal.BatchEvent;
import io.fencepost.internal.PartitionMetrics;
import io.fencepost.internal.PartitionState;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * The journal write in flight, or the one that failed and awaits the recovery's verdict: the entry,
 * the user state it leads to, and for a batch's write the reply it owes. One per actor incarnation,
 * used on the actor's thread only; empty between writes.
 */
public final class PendingWrite<S> {

  private BatchEvent event;
  private S user;
  private BatchOutcome.Applied outcome;
  private ActorRef<BatchOutcome> replyTo;
  private long batchesBefore;
  private long startNanos;
  // The records of the batch, for the end-to-end latency metric once it is durable.
  private List<? extends Inbound<?>> records = List.of();
  // For each event, the offset of the record that produced it (to name the record whose event the journal refuses).
  private long[] eventOffsets = new long[0];
  // at-most-once: the records whose handlers run once the offset write is durable
  private List<Inbound<?>> accepted;

  /**
   * A batch's write starts: {@code records} count for the latency metric when it is durable,
   * {@code accepted} (at-most-once, else null) run their handlers then.
   */
  public void startBatch(PartitionState<S> state, BatchEvent event, S user, BatchOutcome.Applied outcome,
      ActorRef<BatchOutcome> replyTo, List<? extends Inbound<?>> records, long[] eventOffsets,
      List<Inbound<?>> accepted) {
    this.event = event;
    this.user = user;
    this.outcome = outcome;
    this.replyTo = replyTo;
    this.batchesBefore = state.batches();
    this.startNanos = System.nanoTime();
    this.records = records;
    this.eventOffsets = eventOffsets;
    this.accepted = accepted;
  }

  /** A write that no batch waits for (at-most-once effects written alone) starts. */
  public void startUnbatched(BatchEvent event, S user) {
    clear();
    this.event = event;
    this.user = user;
  }

  /** Forgets the write: it is settled. */
  public void clear() {
    event = null;
    user = null;
    outcome = null;
    replyTo = null;
    records = List.of();
    eventOffsets = new long[0];
    accepted = null;
  }

  /** The write committed as it reported: its metrics, then it is forgotten. */
  public void written(PartitionMetrics metrics) {
    metrics.written(outcome.applied(), outcome.deadLettered(), System.nanoTime() - startNanos);
    long now = System.currentTimeMillis();
    for (Inbound<?> record : records) {
      metrics.durable(record.timestamp().toEpochMilli(), now);
    }
    clear();
  }

  /** Whether {@code e} is the entry of this write (a live write, not a replay). */
  public boolean isLive(BatchEvent e) {
    return e == event;
  }

  /** Whether a batch waits for this write's reply. */
  public boolean awaited() {
    return replyTo != null;
  }

  public BatchEvent event() {
    return event;
  }

  public S user() {
    return user;
  }

  BatchOutcome.Applied outcome() {
    return outcome;
  }

  ActorRef<BatchOutcome> replyTo() {
    return replyTo;
  }

  long batchesBefore() {
    return batchesBefore;
  }

  long startNanos() {
    return startNanos;
  }

  long[] eventOffsets() {
    return eventOffsets;
  }

  List<Inbound<?>> accepted() {
    return accepted;
  }
}
