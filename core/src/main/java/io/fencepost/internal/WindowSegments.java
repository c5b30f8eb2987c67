package io.fencepost.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Cuts one incarnation's key window into {@link WindowSegment}s for its snapshots, so that a
 * snapshot writes only the keys added since the last segment, not the whole window: the keys not
 * yet in a segment are cut into segments of exactly {@code segmentKeys} keys (stored before the
 * snapshot that refers to them), the fewer left go inline. A snapshot therefore writes fewer than
 * {@code segmentKeys} keys plus those added since the previous snapshot, whatever the window's
 * size, and no stored row holds more than {@code segmentKeys} keys.
 *
 * <p>A segment counts as stored once the snapshot writer says so ({@link #stored}, any thread);
 * until then every later snapshot carries it again to be written (same row, same bytes). Used on
 * the actor's thread otherwise.
 */
public final class WindowSegments {

  /** Keys per segment: a snapshot of a million-key window refers to about 31 segments. */
  public static final int SEGMENT_KEYS = 32_768;

  private final int segmentKeys;
  private final List<WindowImage.SegmentRef> stored = new ArrayList<>();
  private final List<WindowSegment> unstored = new ArrayList<>();
  private final AtomicLong storedUpTo = new AtomicLong();

  public WindowSegments(int segmentKeys) {
    if (segmentKeys < 1) {
      throw new IllegalArgumentException("segmentKeys must be >= 1, was [" + segmentKeys + "]");
    }
    this.segmentKeys = segmentKeys;
  }

  /** Recovery started over from {@code image} (null: no snapshot, or none with a window): its segments are stored. */
  public void recovered(WindowImage image) {
    stored.clear();
    unstored.clear();
    if (image != null) {
      stored.addAll(image.refs());
    }
  }

  /** The segments in rows up to {@code rowKey} ({@link WindowSegment#rowKey}) are stored (any thread). */
  public void stored(long rowKey) {
    storedUpTo.accumulateAndGet(rowKey, Math::max);
  }

  /**
   * What the snapshot at journal sequence number {@code sequenceNr} stores of {@code window}:
   * segments for its older keys (cutting a new one when due), the rest inline.
   */
  public WindowImage image(KeyWindow window, long sequenceNr) {
    long upTo = storedUpTo.get();
    while (!unstored.isEmpty() && unstored.get(0).sequenceNr() <= upTo) {
      stored.add(unstored.remove(0).ref());
    }
    long first = window.firstOrdinal();
    stored.removeIf(r -> r.endOrdinal() <= first);
    unstored.removeIf(s -> s.ref().endOrdinal() <= first);
    long cut = !unstored.isEmpty() ? unstored.get(unstored.size() - 1).ref().endOrdinal()
        : !stored.isEmpty() ? stored.get(stored.size() - 1).endOrdinal() : first;
    for (int index = 0; window.inserted() - cut >= segmentKeys; index++) {
      long end = cut + segmentKeys;
      unstored.add(new WindowSegment(WindowSegment.rowKey(sequenceNr, index), cut,
          WindowImage.triples(window, cut, end)));
      cut = end;
    }
    List<WindowImage.SegmentRef> refs = new ArrayList<>(stored);
    for (WindowSegment s : unstored) {
      refs.add(s.ref());
    }
    return new WindowImage(window.maxKeys(), window.maxAgeMillis(), window.inserted(), window.size(), refs, cut,
        WindowImage.triplesFrom(window, cut), unstored);
  }
}
