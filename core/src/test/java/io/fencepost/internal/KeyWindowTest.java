package io.fencepost.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Random;
import java.util.Set;

import org.junit.jupiter.api.Test;

class KeyWindowTest {

  private final KeyDigest digest = new KeyDigest();

  private long[] d(String key) {
    long[] out = new long[2];
    digest.digest(key, out);
    return out;
  }

  private void add(KeyWindow w, String key, long at) {
    long[] k = d(key);
    w.add(k[0], k[1], at);
  }

  private boolean has(KeyWindow w, String key) {
    long[] k = d(key);
    return w.contains(k[0], k[1]);
  }

  @Test
  void countBoundForgetsTheOldestFirst() {
    KeyWindow w = new KeyWindow(3, 1_000_000);
    add(w, "a", 1);
    add(w, "b", 2);
    add(w, "c", 3);
    add(w, "d", 4);
    assertFalse(has(w, "a"));
    assertTrue(has(w, "b") && has(w, "c") && has(w, "d"));
    assertEquals(3, w.size());
  }

  @Test
  void ageBoundForgetsKeysOlderThanMaxAgeRelativeToTheNewest() {
    KeyWindow w = new KeyWindow(100, 10);
    add(w, "a", 100);
    add(w, "b", 105);
    add(w, "c", 111);   // a is now 11 ms older than the newest: forgotten
    assertFalse(has(w, "a"));
    assertTrue(has(w, "b"));
    w.expire(116);
    assertFalse(has(w, "b"));
    assertTrue(has(w, "c"));
  }

  @Test
  void addingAKnownKeyKeepsOneEntry() {
    KeyWindow w = new KeyWindow(10, 1000);
    add(w, "a", 1);
    add(w, "a", 2);
    assertEquals(1, w.size());
  }

  @Test
  void matchesAReferenceModelUnderRandomChurn() {
    // Exercises growth, wrap-around of the ring and backward-shift deletion in the index.
    Random random = new Random(42);
    int max = 1000;
    KeyWindow w = new KeyWindow(max, Long.MAX_VALUE / 4);
    ArrayDeque<String> order = new ArrayDeque<>();
    Set<String> model = new HashSet<>();
    for (int i = 0; i < 50_000; i++) {
      String key = "k" + random.nextInt(3000);
      add(w, key, i);
      if (model.add(key)) {
        order.addLast(key);
        if (order.size() > max) {
          model.remove(order.removeFirst());
        }
      }
      if (i % 997 == 0) {
        for (int probe = 0; probe < 3000; probe++) {
          String k = "k" + probe;
          assertEquals(model.contains(k), has(w, k), "key " + k + " at step " + i);
        }
      }
    }
    assertEquals(model.size(), w.size());
  }

  @Test
  void keysOfTheSameHashAndTagAreToldApartByTheirWholeDigest() {
    KeyWindow w = new KeyWindow(4, 1_000);
    w.add(1, 2, 1);                      // (1, 2) and (2, 1) hash alike: same index slot, same tag
    assertTrue(w.contains(1, 2));
    assertFalse(w.contains(2, 1));
    w.add(2, 1, 2);
    assertTrue(w.contains(1, 2) && w.contains(2, 1));
    w.add(3, 0, 3);                      // hi ^ lo = 3 as well
    w.add(7, 4, 4);
    w.add(9, 9, 5);                      // evicts (1, 2), the oldest: the others stay findable
    assertFalse(w.contains(1, 2));
    assertTrue(w.contains(2, 1) && w.contains(3, 0) && w.contains(7, 4) && w.contains(9, 9));
  }

