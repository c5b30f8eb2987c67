package io.fencepost.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Predicate;

import com.typesafe.config.ConfigFactory;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.pattern.Patterns;
import org.apache.pekko.persistence.Persistence;
import org.apache.pekko.persistence.SnapshotProtocol;
import org.apache.pekko.persistence.SnapshotSelectionCriteria;
import org.apache.pekko.persistence.testkit.PersistenceTestKitPlugin;
import org.apache.pekko.persistence.testkit.PersistenceTestKitSnapshotPlugin;
import org.apache.pekko.persistence.testkit.ProcessingPolicy;
import org.apache.pekko.persistence.testkit.ProcessingResult;
import org.apache.pekko.persistence.testkit.ProcessingSuccess;
import org.apache.pekko.persistence.testkit.SnapshotMeta;
import org.apache.pekko.persistence.testkit.SnapshotOperation;
import org.apache.pekko.persistence.testkit.StorageFailure;
import org.apache.pekko.persistence.testkit.WriteSnapshot;
import org.apache.pekko.persistence.testkit.javadsl.SnapshotTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * What the snapshot writer stores and deletes of the key window's segments, on Pekko's in-memory
 * snapshot store: a segment whose write failed is never referred to (the keys are cut again under a
 * later row), and the segments of the snapshot an incarnation recovered from are kept until the
 * snapshots up to its recovery are deleted.
 */
class SnapshotWriterSegmentsTest {

  private static final ActorTestKit kit = ActorTestKit.create("snapshot-writer-segments",
      PersistenceTestKitPlugin.getInstance().config().withFallback(PersistenceTestKitSnapshotPlugin.config())
          .withFallback(ConfigFactory.load()));
  private static final SnapshotTestKit store = new SnapshotTestKit(kit.system().classicSystem());
  private static final int KEYS = 2 * WindowSegments.SEGMENT_KEYS + 100;   // two segments and some inline

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  private static SnapshotWriter writer(String persistenceId) {
    return new SnapshotWriter(kit.system(), "", persistenceId, "test", 10, 2,
        LoggerFactory.getLogger(SnapshotWriterSegmentsTest.class), () -> { });
  }

  private static PartitionState<String> state() {
    KeyWindow w = new KeyWindow(1_000_000, 86_400_000);
    for (int i = 0; i < KEYS; i++) {
      w.add(i, ~i, 1_000);
    }
    return new PartitionState<>("u", 0, w, "", 0, 0, 0, 0, 0, Map.of(), List.of());
  }

