package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import com.typesafe.config.ConfigFactory;
import io.fencepost.errors.JournalGapException;
import io.fencepost.jdbc.JdbcProjection;
import io.fencepost.jdbc.JournalCompaction;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.embedded.Postgres;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.state.DurableStateStoreRegistry;
import org.apache.pekko.persistence.state.javadsl.DurableStateUpdateStore;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * Compaction never takes from a reader: it stops below every projection's and the outbox relay's
 * position (and below unpublished outbox records), says which reader held it back, and a reader
 * that meets entries compacted past it anyway stops there instead of skipping them.
 */
class JournalCompactionIT {

  private static JournalDatabase db;
  private static ActorTestKit kit;
  private PartitionId partition;
  private String scope;

  @BeforeAll
  static void start() {
    db = Postgres.shared().createDatabase("compaction_it");
    db.installSchema();
    kit = ActorTestKit.create("compaction", db.pekkoConfig().withFallback(ConfigFactory.load()));
  }

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
    Postgres.shared().dropDatabase(db);
  }

  @BeforeEach
  void name(TestInfo info) {
    scope = info.getTestMethod().orElseThrow().getName();
    partition = new PartitionId("g-" + scope, "payments", 0);
  }

  /** A ledger that publishes an outbox record for every payment at or above {@code publishFrom}. */
  static final class PublishingLedger extends TestLedger {
    private final long publishFrom;

    PublishingLedger(PartitionContext context, String scope, long publishFrom) {
      super(context, scope);
      this.publishFrom = publishFrom;
    }

    @Override
    protected Effects<Credited> onRecord(Ledger ledger, Inbound<Payment> in) {
      Effects<Credited> credit = super.onRecord(ledger, in);
      return in.offset() >= publishFrom ? credit.andPublish("credited", in.value().merchant(), in.value().paymentId())
          : credit;
    }
  }

  /** Five batches of 10 payments: journal entries 1..5, snapshots after entries 2 and 4. */
  private void journalFiveBatches(long publishFrom) {
    PartitionActorSettings settings = PartitionActorSettings.create(kit.system()).withSnapshotEvery(2);
    ActorRef<PartitionCommand> actor = kit.spawn(PartitionActor.behavior(partition, settings,
        ctx -> new PublishingLedger(ctx, scope, publishFrom)));
    for (long from = 0; from < 50; from += 10) {
      List<Inbound<?>> records = new ArrayList<>();
      for (long o = from; o < from + 10; o++) {
        records.add(TestLedger.payment(partition, o, "pay-" + o));
      }
      TestProbe<BatchOutcome> probe = kit.createTestProbe();
      actor.tell(new PartitionCommand.ApplyBatch(records, probe.ref()));
      assertInstanceOf(BatchOutcome.Applied.class, probe.expectMessageClass(BatchOutcome.class, Duration.ofSeconds(30)));
    }
    try {
      SnapshotRows.awaitNewest(db, partition.persistenceId(), 4);
    } catch (Exception e) {
      throw new AssertionError(e);
    }
    kit.stop(actor);
  }

  private JdbcProjection projection(String name, List<Long> seen) {
    return JdbcProjection.create(kit.system(), name, db, List.of(partition.persistenceId()),
        (tx, batch) -> seen.add(batch.fromOffset())).installSchema();
  }

  private JournalCompaction.Result compact() {
    return JournalCompaction.compact(kit.system(), db, partition.persistenceId());
  }

  @Test
  void aProjectionBehindTheSnapshotHoldsCompactionBackAndStillReadsEverything() {
    journalFiveBatches(Long.MAX_VALUE);
    List<Long> seen = new ArrayList<>();
    JdbcProjection balances = projection("balances-" + scope, seen);
    // The projection reads entries 1 and 2 only (as if it stopped there), then the rest arrive.
    try (Connection c = db.connect(); PreparedStatement st = c.prepareStatement(
        "UPDATE fencepost_projection_offsets SET seq = 2 WHERE projection = ? AND persistence_id = ?")) {
      st.setString(1, "balances-" + scope);
      st.setString(2, partition.persistenceId());
      assertEquals(1, st.executeUpdate(), "installSchema registered the projection at 0");
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }

    JournalCompaction.Result first = compact();
    assertEquals(new JournalCompaction.Result(partition.persistenceId(), 4, 2, 2,
        List.of("projection [balances-" + scope + "] at 2")), first);
    assertEquals(3, balances.runOnce(), "entries 3, 4 and 5 applied, none skipped");
    assertEquals(List.of(20L, 30L, 40L), seen, "the batches from offsets 20, 30 and 40");

    JournalCompaction.Result second = compact();
    assertEquals(new JournalCompaction.Result(partition.persistenceId(), 4, 4, 2, List.of()), second);
  }

  @Test
  void theOutboxRelaysStoredPositionHoldsCompactionBack() throws Exception {
    journalFiveBatches(0);
    @SuppressWarnings("unchecked")
    DurableStateUpdateStore<Object> store = DurableStateStoreRegistry.get(kit.system().classicSystem())
        .getDurableStateStoreFor(DurableStateUpdateStore.class, "jdbc-durable-state-store");
    store.upsertObject(OutboxRecord.relayPersistenceId(partition.persistenceId()), 1L, (Object) 3L, "")
        .toCompletableFuture().get(30, TimeUnit.SECONDS);
    assertEquals(new JournalCompaction.Result(partition.persistenceId(), 4, 3, 3,
        List.of("outbox records from entry 4 on, not yet published (relay at 3)")), compact());
  }

  @Test
  void outboxRecordsNoRelayPublishedYetAreNeverCompactedAndTheRelayStartsAfterTheRest() {
    journalFiveBatches(20);   // entries 3..5 hold outbox records; no relay has stored a position
    assertEquals(new JournalCompaction.Result(partition.persistenceId(), 4, 2, 2,
        List.of("outbox records from entry 3 on, not yet published (relay at 0)")), compact());
    // The relay's position moved to the limit: a relay starting now begins at entry 3, no hole.
    assertEquals(new JournalCompaction.Result(partition.persistenceId(), 4, 2, 0,
        List.of("outbox records from entry 3 on, not yet published (relay at 2)")), compact());
  }

  @Test
  void aProjectionFollowingATopicHoldsCompactionBackOnPartitionsItHasNotFoundYet() {
    // Installed before the topic has any journal: nothing to register but the topic itself.
    JdbcProjection.forTopics(kit.system(), "ahead-" + scope, db, partition.group(), List.of(partition.topic()),
        (tx, batch) -> { }).installSchema();
    journalFiveBatches(Long.MAX_VALUE);
    assertEquals(new JournalCompaction.Result(partition.persistenceId(), 4, 0, 0,
        List.of("projection [ahead-" + scope + "] at 0")), compact());
  }

  @Test
  void aProjectionInstalledButNotRunYetHoldsCompactionAtItsStart() {
    journalFiveBatches(Long.MAX_VALUE);
    projection("fresh-" + scope, new ArrayList<>());
    assertEquals(new JournalCompaction.Result(partition.persistenceId(), 4, 0, 0,
        List.of("projection [fresh-" + scope + "] at 0")), compact());
  }

  @Test
  void aProjectionThatMeetsEntriesCompactedPastItStopsThereInsteadOfSkippingThem() throws Exception {
    journalFiveBatches(Long.MAX_VALUE);
    // Compacted by hand (or by an older version) past a projection that has read nothing yet.
    try (Connection c = db.connect(); PreparedStatement st = c.prepareStatement("UPDATE event_journal SET "
        + "deleted = TRUE, event_payload = ? WHERE persistence_id = ? AND sequence_number <= 4")) {
      st.setBytes(1, new byte[0]);
      st.setString(2, partition.persistenceId());
      assertEquals(4, st.executeUpdate());
    }
    List<Long> seen = new ArrayList<>();
    JdbcProjection late = projection("late-" + scope, seen);
    JournalGapException gap = assertThrows(JournalGapException.class, late::runOnce);
    assertEquals(1, gap.firstMissing());
    assertEquals(4, gap.lastMissing());
    assertEquals(List.of(), seen, "entry 5 is not applied past the hole");
    assertEquals(0, late.position(partition.persistenceId()));
    assertEquals("[projection late-" + scope + "] journal entries [1..4] of [" + partition.persistenceId()
        + "] are not readable any more (compacted or deleted before this reader consumed them); it stops before "
        + "them instead of skipping what they held. Restore those rows from a backup, or accept the loss: set this "
        + "projection's position to 4 (table fencepost_projection_offsets, projection [late-" + scope + "], "
        + "persistence_id [" + partition.persistenceId() + "]); their read-model updates are then never applied",
        gap.getMessage());
  }
}
