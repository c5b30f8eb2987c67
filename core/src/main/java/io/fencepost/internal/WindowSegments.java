package io.fencepost.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
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
 * until then every later snapshot carries it to be written, unless its write failed
 * ({@link #failed}): a row whose write failed is never written or referred to again (Pekko's
 * snapshot store deletes the row of a failed save, maybe after a retry stored it), so the keys are
 * cut again under a later row.
 *
 * <p>After a recovery, an incarnation refers to no segment it did not write: its first snapshot
 * cuts the whole window into its own rows, above every sequence number an earlier owner could have
 * written. So an earlier owner still running (fenced, or with other window bounds) that deletes the
 * segments its own snapshots no longer need never deletes one this incarnation refers to. Used on
 * the actor's thread otherwise.
 */
public final class WindowSegments {

  /**
   * Keys per segment (192 KiB): a snapshot of a million-key window refers to 122 segments, and
   * rewrites fewer than this many keys inline. 32,768 doubled the snapshot tail's p99.9 against this
   * (SideBySide snapshots), for a recovery no faster.
   */
  public static final int SEGMENT_KEYS = 8_192;

  private final int segmentKeys;
  private final List<WindowImage.SegmentRef> stored = new ArrayList<>();
  private final List<WindowSegment> unstored = new ArrayList<>();
  private final AtomicLong storedUpTo = new AtomicLong();
  private final Set<Long> failedRows = ConcurrentHashMap.newKeySet();

  public WindowSegments(int segmentKeys) {
    if (segmentKeys < 1) {
      throw new IllegalArgumentException("segmentKeys must be >= 1, was [" + segmentKeys + "]");
    }
    this.segmentKeys = segmentKeys;
  }

  /** Recovery started over: the next snapshot cuts the whole window into segments of this incarnation. */
  public void recovered() {
    stored.clear();
    unstored.clear();
  }

  /** The segments in rows up to {@code rowKey} ({@link WindowSegment#rowKey}) are stored (any thread). */
  public void stored(long rowKey) {
    storedUpTo.accumulateAndGet(rowKey, Math::max);
  }

  /** Whether the segment in {@code rowKey} is stored: no snapshot needs to write it again (any thread). */
  public boolean isStored(long rowKey) {
    return rowKey <= storedUpTo.get() && !failedRows.contains(rowKey);
  }

  /** The write of the segment in {@code rowKey} failed: it is never written again (any thread). */
  public void failed(long rowKey) {
    failedRows.add(rowKey);
  }

  /** Whether the write of the segment in {@code rowKey} failed (any thread). */
  public boolean hasFailed(long rowKey) {
    return failedRows.contains(rowKey);
  }

  /**
   * What the snapshot at journal sequence number {@code sequenceNr} stores of {@code window}:
   * segments for its older keys (cutting a new one when due), the rest inline.
   */
  public WindowImage image(KeyWindow window, long sequenceNr) {
    while (!unstored.isEmpty() && isStored(unstored.get(0).sequenceNr())) {
      stored.add(unstored.remove(0).ref());
    }
    for (int i = 0; i < unstored.size(); i++) {
      if (failedRows.contains(unstored.get(i).sequenceNr())) {   // it and the ones after it are cut again
        unstored.subList(i, unstored.size()).clear();
      }
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
