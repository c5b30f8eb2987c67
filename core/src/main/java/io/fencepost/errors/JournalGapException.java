package io.fencepost.errors;

import java.util.List;
import java.util.function.LongFunction;

/**
 * A reader of a partition's journal (an outbox relay, a read-model projection) met entries it has
 * not consumed that can no longer be read: they were compacted (or deleted) past its position. The
 * journal never has holes otherwise, so consuming on would silently skip their outbox records or
 * read-model updates. The reader stops at the hole instead; a person must decide.
 */
public final class JournalGapException extends FatalException {

  private final String persistenceId;
  private final long firstMissing;
  private final long lastMissing;

  public JournalGapException(String reader, String persistenceId, long firstMissing, long lastMissing,
      String acceptLoss) {
    super("[" + reader + "] journal entries [" + firstMissing + ".." + lastMissing + "] of [" + persistenceId
        + "] are not readable any more (compacted or deleted before this reader consumed them); it stops before "
        + "them instead of skipping what they held. Restore those rows from a backup, or accept the loss: "
        + acceptLoss);
    this.persistenceId = persistenceId;
    this.firstMissing = firstMissing;
    this.lastMissing = lastMissing;
  }

  /**
   * Checks that {@code sequenceNrs}, read from {@code from} on, are {@code from, from + 1, ...}; if
   * not, throws for the first hole. {@code acceptLoss} tells the operator how to move the reader past
   * it, given the hole's last sequence number.
   */
  public static void check(String reader, String persistenceId, long from, List<Long> sequenceNrs,
      LongFunction<String> acceptLoss) {
    long expected = from;
    for (long seq : sequenceNrs) {
      if (seq != expected) {
        throw new JournalGapException(reader, persistenceId, expected, seq - 1, acceptLoss.apply(seq - 1));
      }
      expected++;
    }
  }

  public String persistenceId() {
    return persistenceId;
  }

  public long firstMissing() {
    return firstMissing;
  }

  public long lastMissing() {
    return lastMissing;
  }
}
