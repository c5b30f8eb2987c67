package io.fencepost.internal;

import java.util.Arrays;

/**
 * The business keys a partition has applied recently, bounded by count and by age: the hop-1
 * defence against a producer or an upstream service re-sending a record at a new offset.
 *
 * <p>Keys are kept as 128-bit digests ({@link KeyDigest}) in insertion order, in a ring of
 * parallel {@code long} arrays (high, low, timestamp: 24 bytes a key), indexed by an open-addressing
 * table of {@code int} ring positions kept at most half full (8 bytes a key at full load): about 32
 * bytes of heap per key at capacity and no object per key, so a window of a million keys costs
 * about 32 MiB and no garbage-collector pressure.
 *
 * <p>Time is the timestamp of the batch that added a key (journaled with it), not the wall clock,
 * so replaying the journal rebuilds exactly the same window. Not thread-safe: owned by one actor.
 */
public final class KeyWindow {

  private static final int MIN_CAPACITY = 16;

  private final int maxKeys;
  private final long maxAgeMillis;

  // ring of keys in insertion order: [head, head + size) modulo capacity
  private long[] his;
  private long[] los;
  private long[] times;
  private int head;
  private int size;

  // open-addressing index of ring positions, -1 for empty; length a power of two >= 2 * ring capacity
  private int[] slots;
  private int mask;

  /**
   * @param maxKeys the most keys remembered; the oldest is forgotten first
   * @param maxAgeMillis keys older than this, relative to the newest key's time, are forgotten
   */
  public KeyWindow(int maxKeys, long maxAgeMillis) {
    if (maxKeys < 1) {
      throw new IllegalArgumentException("maxKeys must be >= 1, was [" + maxKeys + "]");
    }
    if (maxAgeMillis < 1) {
      throw new IllegalArgumentException("maxAgeMillis must be >= 1, was [" + maxAgeMillis + "]");
    }
    this.maxKeys = maxKeys;
    this.maxAgeMillis = maxAgeMillis;
    allocate(Math.min(maxKeys, MIN_CAPACITY));
  }

  public int maxKeys() {
    return maxKeys;
  }

  public long maxAgeMillis() {
    return maxAgeMillis;
  }

  /** How many keys are remembered now. */
  public int size() {
    return size;
  }

  /** Whether the digest {hi, lo} is remembered. */
  public boolean contains(long hi, long lo) {
    return find(hi, lo) >= 0;
  }

  /**
   * Remembers a digest at time {@code atMillis} (a later or equal time than any before), then
   * forgets keys beyond the count and age bounds. Adding a remembered digest again is a no-op.
   */
  public void add(long hi, long lo, long atMillis) {
    expire(atMillis);
    if (find(hi, lo) >= 0) {
      return;
    }
    if (size == maxKeys) {
      removeOldest();
    }
    if (size == his.length) {
      allocate(Math.min(maxKeys, his.length * 2));
    }
    int pos = (head + size) % his.length;
    his[pos] = hi;
    los[pos] = lo;
    times[pos] = atMillis;
    size++;
    insertSlot(pos);
  }

  /** Forgets keys older than the age bound relative to {@code nowMillis}. */
  public void expire(long nowMillis) {
    long cutoff = nowMillis - maxAgeMillis;
    while (size > 0 && times[head] < cutoff) {
      removeOldest();
    }
  }

  /** Visits keys oldest first. */
  public void forEach(Visitor visitor) {
    for (int i = 0; i < size; i++) {
      int pos = (head + i) % his.length;
      visitor.visit(his[pos], los[pos], times[pos]);
    }
  }

  /**
   * A deep copy, for snapshots taken while the actor goes on mutating this window: its arrays cloned
   * as they are (no rehashing), so it costs a memory copy on the actor's thread.
   */
  public KeyWindow copy() {
    return new KeyWindow(this);
  }

  private KeyWindow(KeyWindow from) {
    this.maxKeys = from.maxKeys;
    this.maxAgeMillis = from.maxAgeMillis;
    this.his = from.his.clone();
    this.los = from.los.clone();
    this.times = from.times.clone();
    this.head = from.head;
    this.size = from.size;
    this.slots = from.slots.clone();
    this.mask = from.mask;
  }

  /** Appends a key known to be newer than all and absent (snapshot restore); ignores bounds until the next add. */
  public void appendUnchecked(long hi, long lo, long atMillis) {
    if (size == his.length) {
      allocate(Math.min(Math.max(maxKeys, size + 1), his.length * 2));
    }
    int pos = (head + size) % his.length;
    his[pos] = hi;
    los[pos] = lo;
    times[pos] = atMillis;
    size++;
    insertSlot(pos);
  }

  /** Approximate heap bytes used by the arrays. */
  public long heapBytes() {
    return 3L * 8 * his.length + 4L * slots.length;
  }

  /** Receives one remembered key. */
  @FunctionalInterface
  public interface Visitor {
    void visit(long hi, long lo, long atMillis);
  }

  private void removeOldest() {
    int pos = head;
    deleteSlot(pos);
    head = (head + 1) % his.length;
    size--;
    if (size == 0) {
      head = 0;
    }
  }

  private int find(long hi, long lo) {
    int i = index(hi, lo);
    while (true) {
      int pos = slots[i];
      if (pos < 0) {
        return -1;
      }
      if (his[pos] == hi && los[pos] == lo) {
        return i;
      }
      i = (i + 1) & mask;
    }
  }

  private void insertSlot(int pos) {
    int i = index(his[pos], los[pos]);
    while (slots[i] >= 0) {
      i = (i + 1) & mask;
    }
    slots[i] = pos;
  }

  private void deleteSlot(int pos) {
    int i = index(his[pos], los[pos]);
    while (slots[i] != pos) {
      i = (i + 1) & mask;
    }
    // backward-shift deletion keeps linear probing correct without tombstones
    int gap = i;
    int j = (i + 1) & mask;
    while (slots[j] >= 0) {
      int home = index(his[slots[j]], los[slots[j]]);
      boolean movable = gap <= j ? (home <= gap || home > j) : (home <= gap && home > j);
      if (movable) {
        slots[gap] = slots[j];
        gap = j;
      }
      j = (j + 1) & mask;
    }
    slots[gap] = -1;
  }

  private int index(long hi, long lo) {
    // the digest is uniformly distributed already; fold it
    long h = hi ^ lo;
    return (int) (h ^ (h >>> 32)) & mask;
  }

  private void allocate(int capacity) {
    long[] nh = new long[capacity];
    long[] nl = new long[capacity];
    long[] nt = new long[capacity];
    for (int i = 0; i < size; i++) {
      int pos = (head + i) % his.length;
      nh[i] = his[pos];
      nl[i] = los[pos];
      nt[i] = times[pos];
    }
    his = nh;
    los = nl;
    times = nt;
    head = 0;
    int tableSize = Integer.highestOneBit(Math.max(2, capacity * 2 - 1)) << 1;
    slots = new int[tableSize];
    Arrays.fill(slots, -1);
    mask = tableSize - 1;
    for (int i = 0; i < size; i++) {
      insertSlot(i);
    }
  }
}
