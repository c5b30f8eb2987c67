package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import com.typesafe.config.ConfigFactory;
import io.fencepost.internal.WindowSegment;
import io.fencepost.internal.WindowSegments;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.testkit.Postgres;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The key window's snapshots on a real snapshot store (pekko-persistence-jdbc on PostgreSQL): older
 * keys go into segments written once, a snapshot's size follows the keys added since the last
 * segment, a new incarnation reads the segments back before it applies a batch, segments no
 * snapshot refers to are deleted, and a segment that cannot be read stops the incarnation, never
 * letting it run with a smaller window, until the row is back.
 */
@Tag("integration")
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class WindowSegmentsIT {

  private static final int BATCH = 1_000;
  private static JournalDatabase postgres;
  private final List<ActorTestKit> kits = new ArrayList<>();
  private final PartitionId partition = new PartitionId("g-window-" + System.nanoTime(), "payments", 0);

  @BeforeAll
  static void createDatabase() {
    postgres = Postgres.shared().createDatabase("window_segments_it");
    postgres.installSchema();
  }

  @AfterAll
  static void dropDatabase() {
    Postgres.shared().dropDatabase(postgres);
  }

  @AfterEach
  void shutdown() {
    for (ActorTestKit kit : kits) {
      kit.shutdownTestKit();
    }
  }

  private ActorTestKit node() {
    ActorTestKit kit = ActorTestKit.create("node" + kits.size(), postgres.pekkoConfig().withFallback(ConfigFactory.load()));
    FencepostMeters.get(kit.system()).use(new io.micrometer.core.instrument.simple.SimpleMeterRegistry());
    kits.add(kit);
    return kit;
  }

  private ActorRef<PartitionCommand> spawn(ActorTestKit kit, int maxKeys) {
    PartitionActorSettings settings = PartitionActorSettings.create(kit.system())
        .withKeyWindow(true, maxKeys, Duration.ofHours(1)).withSnapshotEvery(10)
        .withFailureBackoff(Duration.ofMillis(50), Duration.ofMillis(200));
    return kit.spawn(PartitionActor.behavior(partition, settings, ctx -> new TestLedger(ctx, "window")));
  }

  private BatchOutcome.Applied apply(ActorTestKit kit, ActorRef<PartitionCommand> actor, List<Inbound<?>> records) {
    TestProbe<BatchOutcome> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.ApplyBatch(records, probe.ref()));
    return assertInstanceOf(BatchOutcome.Applied.class, probe.expectMessageClass(BatchOutcome.class,
        Duration.ofSeconds(30)));
  }

  /** Batches of distinct keys pay-{offset} for offsets [from, to). */
  private void payments(ActorTestKit kit, ActorRef<PartitionCommand> actor, long from, long to) {
    for (long o = from; o < to; o += BATCH) {
      List<Inbound<?>> batch = new ArrayList<>();
      for (long i = o; i < Math.min(to, o + BATCH); i++) {
        batch.add(TestLedger.payment(partition, i, "pay-" + i));
      }
      apply(kit, actor, batch);
    }
  }

  @Test
  void snapshotsReferToSegmentsAndANewIncarnationReadsThemBackBeforeItApplies() throws Exception {
    ActorTestKit kit = node();
    ActorRef<PartitionCommand> actor = spawn(kit, 1_000_000);
    payments(kit, actor, 0, 100_000);   // 100 writes: 10 snapshots, 10,000 keys apart
    SnapshotRows.awaitNewest(postgres, partition.persistenceId(), 100);

    // Segments of exactly 32,768 keys, each written once, cut by the snapshots after the writes 40
    // (keys 0..32,767), 70 (..65,535) and 100 (..98,303); the newest snapshot holds the 1,696 keys
    // after them inline: its size follows the keys since the last segment, not the window's 100,000.
    String windowId = WindowSegment.persistenceIdOf(partition.persistenceId());
    TreeMap<Long, Integer> segments = rows(windowId);
    assertEquals(List.of(WindowSegment.rowKey(40, 0), WindowSegment.rowKey(70, 0), WindowSegment.rowKey(100, 0)),
        List.copyOf(segments.keySet()), "segment rows");
    for (int bytes : segments.values()) {
      assertTrue(bytes >= 32_768 * 24 && bytes < 32_768 * 24 + 100, "a segment of 32,768 keys: " + bytes);
    }
    int newest = rows(partition.persistenceId()).lastEntry().getValue();
    assertTrue(newest > 1_696 * 24 && newest < 1_696 * 24 + 1_000, "the newest snapshot holds 1,696 keys inline: "
        + newest + " bytes");
    assertEquals(32_768, WindowSegments.SEGMENT_KEYS);

    // A new incarnation (another node): its first batch is stashed until the segments are read, then
    // the re-sent pay-0 (the oldest key, in the first segment) and pay-99999 (inline) are dropped.
    ActorTestKit other = node();
    ActorRef<PartitionCommand> recovered = spawn(other, 1_000_000);
    BatchOutcome.Applied resent = apply(other, recovered, List.of(TestLedger.payment(partition, 100_000, "pay-0"),
        TestLedger.payment(partition, 100_001, "pay-99999"), TestLedger.payment(partition, 100_002, "pay-new")));
    assertEquals(new BatchOutcome.Applied(partition, 100_003, 1, 0, 2, true), resent);
    assertEquals(100_001, status(other, recovered).windowKeys());

    // Its first snapshot (after write 110) refers to no segment of the incarnation before: it cuts
    // the window into its own rows, so an earlier owner deleting its own never deletes one of these.
    for (long o = 100_003; o < 100_012; o++) {
      apply(other, recovered, List.of(TestLedger.payment(partition, o, "pay-" + o)));
    }
    SnapshotRows.awaitNewest(postgres, partition.persistenceId(), 110);
    assertEquals(List.of(WindowSegment.rowKey(110, 0), WindowSegment.rowKey(110, 1), WindowSegment.rowKey(110, 2)),
        List.copyOf(rows(windowId).tailMap(WindowSegment.rowKey(101, 0)).keySet()));
  }

  @Test
  void segmentsNoSnapshotReferToAreDeleted() throws Exception {
    ActorTestKit kit = node();
    ActorRef<PartitionCommand> actor = spawn(kit, 50_000);   // the window forgets, so do its segments
    payments(kit, actor, 0, 200_000);
    SnapshotRows.awaitNewest(postgres, partition.persistenceId(), 200);
    String windowId = WindowSegment.persistenceIdOf(partition.persistenceId());
    // Segments of 32,768 keys cut after the writes 40, 70, 100, 140 (keys 98,304..131,071), 170
    // (131,072..163,839) and 200. The snapshots kept (keep-snapshots = 2) are at 190 and 200; the
    // older one's window is keys 140,000..189,999: segment 170 and inline. No snapshot kept refers to
    // the segments before 170.
    awaitRows(windowId, List.of(WindowSegment.rowKey(170, 0), WindowSegment.rowKey(200, 0)));
  }

  @Test
  void aSegmentThatCannotBeReadStopsTheIncarnationUntilItIsBack() throws Exception {
    ActorTestKit kit = node();
    ActorRef<PartitionCommand> actor = spawn(kit, 1_000_000);
    payments(kit, actor, 0, 50_000);
    SnapshotRows.awaitNewest(postgres, partition.persistenceId(), 50);
    kit.stop(actor);
    String windowId = WindowSegment.persistenceIdOf(partition.persistenceId());
    long row = WindowSegment.rowKey(40, 0);   // keys 0..32,767; the other 17,232 are inline
    assertEquals(List.of(row), List.copyOf(rows(windowId).keySet()));
    byte[] saved;
    try (Connection c = postgres.connect();
         PreparedStatement select = c.prepareStatement(
             "SELECT snapshot_payload FROM snapshot WHERE persistence_id = ? AND sequence_number = ?")) {
      select.setString(1, windowId);
      select.setLong(2, row);
      ResultSet rs = select.executeQuery();
      assertTrue(rs.next());
      saved = rs.getBytes(1);
      try (PreparedStatement delete = c.prepareStatement("DELETE FROM snapshot WHERE persistence_id = ?")) {
        delete.setString(1, windowId);
        assertEquals(1, delete.executeUpdate());
      }
    }

    // Without its segment the window would miss pay-0..pay-32767: the incarnation stops instead
    // of applying pay-0 again; three in a row count as a halt.
    ActorTestKit other = node();
    for (int attempt = 1; attempt <= 3; attempt++) {
      ActorRef<PartitionCommand> incarnation = spawn(other, 1_000_000);
      TestProbe<BatchOutcome> probe = other.createTestProbe();
      incarnation.tell(new PartitionCommand.ApplyBatch(List.of(TestLedger.payment(partition, 50_000, "pay-0")),
          probe.ref()));
      probe.expectTerminated(incarnation, Duration.ofSeconds(30));
      probe.expectNoMessage(Duration.ZERO);
    }
    assertEquals(1.0, haltCount(other));

    // The row is back: the next incarnation reads it and drops the re-sent pay-0.
    try (Connection c = postgres.connect();
         PreparedStatement insert = c.prepareStatement("INSERT INTO snapshot (persistence_id, sequence_number, "
             + "created, snapshot_ser_id, snapshot_ser_manifest, snapshot_payload) VALUES (?, ?, 0, ?, 'W', ?)")) {
      insert.setString(1, windowId);
      insert.setLong(2, row);
      insert.setInt(3, io.fencepost.internal.FencepostSerializer.IDENTIFIER);
      insert.setBytes(4, saved);
      assertEquals(1, insert.executeUpdate());
    }
    ActorRef<PartitionCommand> healed = spawn(other, 1_000_000);
    assertEquals(new BatchOutcome.Applied(partition, 50_001, 0, 0, 1, true),
        apply(other, healed, List.of(TestLedger.payment(partition, 50_000, "pay-0"))));
  }

  private static double haltCount(ActorTestKit kit) {
    return FencepostMeters.get(kit.system()).registry().find("fencepost.partition.halts")
        .tag("cause", "window-unreadable").counters().stream().mapToDouble(c -> c.count()).sum();
  }

  private static PartitionStatus status(ActorTestKit kit, ActorRef<PartitionCommand> actor) {
    TestProbe<PartitionStatus> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.GetStatus(probe.ref()));
    return probe.expectMessageClass(PartitionStatus.class, Duration.ofSeconds(30));
  }

  /** Snapshot rows of {@code persistenceId}: payload bytes by sequence number. */
  private static TreeMap<Long, Integer> rows(String persistenceId) throws Exception {
    TreeMap<Long, Integer> out = new TreeMap<>();
    try (Connection c = postgres.connect();
         PreparedStatement st = c.prepareStatement("SELECT sequence_number, length(snapshot_payload) FROM snapshot "
             + "WHERE persistence_id = ?")) {
      st.setString(1, persistenceId);
      ResultSet rs = st.executeQuery();
      while (rs.next()) {
        out.put(rs.getLong(1), rs.getInt(2));
      }
    }
    return out;
  }

  private static void awaitRows(String persistenceId, List<Long> expected) throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    List<Long> now = List.copyOf(rows(persistenceId).keySet());
    while (!now.equals(expected)) {
      if (System.nanoTime() > deadline) {
        assertEquals(expected, now, "segment rows of " + persistenceId + " after 30 s");
      }
      Thread.sleep(20);
      now = List.copyOf(rows(persistenceId).keySet());
    }
  }
}
