package io.fencepost.internal;

import java.util.Arrays;

/**
 * A run of a key window's keys stored on its own, once, so that snapshots refer to it instead of
 * copying it again ({@link WindowImage}): the keys with ordinals {@code [fromOrdinal, fromOrdinal +
 * count())}, as {hi, lo, atMillis} triples oldest first. Stored in the snapshot store under the
 * partition's {@link #persistenceIdOf window persistence id} at sequence number {@link #rowKey}
 * of the journal write after which it was cut and its index among the segments cut then: only the
 * incarnation that committed that journal entry cuts segments there, so two different segments
 * never share a row.
 *
 * @param sequenceNr the segment's row in the snapshot store ({@link #rowKey})
 */
public record WindowSegment(long sequenceNr, long fromOrdinal, long[] triples) {

  /** Segments one snapshot may cut: as many as a window of 2^29 keys in segments of 8,192 needs. */
  public static final int PER_WRITE = 1 << 16;

  public WindowSegment {
    if (triples.length % 3 != 0) {
      throw new IllegalArgumentException("triples must hold {hi, lo, atMillis} per key, had " + triples.length);
    }
  }

  /** The row of the {@code index}-th segment cut after the journal write {@code journalSequenceNr}. */
  public static long rowKey(long journalSequenceNr, int index) {
    if (index < 0 || index >= PER_WRITE) {
      throw new IllegalArgumentException("segment index " + index + " out of [0, " + PER_WRITE + ")");
    }
    return journalSequenceNr * PER_WRITE + index;
  }

  /** The journal write after which the segment in row {@code rowKey} was cut. */
  public static long journalSequenceNr(long rowKey) {
    return rowKey / PER_WRITE;
  }

  /** The persistence id a partition's window segments are stored under in the snapshot store. */
  public static String persistenceIdOf(String partitionPersistenceId) {
    return "fencepost-window|" + partitionPersistenceId;
  }

  public int count() {
    return triples.length / 3;
  }

  /** What a snapshot stores to find this segment and tell it is the one it meant. */
  public WindowImage.SegmentRef ref() {
    return new WindowImage.SegmentRef(sequenceNr, fromOrdinal, count(), checksum(fromOrdinal, triples));
  }

  /** A 64-bit check over the range and every key and time (not a defence against tampering). */
  public static long checksum(long fromOrdinal, long[] triples) {
    long h = mix(fromOrdinal ^ 0x9E3779B97F4A7C15L) ^ triples.length;
    for (long v : triples) {
      h = mix(h ^ v) * 0x9E3779B97F4A7C15L;
    }
    return h;
  }

  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof WindowSegment s && s.sequenceNr == sequenceNr && s.fromOrdinal == fromOrdinal
        && Arrays.equals(s.triples, triples);
  }

  @Override
  public int hashCode() {
    return Long.hashCode(sequenceNr) * 31 + Arrays.hashCode(triples);
  }

  @Override
  public String toString() {
    return "WindowSegment[sequenceNr=" + sequenceNr + ", ordinals " + fromOrdinal + ".." + (fromOrdinal + count())
        + ")]";
  }
}
