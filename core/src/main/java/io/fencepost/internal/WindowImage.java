package io.fencepost.internal;

import java.util.Arrays;
import java.util.List;

/**
 * The key window as a snapshot stores it, at a cost that does not grow with the window: its bounds,
 * the ordinals it holds ({@code [inserted - size, inserted)}, see {@link KeyWindow#inserted}),
 * references to {@link WindowSegment}s stored earlier that cover its older keys, and the newer keys
 * (the tail, from {@code tailFrom}) inline. A window without segments is all tail.
 *
 * <p>{@code toWrite}, the segments the snapshot refers to that are not known to be stored yet, is
 * not part of the stored form: the snapshot writer stores them before the snapshot itself.
 */
public record WindowImage(int maxKeys, long maxAgeMillis, long inserted, int size, List<SegmentRef> refs,
    long tailFrom, long[] tail, List<WindowSegment> toWrite) {

  /** Where a segment is and what it holds: ordinals {@code [fromOrdinal, fromOrdinal + count)}. */
  public record SegmentRef(long sequenceNr, long fromOrdinal, int count, long checksum) {

    public long endOrdinal() {
      return fromOrdinal + count;
    }
  }

  /**
   * Checks that the parts add up to the window: segments back to back from at or before the oldest
   * key, then the tail up to the newest.
   *
   * @throws IllegalArgumentException naming the first part that does not
   */
  public WindowImage {
    refs = List.copyOf(refs);
    toWrite = List.copyOf(toWrite);
    long first = inserted - size;
    if (size < 0 || first < 0 || tail.length % 3 != 0 || tailFrom + tail.length / 3 != inserted) {
      throw new IllegalArgumentException("window of " + size + " keys up to ordinal " + inserted
          + " does not end with its tail of " + tail.length / 3 + " keys from " + tailFrom);
    }
    long next = refs.isEmpty() ? first : refs.get(0).fromOrdinal();
    if (next > first) {
      throw new IllegalArgumentException("the window's first segment starts at ordinal " + next
          + ", after its oldest key " + first);
    }
    for (SegmentRef r : refs) {
      if (r.fromOrdinal() != next || r.count() < 1) {
        throw new IllegalArgumentException("segment " + r + " does not follow ordinal " + next);
      }
      next = r.endOrdinal();
    }
    if (next != tailFrom || (!refs.isEmpty() && refs.get(refs.size() - 1).endOrdinal() <= first)) {
      throw new IllegalArgumentException("the window's segments end at ordinal " + next + ", its tail starts at "
          + tailFrom);
    }
  }

  /** The whole window inline (no segments). */
  public static WindowImage inline(KeyWindow w) {
    return new WindowImage(w.maxKeys(), w.maxAgeMillis(), w.inserted(), w.size(), List.of(), w.firstOrdinal(),
        triplesFrom(w, w.firstOrdinal()), List.of());
  }

  /** The keys of {@code w} from ordinal {@code from} on, as {hi, lo, atMillis} triples. */
  static long[] triplesFrom(KeyWindow w, long from) {
    return triples(w, from, w.inserted());
  }

  /** The keys of {@code w} with ordinals in {@code [from, to)}, as {hi, lo, atMillis} triples. */
  static long[] triples(KeyWindow w, long from, long to) {
    long start = Math.max(from, w.firstOrdinal());
    long[] out = new long[(int) (3 * Math.max(0, Math.min(to, w.inserted()) - start))];
    int[] i = {0};
    w.forEachBetween(start, to, (hi, lo, at) -> {
      out[i[0]++] = hi;
      out[i[0]++] = lo;
      out[i[0]++] = at;
    });
    return out;
  }

  public long firstOrdinal() {
    return inserted - size;
  }

  /** The lowest row ({@link WindowSegment#rowKey}) among the segments referred to; {@code Long.MAX_VALUE} for none. */
  public long lowestSegmentSequenceNr() {
    return refs.stream().mapToLong(SegmentRef::sequenceNr).min().orElse(Long.MAX_VALUE);
  }

  /**
   * The window this image describes, with its own bounds, from the segments it refers to (in the
   * order of {@link #refs}; each checked against its reference).
   *
   * @throws IllegalStateException naming the segment that is not the one referred to
   */
  public KeyWindow restore(List<WindowSegment> segments) {
    if (segments.size() != refs.size()) {
      throw new IllegalStateException(refs.size() + " window segments referred to, " + segments.size() + " given");
    }
    long first = firstOrdinal();
    KeyWindow w = KeyWindow.startingAt(maxKeys, maxAgeMillis, first);
    for (int s = 0; s < refs.size(); s++) {
      SegmentRef ref = refs.get(s);
      WindowSegment segment = segments.get(s);
      if (!segment.ref().equals(ref)) {
        throw new IllegalStateException("window segment in snapshot-store row " + ref.sequenceNr() + " holds "
            + segment.ref() + ", the snapshot refers to " + ref);
      }
      appendFrom(w, segment.triples(), segment.fromOrdinal(), first);
    }
    appendFrom(w, tail, tailFrom, first);
    return w;
  }

  private static void appendFrom(KeyWindow w, long[] triples, long fromOrdinal, long first) {
    for (int i = (int) Math.max(0, first - fromOrdinal); i < triples.length / 3; i++) {
      w.appendUnchecked(triples[3 * i], triples[3 * i + 1], triples[3 * i + 2]);
    }
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof WindowImage i && i.maxKeys == maxKeys && i.maxAgeMillis == maxAgeMillis
        && i.inserted == inserted && i.size == size && i.refs.equals(refs) && i.tailFrom == tailFrom
        && Arrays.equals(i.tail, tail);
  }

  @Override
  public int hashCode() {
    return Long.hashCode(inserted) * 31 + refs.hashCode();
  }

  @Override
  public String toString() {
    return "WindowImage[" + size + " keys, ordinals " + firstOrdinal() + ".." + inserted + "), " + refs.size()
        + " segments, " + tail.length / 3 + " inline]";
  }
}
