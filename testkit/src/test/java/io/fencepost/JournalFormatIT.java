package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import com.typesafe.config.ConfigFactory;
import io.fencepost.jdbc.JournalCompaction;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.embedded.Postgres;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * A journal of format version 1, committed as rows of {@code event_journal} and {@code snapshot}
 * ({@code journal-fixtures/journal-v1.tsv}), is recovered exactly by today's code: the same next
 * offset and counts, every credit once, its business keys still dropping re-sends, and new batches
 * written after the committed ones recover too.
 *
 * <p>The fixture was written with {@link #writeTheFixture()} ({@code
 * -Dfencepost.write-journal-fixture=<file>}). A committed fixture is never rewritten: a format
 * change adds version 2, keeps reading this one, and commits a fixture of its own beside it.
 */
@Tag("integration")
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class JournalFormatIT {

  /** The fixture's partition; its persistence id is in the committed rows. */
  private static final PartitionId PARTITION = new PartitionId("journal-format", "payments", 0);
  private static final String SCOPE = "journal-format";

  private static JournalDatabase postgres;

  @BeforeAll
  static void createDatabase() {
    postgres = Postgres.shared().createDatabase("journal_format_it");
    postgres.installSchema();
  }

  @AfterAll
  static void dropDatabase() {
    Postgres.shared().dropDatabase(postgres);
  }

  private static ActorTestKit node(String name) {
    return ActorTestKit.create(name, postgres.pekkoConfig().withFallback(ConfigFactory.load()));
  }

  private static ActorRef<PartitionCommand> spawn(ActorTestKit kit) {
    PartitionActorSettings settings = PartitionActorSettings.create(kit.system()).withSnapshotEvery(3)
        .withFailureBackoff(Duration.ofMillis(50), Duration.ofMillis(200));
    return kit.spawn(PartitionActor.behavior(PARTITION, settings, ctx -> new TestLedger(ctx, SCOPE)));
  }

  private static BatchOutcome.Applied apply(ActorTestKit kit, ActorRef<PartitionCommand> actor, long from,
      String... paymentIds) {
    List<Inbound<?>> records = new ArrayList<>();
    for (String id : paymentIds) {
      records.add(TestLedger.payment(PARTITION, from++, id));
    }
    TestProbe<BatchOutcome> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.ApplyBatch(records, probe.ref()));
    return assertInstanceOf(BatchOutcome.Applied.class,
        probe.expectMessageClass(BatchOutcome.class, Duration.ofSeconds(30)));
  }

  private static PartitionStatus status(ActorTestKit kit, ActorRef<PartitionCommand> actor) {
    TestProbe<PartitionStatus> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.GetStatus(probe.ref()));
    return probe.expectMessageClass(PartitionStatus.class, Duration.ofSeconds(30));
  }

  @Test
  void aCommittedVersion1JournalIsRecoveredExactlyAndGoesOn() throws Exception {
    int rows = JournalRows.load(postgres, "journal-v1.tsv");
    assertEquals(5, rows, "4 journal rows and 1 snapshot row in the fixture");
    assertEquals(3, JournalCompaction.newestSnapshot(postgres, PARTITION.persistenceId()),
        "recovery starts from the snapshot at 3 and replays the entry at 4");

    ActorTestKit first = node("format1");
    try {
      ActorRef<PartitionCommand> actor = spawn(first);
      PartitionStatus recovered = status(first, actor);
      assertEquals(11, recovered.nextOffset().getAsLong());
      assertEquals(10, recovered.appliedRecords());
      assertEquals(1, recovered.droppedByKey());
      assertEquals(10, recovered.windowKeys());

      // Re-sends of keys of the committed rows: pay-2 is in the snapshot's window, pay-10 in the entry
      // after it. Both are dropped; a new key is applied.
      BatchOutcome.Applied resent = apply(first, actor, 11, "pay-2", "pay-10", "pay-13");
      assertEquals(new BatchOutcome.Applied(PARTITION, 14, 1, 0, 2, true), resent);
      // Redelivery of old offsets is dropped by the stored offset.
      BatchOutcome.Applied redelivered = apply(first, actor, 5, "pay-5", "pay-1");
      assertEquals(new BatchOutcome.Applied(PARTITION, 14, 0, 2, 0, false), redelivered);
      assertEquals(expectedCredits(13), KafkaPipelineIT.creditsPerOffset(first.system(), PARTITION));
      assertEquals(List.of("B", "B", "B", "B", "B"), manifests());
    } finally {
      first.shutdownTestKit();
    }

    // The committed rows and the new one recover together.
    ActorTestKit second = node("format2");
    try {
      ActorRef<PartitionCommand> actor = spawn(second);
      PartitionStatus recovered = status(second, actor);
      assertEquals(14, recovered.nextOffset().getAsLong());
      assertEquals(11, recovered.appliedRecords());
      assertEquals(3, recovered.droppedByKey());
      BatchOutcome.Applied again = apply(second, actor, 14, "pay-13", "pay-3", "pay-15");
      assertEquals(new BatchOutcome.Applied(PARTITION, 17, 1, 0, 2, true), again);
      Map<Long, Integer> expected = expectedCredits(13);
      expected.put(16L, 1);
      assertEquals(expected, KafkaPipelineIT.creditsPerOffset(second.system(), PARTITION));
      assertEquals(List.of("B", "B", "B", "B", "B", "B"), manifests());

      // A large frame is stored compressed: its random key digests come last, so PostgreSQL's pglz
      // finds the events' repetition within the first KiB (a frame that began with them was stored raw).
      String[] ids = new String[500];
      for (int i = 0; i < ids.length; i++) {
        ids[i] = "pay-" + (1000 + i);
      }
      assertEquals(500, apply(second, actor, 17, ids).applied());
      long[] sizes = storedAndRaw(7);
      assertTrue(sizes[0] * 10 < sizes[1] * 6, "stored " + sizes[0] + " of " + sizes[1] + " bytes");
    } finally {
      second.shutdownTestKit();
    }
  }

  /** The stored (after compression) and raw size of the partition's entry {@code sequenceNr}. */
  private static long[] storedAndRaw(long sequenceNr) throws SQLException {
    try (Connection c = postgres.connect(); PreparedStatement st = c.prepareStatement("SELECT "
        + "pg_column_size(event_payload), octet_length(event_payload) FROM event_journal "
        + "WHERE persistence_id = ? AND sequence_number = ?")) {
      st.setString(1, PARTITION.persistenceId());
      st.setLong(2, sequenceNr);
      try (ResultSet rs = st.executeQuery()) {
        rs.next();
        return new long[] {rs.getLong(1), rs.getLong(2)};
      }
    }
  }

  /** The manifests of the partition's journal entries, in order. */
  private static List<String> manifests() throws SQLException {
    List<String> out = new ArrayList<>();
    try (Connection c = postgres.connect(); PreparedStatement st = c.prepareStatement(
        "SELECT event_ser_manifest FROM event_journal WHERE persistence_id = ? ORDER BY sequence_number")) {
      st.setString(1, PARTITION.persistenceId());
      try (ResultSet rs = st.executeQuery()) {
        while (rs.next()) {
          out.add(rs.getString(1));
        }
      }
    }
    return out;
  }

  /** Offsets 0..10 but 6 (pay-1 re-sent, dropped by key), and {@code extra}, once each. */
  private static Map<Long, Integer> expectedCredits(long extra) {
    Map<Long, Integer> out = new TreeMap<>();
    for (long o = 0; o <= 10; o++) {
      if (o != 6) {
        out.put(o, 1);
      }
    }
    out.put(extra, 1);
    return out;
  }

  /**
   * Writes the fixture with the code it runs on: 4 batches (one with a business key re-sent), a
   * snapshot at 3 (snapshot-every 3), then dumps the partition's rows.
   */
  @Test
  @EnabledIfSystemProperty(named = "fencepost.write-journal-fixture", matches = ".+")
  void writeTheFixture() throws Exception {
    ActorTestKit kit = node("writer");
    try {
      ActorRef<PartitionCommand> actor = spawn(kit);
      apply(kit, actor, 0, "pay-0", "pay-1", "pay-2", "pay-3");
      apply(kit, actor, 4, "pay-4", "pay-5", "pay-1");
      apply(kit, actor, 7, "pay-7", "pay-8");
      SnapshotRows.awaitNewest(postgres, PARTITION.persistenceId(), 3);
      apply(kit, actor, 9, "pay-9", "pay-10");
    } finally {
      kit.shutdownTestKit();
    }
    JournalRows.dump(postgres, PARTITION.persistenceId(), Path.of(System.getProperty("fencepost.write-journal-fixture")));
  }
}
