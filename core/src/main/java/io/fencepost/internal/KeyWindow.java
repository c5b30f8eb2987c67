package io.fencepost.internal;

import java.util.Arrays;

/**
 * The business keys a partition has applied recently, bounded by count and by age: the hop-1
 * defence against a producer or an upstream service re-sending a record at a new offset.
 *
 * <p>Keys are kept as 128-bit digests ({@link KeyDigest}) in insertion order, in a ring (high and
 * low of a key side by side in one array, their timestamps in another: 24 bytes a key), indexed by
 * an open-addressing table of {@code int}s kept at most half full (8 bytes a key at full load):
 * about 32 bytes of heap per key at capacity and no object per key, so a window of a million keys
 * costs about 32 MiB and no garbage-collector pressure. Each index entry holds the key's ring
 * position and, in the bits the position leaves free, a tag from the key's hash: a probe that meets
 * another key usually tells it apart by the tag, without reading the ring (a cache miss).
 *
 * <p>Time is the timestamp of the batch that added a key (journaled with it), not the wall clock,
 * so replaying the journal rebuilds exactly the same window. Not thread-safe: owned by one actor.
 */
public final class KeyWindow {

  private static final int MIN_CAPACITY = 16;

  private final int maxKeys;
  private final long maxAgeMillis;

  // ring of keys in insertion order: [head, head + size) modulo capacity; key i's digest is
  // keys[2i] (high), keys[2i + 1] (low)
  private long[] keys;
  private long[] times;
  private int capacity;
  private int head;
  private int size;
  // keys ever appended: the key at ring offset i (0 = oldest) has ordinal inserted - size + i
  private long inserted;

  // open-addressing index, -1 for empty, else (tag << posBits) | ring position; length a power of
  // two >= 2 * ring capacity
  private int[] slots;
  private int mask;
  private int posBits;
  private int posMask;

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

  /**
   * A window whose first key will have ordinal {@code firstOrdinal}: a window rebuilt from a
   * snapshot keeps numbering its keys where the snapshot's window did.
   */
  public static KeyWindow startingAt(int maxKeys, long maxAgeMillis, long firstOrdinal) {
    KeyWindow w = new KeyWindow(maxKeys, maxAgeMillis);
    w.inserted = firstOrdinal;
    return w;
  }

  /**
   * How many keys were ever appended (over the partition's history, snapshots included): the
   * ordinal the next new key gets. The window holds ordinals {@code [firstOrdinal(), inserted())}:
   * keys only ever leave it oldest first, so it is always a run of consecutive ordinals.
   */
  public long inserted() {
    return inserted;
  }

  /** The ordinal of the oldest key remembered ({@code inserted()} when empty). */
  public long firstOrdinal() {
    return inserted - size;
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
    if (size == capacity) {
      allocate(Math.min(maxKeys, capacity * 2));
    }
    append(hi, lo, atMillis);
  }

