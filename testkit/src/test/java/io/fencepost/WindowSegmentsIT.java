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
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import com.typesafe.config.ConfigFactory;
import io.fencepost.internal.FencepostSerializer;
import io.fencepost.internal.WindowSegment;
import io.fencepost.internal.WindowSegments;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.embedded.Postgres;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
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
  private static final int SEGMENT = WindowSegments.SEGMENT_KEYS;
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
    FencepostMeters.get(kit.system()).use(new SimpleMeterRegistry());
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

    // Segments of exactly SEGMENT_KEYS (8,192) keys, each written once, cut by the snapshots as the
    // keys came; the newest snapshot holds the keys after the last segment inline (1,696): its size
    // follows the keys since the last segment, not the window's 100,000.
    String windowId = WindowSegment.persistenceIdOf(partition.persistenceId());
    TreeMap<Long, Integer> segments = rows(windowId);
    TreeMap<Long, long[]> cuts = cuts(100);
    assertEquals(12, cuts.size());
    assertEquals(List.copyOf(cuts.keySet()), List.copyOf(segments.keySet()), "segment rows");
    for (int bytes : segments.values()) {
      assertTrue(bytes >= SEGMENT * 24 && bytes < SEGMENT * 24 + 100, "a segment of " + SEGMENT + " keys: " + bytes);
    }
    long inline = 100_000 - cuts.lastEntry().getValue()[1];
    assertEquals(1_696, inline);
    int newest = rows(partition.persistenceId()).lastEntry().getValue();
    assertTrue(newest > inline * 24 && newest < inline * 24 + 1_000, "the newest snapshot holds " + inline
        + " keys inline: " + newest + " bytes");

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
    List<Long> own = new ArrayList<>();
    for (int i = 0; i < 100_012 / SEGMENT; i++) {
      own.add(WindowSegment.rowKey(110, i));
    }
    assertEquals(own, List.copyOf(rows(windowId).tailMap(WindowSegment.rowKey(101, 0)).keySet()));
  }

  @Test
  void segmentsNoSnapshotReferToAreDeleted() throws Exception {
    ActorTestKit kit = node();
    ActorRef<PartitionCommand> actor = spawn(kit, 50_000);   // the window forgets, so do its segments
    payments(kit, actor, 0, 200_000);
    SnapshotRows.awaitNewest(postgres, partition.persistenceId(), 200);
    String windowId = WindowSegment.persistenceIdOf(partition.persistenceId());
    // The snapshots kept (keep-snapshots = 2) are at 190 and 200; the older one's window is keys
    // 140,000..189,999. No snapshot kept refers to the segments that end at or before key 140,000.
    List<Long> referred = cuts(200).entrySet().stream().filter(e -> e.getValue()[1] > 140_000)
        .map(Map.Entry::getKey).toList();
    assertEquals(7, referred.size());
    awaitRows(windowId, referred);
  }

  @Test
  void aSegmentThatCannotBeReadStopsTheIncarnationUntilItIsBack() throws Exception {
    ActorTestKit kit = node();
    ActorRef<PartitionCommand> actor = spawn(kit, 1_000_000);
    payments(kit, actor, 0, 50_000);
    SnapshotRows.awaitNewest(postgres, partition.persistenceId(), 50);
    kit.stop(actor);
    String windowId = WindowSegment.persistenceIdOf(partition.persistenceId());
    List<Long> cut = List.copyOf(cuts(50).keySet());   // keys 0..49,151; the other 848 are inline
    assertEquals(cut, List.copyOf(rows(windowId).keySet()));
    List<byte[]> saved = new ArrayList<>();
    try (Connection c = postgres.connect();
         PreparedStatement select = c.prepareStatement(
             "SELECT snapshot_payload FROM snapshot WHERE persistence_id = ? ORDER BY sequence_number")) {
      select.setString(1, windowId);
      ResultSet rs = select.executeQuery();
      while (rs.next()) {
        saved.add(rs.getBytes(1));
      }
      try (PreparedStatement delete = c.prepareStatement("DELETE FROM snapshot WHERE persistence_id = ?")) {
        delete.setString(1, windowId);
        assertEquals(cut.size(), delete.executeUpdate());
      }
    }

    // Without its segments the window would miss pay-0..pay-49151: the incarnation stops instead
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

    // The rows are back: the next incarnation reads them and drops the re-sent pay-0.
    try (Connection c = postgres.connect();
         PreparedStatement insert = c.prepareStatement("INSERT INTO snapshot (persistence_id, sequence_number, "
             + "created, snapshot_ser_id, snapshot_ser_manifest, snapshot_payload) VALUES (?, ?, 0, ?, 'W', ?)")) {
      for (int i = 0; i < cut.size(); i++) {
        insert.setString(1, windowId);
        insert.setLong(2, cut.get(i));
        insert.setInt(3, FencepostSerializer.IDENTIFIER);
        insert.setBytes(4, saved.get(i));
        assertEquals(1, insert.executeUpdate());
      }
    }
    ActorRef<PartitionCommand> healed = spawn(other, 1_000_000);
    assertEquals(new BatchOutcome.Applied(partition, 50_001, 0, 0, 1, true),
        apply(other, healed, List.of(TestLedger.payment(partition, 50_000, "pay-0"))));
  }

  /**
   * The segments one incarnation cuts when its snapshots come every 10 writes of {@value #BATCH}
   * new keys, up to write {@code last}: row to ordinals [from, to).
   */
  private static TreeMap<Long, long[]> cuts(long last) {
    TreeMap<Long, long[]> out = new TreeMap<>();
    long cut = 0;
    for (long seq = 10; seq <= last; seq += 10) {
      for (int i = 0; seq * BATCH - cut >= SEGMENT; i++) {
        out.put(WindowSegment.rowKey(seq, i), new long[] {cut, cut + SEGMENT});
        cut += SEGMENT;
      }
    }
    return out;
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
