package io.fencepost.internal.writepath;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

import com.typesafe.config.ConfigFactory;
import io.fencepost.PartitionActorSettings;
import io.fencepost.internal.BatchEvent;
import io.fencepost.internal.FencepostSerializer;
import io.fencepost.internal.KeyWindow;
import io.fencepost.internal.PartitionState;
import io.fencepost.internal.WindowImage;
import io.fencepost.internal.WindowSegment;
import io.fencepost.internal.WindowSegments;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * Recovery from a snapshot whose window is cut into segments rebuilds exactly the window that
 * recovery from a snapshot holding a full copy of it rebuilds (the format before segments), over
 * seeded random histories: duplicate and re-sent keys, time jumps that expire most of the window,
 * operator resets, bounds changed at a restart, segment writes that fail (so the snapshot is not
 * stored, the row is gone and later snapshots cut those keys again), and restarts at any point
 * (after which a snapshot refers only to segments its incarnation cut).
 */
class WindowSnapshotsDifferentialTest {

  private static final ActorTestKit kit = ActorTestKit.create("window-differential");
  private static final PartitionActorSettings DEFAULTS = PartitionActorSettings.create(ConfigFactory.load());

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  /** A stored snapshot: the full copy (the reference) and the segmented one, serialized. */
  private record Stored(long sequenceNr, KeyWindow fullCopy, byte[] segmented) {
  }

  // Recoveries whose snapshot referred to segments, and of those, ones that replayed entries after it.
  private int segmented;
  private int segmentedWithReplay;

  @Test
  void segmentedSnapshotsRecoverTheWindowAFullCopyRecovers() {
    for (long seed = 1; seed <= 60; seed++) {
      run(seed);
    }
    assertTrue(segmented > 100 && segmentedWithReplay > 50, segmented + " segmented recoveries, "
        + segmentedWithReplay + " with entries replayed");
  }

  private void run(long seed) {
    Random random = new Random(seed);
    int segmentKeys = 8 + random.nextInt(40);
    int maxKeys = 20 + random.nextInt(300);
    long maxAge = 1_000 + random.nextInt(20_000);
    List<BatchEvent> journal = new ArrayList<>();
    Map<Long, WindowSegment> segmentStore = new HashMap<>();
    TreeMap<Long, Stored> snapshots = new TreeMap<>();
    WindowSegments segments = new WindowSegments(segmentKeys);
    PartitionState<String> live = recoverState(null, List.of(), maxKeys, maxAge, segmentStore);
    long now = 0;
    long offset = 0;
    int keyPool = 1 + random.nextInt(3 * maxKeys);
    int checks = 0;
    boolean boundsChanged = false;
    long recoveredAt = 0;
    long lastSnapshot = 0;
    for (int step = 0; step < 400; step++) {
      int op = random.nextInt(100);
      if (op < 70) {   // a batch
        now += random.nextInt(10) == 0 ? random.nextInt((int) maxAge * 2) : random.nextInt(50);
        int keys = random.nextInt(12);
        long[] digests = new long[2 * keys];
        for (int k = 0; k < keys; k++) {
          long id = random.nextInt(keyPool);
          digests[2 * k] = id;
          digests[2 * k + 1] = ~id;
        }
        BatchEvent e = random.nextInt(40) == 0
            ? new BatchEvent("i", offset, Math.max(0, offset - 5), now, List.of(), new long[0], 0, 0)   // a reset
            : new BatchEvent("i", offset, offset + keys + 1, now, List.of(), digests, keys, 0);
        offset = e.nextOffset();
        journal.add(e);
        live = live.apply(e, "u");
      } else if (op < 88) {   // a snapshot, its segments stored unless a write fails
        long seq = journal.size();
        if (seq <= Math.max(recoveredAt, lastSnapshot)) {
          continue;   // snapshots follow this incarnation's writes, one per write at most
        }
        lastSnapshot = seq;
        WindowImage image = segments.image(live.window(), seq);
        for (WindowImage.SegmentRef ref : image.refs()) {   // only segments this incarnation cut
          assertTrue(WindowSegment.journalSequenceNr(ref.sequenceNr()) > recoveredAt, "seed " + seed + ": " + ref);
        }
        boolean allStored = true;
        for (WindowSegment s : image.toWrite()) {
          if (segments.isStored(s.sequenceNr())) {
            continue;
          }
          // a snapshot taken after a write failed cuts those keys again: it never carries that row
          assertTrue(!segments.hasFailed(s.sequenceNr()), "seed " + seed + ": " + s + " failed before");
          if (random.nextInt(5) == 0) {
            segments.failed(s.sequenceNr());
            segmentStore.remove(s.sequenceNr());   // the store deletes the row of a failed save
            allStored = false;
            break;
          }
          segmentStore.put(s.sequenceNr(), (WindowSegment) roundTrip(s));
          segments.stored(s.sequenceNr());
        }
        if (allStored) {
          PartitionState<String> copy = live.copyForSnapshot();
          copy.withWindowImage(image);
          snapshots.put(seq, new Stored(seq, live.window().copy(), bytes(copy)));
        }
      } else {   // a restart, perhaps with other bounds
        if (random.nextInt(3) == 0) {
          boundsChanged = true;
          maxKeys = Math.max(1, maxKeys + random.nextInt(200) - 100);
          maxAge = Math.max(1, maxAge + random.nextInt(10_000) - 5_000);
        }
        Map.Entry<Long, Stored> newest = snapshots.lastEntry();
        List<BatchEvent> after = journal.subList(newest == null ? 0 : (int) (long) newest.getKey(), journal.size());
        KeyWindow reference = referenceRecovery(newest == null ? null : newest.getValue(), after, maxKeys, maxAge);
        PartitionState<String> recovered = recoverState(newest == null ? null : newest.getValue().segmented(), after,
            maxKeys, maxAge, segmentStore);
        assertSameWindow(reference, recovered.window(), "seed " + seed + ", step " + step);
        checks++;
        if (!boundsChanged) {   // same bounds throughout: recovery rebuilds the window the writer had
          assertSameWindow(reference, live.window(), "live, seed " + seed + ", step " + step);
        }
        live = recovered;
        segments = new WindowSegments(segmentKeys);
        segments.recovered();
        recoveredAt = journal.size();
      }
    }
    assertTrue(checks > 0, "seed " + seed + " never recovered");
  }

