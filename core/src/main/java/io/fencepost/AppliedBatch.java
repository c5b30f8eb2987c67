package io.fencepost;

import java.time.Instant;
import java.util.List;
import java.util.Optional;

import io.fencepost.annotation.InternalApi;
import io.fencepost.internal.BatchEvent;

/**
 * A read-only view of one journal entry a partition actor wrote: the events of one batch and the
 * offsets it moved over. For tools that read the journal directly (reconciliation, projections);
 * obtain it from a Pekko persistence query envelope with {@link #from(Object)}.
 *
 * @param fromOffset the partition's next offset before the batch
 * @param nextOffset the partition's next offset after it ({@code fromOffset} for at-most-once's
 *     effects-only write and for external calls' outcomes; below {@code fromOffset} for an
 *     operator's reset back, {@link OffsetReset}, an entry without events)
 * @param events the user's events, in order. In at-most-once mode they are the effects of earlier
 *     batches (whose offsets were written before), not of the records between {@code fromOffset}
 *     and {@code nextOffset}
 * @param incarnation the id of the actor incarnation that wrote it
 * @param writtenAt the partition's clock at the write: the first write's wall clock, advanced since by
 *     the time owners ran (see docs/guarantees.md, the business-key window); behind wall time by
 *     the time nobody owned the partition
 * @param applied how many records ran their handler
 * @param droppedByKey how many records were dropped by business key
 * @param deadLetters the offsets (with their errors) given up on in this batch
 * @param outbox the records this batch put in the outbox, in order (the relay publishes them)
 * @param calls the external calls' outcomes this entry journaled
 * @param appliedKeyDigests INTERNAL API (verification reads it): the business keys of the records this batch applied, as 128-bit digests
 *     ({@code [high0, low0, high1, low1, ...]}: the first 16 bytes of the key's UTF-8 SHA-256, read
 *     as two big-endian longs); records without a business key have none, and with the key window off
 *     ({@code key-window.enabled = off}) no record has one
 */
public record AppliedBatch(long fromOffset, long nextOffset, List<Object> events, String incarnation,
    Instant writtenAt, int applied, int droppedByKey, List<DeadLetterView> deadLetters, List<OutboxRecord> outbox,
    List<CallView> calls, @InternalApi long[] appliedKeyDigests) {

  /** An external call's journaled outcome: the record's offset, the idempotency key, the outcome. */
  public record CallView(long offset, String key, String outcome) {
  }

  /** A dead-lettered offset as journaled. */
  public record DeadLetterView(long offset, String key, String errorClass, String errorMessage, int attempts,
      boolean parked) {
  }

  /** The batch, when {@code journalEvent} is an event a partition actor wrote. */
  public static Optional<AppliedBatch> from(Object journalEvent) {
    if (journalEvent instanceof BatchEvent e) {
      return Optional.of(new AppliedBatch(e.fromOffset(), e.nextOffset(), e.events(), e.incarnation(),
          Instant.ofEpochMilli(e.atMillis()), e.applied(), e.droppedByKey(), e.deadLetters().stream()
              .map(d -> new DeadLetterView(d.offset(), d.key(), d.errorClass(), d.errorMessage(), d.attempts(),
                  d.parked()))
              .toList(),
          e.outbox(), e.calls().stream().map(c -> new CallView(c.offset(), c.key(), c.outcome())).toList(),
          e.keyDigests() == null ? new long[0] : e.keyDigests().clone()));
    }
    return Optional.empty();
  }
}