  @Test
  void aSegmentWhoseWriteFailedIsNeverReferredToAndItsKeysAreCutAgain() throws Exception {
    String id = "fencepost|g|failed-segment|0";
    String windowId = WindowSegment.persistenceIdOf(id);
    // The first segment write waits until released, then fails (Pekko's store then deletes its row).
    CountDownLatch writing = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicBoolean failed = new AtomicBoolean();
    store.withPolicy(new ProcessingPolicy<SnapshotOperation>() {
      @Override
      public ProcessingResult tryProcess(String persistenceId, SnapshotOperation op) {
        if (persistenceId.equals(windowId) && op instanceof WriteSnapshot && failed.compareAndSet(false, true)) {
          writing.countDown();
          try {
            release.await(10, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          return new StorageFailure(new IllegalStateException("database away"));
        }
        return ProcessingSuccess.getInstance();
      }
    });
    try {
      SnapshotWriter writer = writer(id);
      writer.recovered(0, null);
      writer.written(10, state());   // cuts rows (10, 0) and (10, 1); the first write hangs, then fails
      assertTrue(writing.await(10, TimeUnit.SECONDS));
      writer.written(20, state());   // taken while they are unconfirmed: carries them, and waits
      release.countDown();
      // The snapshot at 20 carries a failed row: dropped, never writing it again. The one at 30 cuts
      // the keys again under its own rows and refers only to them.
      writer.written(30, state());
      await(id, rows -> rows.contains(30L));
      assertEquals(List.of(30L), rows(id), "the snapshots at 10 and 20 were not stored");
      WindowImage image = ((PartitionState<?>) store.persistedInStorage(id).get(0).second()).windowImage();
      List<Long> referred = image.refs().stream().map(WindowImage.SegmentRef::sequenceNr).toList();
      assertEquals(List.of(WindowSegment.rowKey(30, 0), WindowSegment.rowKey(30, 1)), referred);
      barrier();
      assertEquals(referred, rows(windowId), "no row of 10 was written again");
    } finally {
      store.resetPolicy();
    }
  }

  @Test
  void theSegmentsOfTheSnapshotRecoveredFromAreKeptUntilTheSnapshotsUpToTheRecoveryAreDeleted() throws Exception {
    String id = "fencepost|g|recovered-segments|0";
    String windowId = WindowSegment.persistenceIdOf(id);
    // An earlier owner's snapshots at 5 and 15, referring to its segment at row (5, 0); this
    // incarnation recovered at 25.
    long old = WindowSegment.rowKey(5, 0);
    WindowSegment segment = new WindowSegment(old, 0, new long[] {1, 2, 3});
    store.persistForRecovery(windowId, List.of(Pair.create(SnapshotMeta.create(old, 0L), segment)));
    store.persistForRecovery(id, List.of(Pair.create(SnapshotMeta.create(5, 0L), "old"),
        Pair.create(SnapshotMeta.create(15, 0L), "old")));
    WindowImage recovered = new WindowImage(1_000_000, 86_400_000, 1, 1, List.of(segment.ref()), 1, new long[0],
        List.of());
    SnapshotWriter writer = writer(id);
    writer.recovered(25, recovered);
    writer.written(30, state());
    writer.written(40, state());
    // After the snapshot at 40 the store deletes the snapshots up to 40 - 2 * 10 = 20 (5 and 15),
    // then the segments below the lowest one still referred to: 20 < 25, so the recovered snapshot's
    // segment still counts, and stays with this incarnation's own (cut at 30, its first snapshot).
    await(id, rows -> rows.equals(List.of(30L, 40L)));
    barrier();
    assertEquals(List.of(old, WindowSegment.rowKey(30, 0), WindowSegment.rowKey(30, 1)), rows(windowId));
    writer.written(50, state());
    // Up to 30 >= 25: the snapshots up to the recovery are gone, and so is the earlier owner's segment.
    await(id, rows -> rows.equals(List.of(40L, 50L)));
    barrier();
    awaitRows(windowId, List.of(WindowSegment.rowKey(30, 0), WindowSegment.rowKey(30, 1)));
  }

  /** An answer from the snapshot store: the deletions asked before it are done. */
  private static void barrier() throws Exception {
    ActorRef plugin = Persistence.get(kit.system().classicSystem())
        .snapshotStoreFor("", ConfigFactory.empty());
    Patterns.ask(plugin, new SnapshotProtocol.LoadSnapshot(
        "barrier", SnapshotSelectionCriteria.latest(), Long.MAX_VALUE),
        Duration.ofSeconds(10)).toCompletableFuture().get();
  }

  private static List<Long> rows(String persistenceId) {
    return store.persistedInStorage(persistenceId).stream().map(p -> p.first().sequenceNr()).sorted().toList();
  }

  private static void await(String persistenceId, Predicate<List<Long>> condition) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (!condition.test(rows(persistenceId))) {
      assertTrue(System.nanoTime() < deadline, "rows of " + persistenceId + ": " + rows(persistenceId));
      Thread.sleep(10);
    }
  }

  /** Waits for the rows to be {@code expected} (deletions are asynchronous). */
  private static void awaitRows(String persistenceId, List<Long> expected) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (!rows(persistenceId).equals(expected) && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertEquals(expected, rows(persistenceId), "rows of " + persistenceId);
  }
}
