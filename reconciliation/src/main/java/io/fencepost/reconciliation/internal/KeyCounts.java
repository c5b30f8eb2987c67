package io.fencepost.reconciliation.internal;

/**
 * Per-key counters for reconciliation, keyed by 128-bit digests in parallel primitive arrays with
 * open addressing (load at most 1/2): about 2 x 33 = 66 bytes per key, no object per key, so a
 * million keys take about 66 MiB whatever the keys' length.
 */
public final class KeyCounts {

  private long[] his;
  private long[] los;
  private int[] buckets;
  private int[] copies;
  private int[] applied;
  private int[] dead;
  private boolean[] used;
  private int size;
  private int mask;

  public KeyCounts() {
    allocate(1 << 12);
  }

  public int size() {
    return size;
  }

  /** Counts one copy of the key seen in the input; the first copy's bucket sticks. Returns the slot. */
  public int addInput(long hi, long lo, int bucket) {
    int slot = slot(hi, lo, true);
    if (copies[slot] == 0) {
      buckets[slot] = bucket;
    }
    copies[slot]++;
    return slot;
  }

  /** Counts one application of the key found in the effect store. */
  public void addApplied(long hi, long lo) {
    int slot = slot(hi, lo, true);
    if (copies[slot] == 0 && applied[slot] == 0) {
      buckets[slot] = -1;
    }
    applied[slot]++;
  }

  /** Marks the key as dead-lettered (one of its copies was given up on, and is in the dead-letter topic). */
  public void markDead(int slot) {
    dead[slot]++;
  }

  /** Visits every key's counters. */
  public void forEach(Visitor v) {
    for (int i = 0; i < used.length; i++) {
      if (used[i]) {
        v.visit(his[i], los[i], buckets[i], copies[i], applied[i], dead[i]);
      }
    }
  }

  /** Receives one key's counters; bucket -1 for keys never seen in the input. */
  @FunctionalInterface
  public interface Visitor {
    void visit(long hi, long lo, int bucket, int inputCopies, int appliedCount, int deadLettered);
  }

  private int slot(long hi, long lo, boolean insert) {
    if (insert && (size + 1) * 2 > used.length) {
      grow();
    }
    int i = (int) ((hi ^ lo) ^ ((hi ^ lo) >>> 32)) & mask;
    while (used[i]) {
      if (his[i] == hi && los[i] == lo) {
        return i;
      }
      i = (i + 1) & mask;
    }
    used[i] = true;
    his[i] = hi;
    los[i] = lo;
    size++;
    return i;
  }

  private void grow() {
    long[] oh = his;
    long[] ol = los;
    int[] ob = buckets;
    int[] oc = copies;
    int[] oa = applied;
    int[] od = dead;
    boolean[] ou = used;
    allocate(used.length * 2);
    for (int j = 0; j < ou.length; j++) {
      if (ou[j]) {
        int i = slot(oh[j], ol[j], false);
        buckets[i] = ob[j];
        copies[i] = oc[j];
        applied[i] = oa[j];
        dead[i] = od[j];
      }
    }
  }

  private void allocate(int capacity) {
    his = new long[capacity];
    los = new long[capacity];
    buckets = new int[capacity];
    copies = new int[capacity];
    applied = new int[capacity];
    dead = new int[capacity];
    used = new boolean[capacity];
    mask = capacity - 1;
    size = 0;
  }
}