  @Test
  void matchesAReferenceModelWithCollidingHashesAgeAndCountBounds() {
    // Digests drawn so that many share their hash (hi ^ lo) and tag: the index must compare whole keys,
    // and deletion must move the right entries; ages expire keys too, and several rings wrap.
    for (int seed = 0; seed < 5; seed++) {
      Random random = new Random(seed);
      int max = 1 + random.nextInt(700);
      long maxAge = 50 + random.nextInt(5_000);
      KeyWindow w = new KeyWindow(max, maxAge);
      LinkedHashMap<List<Long>, Long> model = new LinkedHashMap<>();
      long now = 0;
      for (int i = 0; i < 40_000; i++) {
        now += random.nextInt(3);
        long base = random.nextInt(64);
        long hi = base * 0x9E3779B97F4A7C15L + random.nextInt(4);
        long lo = hi ^ random.nextInt(512);   // hi ^ lo takes few values
        w.add(hi, lo, now);
        long cutoff = now - maxAge;
        model.values().removeIf(at -> at < cutoff);
        List<Long> key = List.of(hi, lo);
        if (!model.containsKey(key)) {
          if (model.size() == max) {
            model.remove(model.keySet().iterator().next());
          }
          model.put(key, now);
        }
        if (i % 1_999 == 0) {
          assertEquals(model.size(), w.size(), "size at step " + i + " (seed " + seed + ")");
          List<List<Long>> inWindow = new ArrayList<>();
          w.forEach((h, l, at) -> inWindow.add(List.of(h, l)));
          assertEquals(new ArrayList<>(model.keySet()), inWindow, "order at step " + i + " (seed " + seed + ")");
          for (int probe = 0; probe < 2_000; probe++) {
            long ph = random.nextInt(64) * 0x9E3779B97F4A7C15L + random.nextInt(4);
            long pl = ph ^ random.nextInt(512);
            assertEquals(model.containsKey(List.of(ph, pl)), w.contains(ph, pl),
                "key (" + ph + ", " + pl + ") at step " + i + " (seed " + seed + ")");
          }
        }
      }
    }
  }

  @Test
  void copyIsIndependent() {
    KeyWindow w = new KeyWindow(10, 1000);
    add(w, "a", 1);
    KeyWindow c = w.copy();
    add(w, "b", 2);
    assertTrue(has(c, "a"));
    assertFalse(has(c, "b"));
  }

  @Test
  void aCopyOfAWrappedFullRingStaysAsItWasWhileTheOriginalEvictsAndExpires() {
    KeyWindow w = new KeyWindow(64, 1_000);
    for (int i = 0; i < 100; i++) {          // wraps the ring: 36 evicted, head mid-array
      w.add(i * 0x9E3779B97F4A7C15L, i, i);
    }
    List<long[]> before = new ArrayList<>();
    w.forEach((hi, lo, at) -> before.add(new long[] {hi, lo, at}));
    KeyWindow c = w.copy();
    for (int i = 100; i < 140; i++) {        // the original evicts 40 more of the copied keys
      w.add(i * 0x9E3779B97F4A7C15L, i, i);
    }
    w.expire(1_120);                         // and expires some by age
    List<long[]> after = new ArrayList<>();
    c.forEach((hi, lo, at) -> after.add(new long[] {hi, lo, at}));
    assertEquals(before.size(), after.size());
    for (int i = 0; i < before.size(); i++) {
      assertArrayEquals(before.get(i), after.get(i), "key " + i + " of the copy");
      assertTrue(c.contains(before.get(i)[0], before.get(i)[1]), "the copy's index finds key " + i);
    }
    assertFalse(c.contains(139 * 0x9E3779B97F4A7C15L, 139), "nothing added to the original reaches the copy");
    c.add(7, 7, 200);                        // and the copy takes keys of its own
    assertTrue(c.contains(7, 7));
    assertFalse(w.contains(7, 7));
  }

  @Test
  void heapPerKeyAtCapacityIsAbout32Bytes() {
    int n = 1 << 16;
    KeyWindow w = new KeyWindow(n, Long.MAX_VALUE / 4);
    for (int i = 0; i < n; i++) {
      w.add(i * 0x9E3779B97F4A7C15L, i, i);
    }
    double perKey = (double) w.heapBytes() / n;
    assertTrue(perKey <= 40, "bytes per key " + perKey);
  }

  @Test
  void rejectsNonPositiveBounds() {
    assertThrows(IllegalArgumentException.class, () -> new KeyWindow(0, 1));
    assertThrows(IllegalArgumentException.class, () -> new KeyWindow(1, 0));
  }
}
