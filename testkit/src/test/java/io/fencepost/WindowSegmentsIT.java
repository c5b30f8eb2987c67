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

    // Three segments (cut once 32,768 keys were not in one yet), each written once; the newest
    // snapshot holds the rest inline: its size follows the keys since the last segment.
    TreeMap<Long, Integer> segments = rows(WindowSegment.persistenceIdOf(partition.persistenceId()));
    assertEquals(List.of(40L, 80L), List.copyOf(segments.keySet()), "segment rows by sequence number");
    for (int bytes : segments.values()) {
      assertTrue(bytes >= 40_000 * 24 && bytes < 40_000 * 24 + 100, "a segment of 40,000 keys: " + bytes);
    }
    int newest = rows(partition.persistenceId()).lastEntry().getValue();
    assertTrue(newest > 20_000 * 24 && newest < 20_000 * 24 + 1_000, "the newest snapshot holds 20,000 keys inline "
        + "(the window has 100,000): " + newest + " bytes");
    assertTrue(WindowSegments.SEGMENT_KEYS <= 40_000);

    // A new incarnation (another node): its first batch is stashed until the segments are read, then
    // the re-sent pay-0 (the oldest key, in the first segment) and pay-99999 (inline) are dropped.
    ActorTestKit other = node();
    ActorRef<PartitionCommand> recovered = spawn(other, 1_000_000);
    BatchOutcome.Applied resent = apply(other, recovered, List.of(TestLedger.payment(partition, 100_000, "pay-0"),
        TestLedger.payment(partition, 100_001, "pay-99999"), TestLedger.payment(partition, 100_002, "pay-new")));
    assertEquals(new BatchOutcome.Applied(partition, 100_003, 1, 0, 2, true), resent);
    assertEquals(100_001, status(other, recovered).windowKeys());
  }

  @Test
  void segmentsNoSnapshotReferToAreDeleted() throws Exception {
    ActorTestKit kit = node();
    ActorRef<PartitionCommand> actor = spawn(kit, 50_000);   // the window forgets, so do its segments
    payments(kit, actor, 0, 200_000);
    SnapshotRows.awaitNewest(postgres, partition.persistenceId(), 200);
    String windowId = WindowSegment.persistenceIdOf(partition.persistenceId());
    // Segments cut at 40, 80, 120, 160 and 200, 40,000 keys each. The snapshots kept (keep-snapshots
    // = 2) are at 190 and 200; the older one's window is keys 140,000..189,999: segment 160 (keys
    // 120,000..159,999) and inline. Segments 40, 80 and 120 are referred to by no snapshot kept.
    awaitRows(windowId, List.of(160L, 200L));
  }

  @Test
  void aSegmentThatCannotBeReadStopsTheIncarnationUntilItIsBack() throws Exception {
    ActorTestKit kit = node();
    ActorRef<PartitionCommand> actor = spawn(kit, 1_000_000);
    payments(kit, actor, 0, 50_000);
    SnapshotRows.awaitNewest(postgres, partition.persistenceId(), 50);
    kit.stop(actor);
    String windowId = WindowSegment.persistenceIdOf(partition.persistenceId());
    assertEquals(List.of(40L), List.copyOf(rows(windowId).keySet()));
    byte[] saved;
    try (Connection c = postgres.connect();
         PreparedStatement select = c.prepareStatement(
             "SELECT snapshot_payload FROM snapshot WHERE persistence_id = ? AND sequence_number = 40")) {
      select.setString(1, windowId);
      ResultSet rs = select.executeQuery();
      assertTrue(rs.next());
      saved = rs.getBytes(1);
      try (PreparedStatement delete = c.prepareStatement("DELETE FROM snapshot WHERE persistence_id = ?")) {
        delete.setString(1, windowId);
        assertEquals(1, delete.executeUpdate());
      }
    }

    // Without its segment the window would miss pay-0..pay-39999: the incarnation stops instead
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
             + "created, snapshot_ser_id, snapshot_ser_manifest, snapshot_payload) VALUES (?, 40, 0, ?, 'W', ?)")) {
      insert.setString(1, windowId);
      insert.setInt(2, io.fencepost.internal.FencepostSerializer.IDENTIFIER);
      insert.setBytes(3, saved);
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
