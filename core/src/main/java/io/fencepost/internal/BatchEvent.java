package io.fencepost.internal;

import java.util.List;

import io.fencepost.OutboxRecord;

/**
 * The one journal event a partition writes per batch: the user's events, the partition's new next
 * offset and the business keys it newly applied, so that effects, position and key window commit
 * atomically in one row.
 *
 * @param incarnation the writing actor incarnation's random id (tells a fenced write from our own)
 * @param fromOffset the next offset before this batch
 * @param nextOffset the next offset after this batch ({@code fromOffset} when the batch only carries
 *     effects, as at-most-once's second write does; below {@code fromOffset} only for an operator's
 *     reset, {@code io.fencepost.OffsetReset})
 * @param atMillis wall-clock time of the write; the key window's clock
 * @param events the user's events, in the order they were returned
 * @param keyDigests the new keys' 128-bit digests as (high, low) pairs
 * @param applied records whose handler ran
 * @param droppedByKey records dropped because their business key was in the window
 * @param deadLetters records given up on (already published to the dead-letter topic), the offset
 *     moving past them in this same write
 * @param unparked record keys no longer parked: their failed record was replayed in this batch
 * @param outbox records to publish (by the outbox relay, after this write), in order
 * @param calls outcomes of external calls, journaled before the offset moves past their records
 * @param replayed offsets of dead letters whose replay this batch applied (or dropped by key): they
 *     cannot be replayed again
 */
public record BatchEvent(
    String incarnation,
    long fromOffset,
    long nextOffset,
    long atMillis,
    List<Object> events,
    long[] keyDigests,
    int applied,
    int droppedByKey,
    List<DeadLetterEntry> deadLetters,
    List<String> unparked,
    List<OutboxRecord> outbox,
    List<CallOutcome> calls,
    long[] replayed) {

  /** A batch without dead letters. */
  public BatchEvent(String incarnation, long fromOffset, long nextOffset, long atMillis, List<Object> events,
      long[] keyDigests, int applied, int droppedByKey) {
    this(incarnation, fromOffset, nextOffset, atMillis, events, keyDigests, applied, droppedByKey, List.of(),
        List.of(), List.of(), List.of(), NONE);
  }

  /** An entry that only journals external calls' outcomes: the offset does not move. */
  public static BatchEvent callOutcomes(String incarnation, long offset, long atMillis, List<CallOutcome> calls) {
    return new BatchEvent(incarnation, offset, offset, atMillis, List.of(), new long[0], 0, 0, List.of(), List.of(),
        List.of(), calls, NONE);
  }

  private static final long[] NONE = new long[0];

  /** "offsets [a..b]" of this entry, "offsets up to b" for a partition's first, for log lines and errors. */
  public String describeOffsets() {
    return fromOffset == PartitionState.NO_OFFSET ? "offsets up to " + (nextOffset - 1)
        : "offsets [" + fromOffset + ".." + (nextOffset - 1) + "]";
  }

  public BatchEvent {
    events = List.copyOf(events);
    deadLetters = List.copyOf(deadLetters);
    unparked = List.copyOf(unparked);
    outbox = List.copyOf(outbox);
    calls = List.copyOf(calls);
    if ((keyDigests.length & 1) != 0) {
      throw new IllegalArgumentException("keyDigests holds (high, low) pairs, length was " + keyDigests.length);
    }
  }
}