  private void append(long hi, long lo, long atMillis) {
    int pos = (head + size) % capacity;
    keys[2 * pos] = hi;
    keys[2 * pos + 1] = lo;
    times[pos] = atMillis;
    size++;
    inserted++;
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
      int pos = (head + i) % capacity;
      visitor.visit(keys[2 * pos], keys[2 * pos + 1], times[pos]);
    }
  }

  /** Visits the keys with ordinals in {@code [fromOrdinal, toOrdinal)}, oldest first. */
  public void forEachBetween(long fromOrdinal, long toOrdinal, Visitor visitor) {
    int end = (int) Math.max(0, Math.min(size, toOrdinal - firstOrdinal()));
    for (int i = (int) Math.max(0, fromOrdinal - firstOrdinal()); i < end; i++) {
      int pos = (head + i) % capacity;
      visitor.visit(keys[2 * pos], keys[2 * pos + 1], times[pos]);
    }
  }

  /**
   * A deep copy: its arrays cloned as they are (no rehashing). Snapshots no longer copy the window
   * (they refer to {@link WindowSegment}s); the tests use it as the full copy segmented snapshots
   * are compared with.
   */
  public KeyWindow copy() {
    return new KeyWindow(this);
  }

  private KeyWindow(KeyWindow from) {
    this.maxKeys = from.maxKeys;
    this.maxAgeMillis = from.maxAgeMillis;
    this.keys = from.keys.clone();
    this.times = from.times.clone();
    this.capacity = from.capacity;
    this.head = from.head;
    this.size = from.size;
    this.inserted = from.inserted;
    this.slots = from.slots.clone();
    this.mask = from.mask;
    this.posBits = from.posBits;
    this.posMask = from.posMask;
  }

  /** Appends a key known to be newer than all and absent (snapshot restore); ignores bounds until the next add. */
  public void appendUnchecked(long hi, long lo, long atMillis) {
    if (size == capacity) {
      allocate(Math.min(Math.max(maxKeys, size + 1), capacity * 2));
    }
    append(hi, lo, atMillis);
  }

  /** Approximate heap bytes used by the arrays. */
  public long heapBytes() {
    return 3L * 8 * capacity + 4L * slots.length;
  }

  /** Receives one remembered key. */
  @FunctionalInterface
  public interface Visitor {
    void visit(long hi, long lo, long atMillis);
  }

  private void removeOldest() {
    int pos = head;
    deleteSlot(pos);
    head = (head + 1) % capacity;
    size--;
    if (size == 0) {
      head = 0;
    }
  }

  /** The key's 32-bit hash: its index's low bits, its tag's high bits (the digest is uniform already). */
  private static int hash(long hi, long lo) {
    long h = hi ^ lo;
    return (int) (h ^ (h >>> 32));
  }

  /** The index entry's tag bits for a hash: its top bits, in the bits above the ring position. */
  private int tag(int hash) {
    return posBits >= 31 ? 0 : (hash >>> (posBits + 1)) << posBits;
  }

  private int find(long hi, long lo) {
    int hash = hash(hi, lo);
    int tag = tag(hash);
    int i = hash & mask;
    while (true) {
      int slot = slots[i];
      if (slot < 0) {
        return -1;
      }
      if ((slot & ~posMask) == tag) {
        int pos = slot & posMask;
        if (keys[2 * pos] == hi && keys[2 * pos + 1] == lo) {
          return i;
        }
      }
      i = (i + 1) & mask;
    }
  }

  private void insertSlot(int pos) {
    int hash = hash(keys[2 * pos], keys[2 * pos + 1]);
    int i = hash & mask;
    while (slots[i] >= 0) {
      i = (i + 1) & mask;
    }
    slots[i] = tag(hash) | pos;
  }

  private void deleteSlot(int pos) {
    int i = home(pos);
    while ((slots[i] & posMask) != pos || slots[i] < 0) {
      if (slots[i] < 0) {   // linear probing never leaves a hole between a key's home and its slot
        throw new IllegalStateException("key window index lost the key at ring position " + pos);
      }
      i = (i + 1) & mask;
    }
    // backward-shift deletion keeps linear probing correct without tombstones
    int gap = i;
    int j = (i + 1) & mask;
    while (slots[j] >= 0) {
      int home = home(slots[j] & posMask);
      boolean movable = gap <= j ? (home <= gap || home > j) : (home <= gap && home > j);
      if (movable) {
        slots[gap] = slots[j];
        gap = j;
      }
      j = (j + 1) & mask;
    }
    slots[gap] = -1;
  }

  /** The index slot the key at ring position {@code pos} hashes to. */
  private int home(int pos) {
    return hash(keys[2 * pos], keys[2 * pos + 1]) & mask;
  }

  private void allocate(int newCapacity) {
    long[] nk = new long[2 * newCapacity];
    long[] nt = new long[newCapacity];
    for (int i = 0; i < size; i++) {
      int pos = (head + i) % capacity;
      nk[2 * i] = keys[2 * pos];
      nk[2 * i + 1] = keys[2 * pos + 1];
      nt[i] = times[pos];
    }
    keys = nk;
    times = nt;
    capacity = newCapacity;
    head = 0;
    posBits = Math.max(1, 32 - Integer.numberOfLeadingZeros(newCapacity - 1));
    posMask = (1 << posBits) - 1;
    int tableSize = Integer.highestOneBit(Math.max(2, newCapacity * 2 - 1)) << 1;
    slots = new int[tableSize];
    Arrays.fill(slots, -1);
    mask = tableSize - 1;
    for (int i = 0; i < size; i++) {
      insertSlot(i);
    }
  }
}