  /** Today's recovery before segments: the snapshot's full copy, bounded as the settings are now, then the entries after. */
  private static KeyWindow referenceRecovery(Stored snapshot, List<BatchEvent> after, int maxKeys, long maxAge) {
    PartitionState<String> state = snapshot == null
        ? PartitionState.empty("u", new KeyWindow(maxKeys, maxAge))
        : new PartitionState<>("u", 0, boundedCopy(snapshot.fullCopy(), maxKeys, maxAge), "", 0, 0, 0, 0, 0, Map.of(),
            List.of());
    for (BatchEvent e : after) {
      state = state.apply(e, "u");
    }
    return state.window();
  }

  /** The window kept as it is when its bounds are the settings', else re-added into a fresh one (as before). */
  private static KeyWindow boundedCopy(KeyWindow w, int maxKeys, long maxAge) {
    if (w.maxKeys() == maxKeys && w.maxAgeMillis() == maxAge && w.size() <= maxKeys) {
      return w.copy();
    }
    KeyWindow fresh = new KeyWindow(maxKeys, maxAge);
    w.forEach(fresh::add);
    return fresh;
  }

  /** The recovery under test: the segmented snapshot read back, entries replayed while its segments are read. */
  private PartitionState<String> recoverState(byte[] snapshot, List<BatchEvent> after, int maxKeys,
      long maxAge, Map<Long, WindowSegment> store) {
    PartitionActorSettings settings = DEFAULTS.withKeyWindow(true, maxKeys, Duration.ofMillis(maxAge));
    PartitionState<String> state;
    if (snapshot == null) {
      state = PartitionState.empty("u", RecoveryChecks.newWindow(settings));
    } else {
      @SuppressWarnings("unchecked")
      PartitionState<String> stored = (PartitionState<String>) fromBytes(snapshot);
      WindowImage image = stored.windowImage();
      state = new PartitionState<>("u", 0, null, "", 0, 0, 0, 0, 0, Map.of(), List.of());
      state.pendingWindow(image);
      if (image.refs().isEmpty()) {
        state.installWindow(RecoveryChecks.bounded(settings, image.restore(List.of())));
      }
    }
    for (BatchEvent e : after) {
      state = state.apply(e, "u");
    }
    if (state.windowPending()) {
      WindowImage image = state.windowImage();
      counted(after);
      List<WindowSegment> read = image.refs().stream().map(r -> store.get(r.sequenceNr())).toList();
      state.installWindow(RecoveryChecks.bounded(settings, image.restore(read)));
    }
    return state;
  }

  private void counted(List<BatchEvent> replayed) {
    segmented++;
    if (replayed.stream().anyMatch(e -> e.keyDigests().length > 0)) {
      segmentedWithReplay++;
    }
  }

  private static void assertSameWindow(KeyWindow expected, KeyWindow actual, String where) {
    assertEquals(triples(expected), triples(actual), where);
    assertEquals(expected.maxKeys(), actual.maxKeys(), where);
    assertEquals(expected.maxAgeMillis(), actual.maxAgeMillis(), where);
  }

  private static List<List<Long>> triples(KeyWindow w) {
    List<List<Long>> out = new ArrayList<>();
    w.forEach((hi, lo, at) -> out.add(List.of(hi, lo, at)));
    return out;
  }

  private static Serialization serialization() {
    return SerializationExtension.get(kit.system());
  }

  private static byte[] bytes(Object o) {
    return serialization().findSerializerFor(o).toBinary(o);
  }

  private static Object fromBytes(byte[] state) {
    return serialization().deserialize(state, FencepostSerializer.IDENTIFIER, "S").get();
  }

  private static Object roundTrip(WindowSegment s) {
    return serialization().deserialize(bytes(s), FencepostSerializer.IDENTIFIER, "W").get();
  }
}
