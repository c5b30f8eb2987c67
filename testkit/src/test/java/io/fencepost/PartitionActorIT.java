package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.errors.HandlerFailedException;
import io.fencepost.errors.PartitionFencedException;
import io.fencepost.errors.RetriableException;
import io.fencepost.internal.BatchEvent;
import io.fencepost.jdbc.JournalCompaction;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.embedded.H2;
import io.fencepost.embedded.Postgres;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.persistence.jdbc.query.javadsl.JdbcReadJournal;
import org.apache.pekko.persistence.query.EventEnvelope;
import org.apache.pekko.persistence.query.PersistenceQuery;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

/**
 * PartitionActor against a real journal: pekko-persistence-jdbc on a real PostgreSQL (embedded or
 * FENCEPOST_PG_URL), and on H2 where noted. Every test asserts exact counts per offset read back
 * from the journal itself.
 */
@Tag("integration")
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class PartitionActorIT {

  private static JournalDatabase postgres;
  private final List<ActorTestKit> kits = new ArrayList<>();
  private String scope;
  private PartitionId partition;

  @BeforeAll
  static void createDatabase() {
    postgres = Postgres.shared().createDatabase("partition_actor_it");
    postgres.installSchema();
  }

  @AfterAll
  static void dropDatabase() {
    Postgres.shared().dropDatabase(postgres);
  }

  @BeforeEach
  void name(TestInfo info) {
    scope = info.getTestMethod().orElseThrow().getName() + "-" + System.nanoTime();
    partition = new PartitionId("g-" + scope, "payments", 3);
  }

  @AfterEach
  void shutdown() {
    for (ActorTestKit kit : kits) {
      kit.shutdownTestKit();
    }
  }

  private ActorTestKit node(JournalDatabase db) {
    Config config = db.pekkoConfig().withFallback(ConfigFactory.load());
    ActorTestKit kit = ActorTestKit.create("node" + kits.size(), config);
    kits.add(kit);
    return kit;
  }

  private ActorRef<PartitionCommand> spawn(ActorTestKit kit, PartitionActorSettings settings) {
    return kit.spawn(PartitionActor.behavior(partition, settings, ctx -> new TestLedger(ctx, scope)));
  }

  private static PartitionActorSettings settings(ActorTestKit kit) {
    return PartitionActorSettings.create(kit.system())
        .withFailureBackoff(Duration.ofMillis(50), Duration.ofMillis(200));
  }

  private BatchOutcome apply(ActorTestKit kit, ActorRef<PartitionCommand> actor, List<Inbound<?>> records) {
    TestProbe<BatchOutcome> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.ApplyBatch(records, probe.ref()));
    return probe.expectMessageClass(BatchOutcome.class, Duration.ofSeconds(30));
  }

  private List<Inbound<?>> payments(long from, long toExclusive) {
    List<Inbound<?>> out = new ArrayList<>();
    for (long o = from; o < toExclusive; o++) {
      out.add(TestLedger.payment(partition, o, "pay-" + o));
    }
    return out;
  }

  /** Credits per offset, read from the journal (not from actor state). */
  private Map<Long, Integer> creditsPerOffset(ActorSystem<?> system) throws Exception {
    JdbcReadJournal journal = PersistenceQuery.get(system)
        .getReadJournalFor(JdbcReadJournal.class, JdbcReadJournal.Identifier());
    List<EventEnvelope> envelopes = journal.currentEventsByPersistenceId(partition.persistenceId(), 0, Long.MAX_VALUE)
        .runFold(new ArrayList<EventEnvelope>(), (acc, e) -> {
          acc.add(e);
          return acc;
        }, system).toCompletableFuture().get(30, TimeUnit.SECONDS);
    Map<Long, Integer> out = new TreeMap<>();
    for (EventEnvelope env : envelopes) {
      for (Object e : ((BatchEvent) env.event()).events()) {
        out.merge(((TestLedger.Credited) e).offset(), 1, Integer::sum);
      }
    }
    return out;
  }

  private static Map<Long, Integer> once(long from, long toExclusive) {
    Map<Long, Integer> out = new TreeMap<>();
    for (long o = from; o < toExclusive; o++) {
      out.put(o, 1);
    }
    return out;
  }

  private static PartitionStatus status(ActorTestKit kit, ActorRef<PartitionCommand> actor) {
    TestProbe<PartitionStatus> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.GetStatus(probe.ref()));
    return probe.expectMessageClass(PartitionStatus.class, Duration.ofSeconds(30));
  }

  @Test
  void redeliveryOfAnySubRangeChangesNothingAndIsAcknowledged() throws Exception {
    redeliveryChangesNothing(postgres);
  }

  @Test
  void redeliveryOfAnySubRangeChangesNothingOnH2() throws Exception {
    redeliveryChangesNothing(H2.inMemory());
  }

  private void redeliveryChangesNothing(JournalDatabase db) throws Exception {
    ActorTestKit kit = node(db);
    ActorRef<PartitionCommand> actor = spawn(kit, settings(kit));
    for (long from = 0; from < 100; from += 10) {
      BatchOutcome.Applied applied = assertInstanceOf(BatchOutcome.Applied.class, apply(kit, actor, payments(from, from + 10)));
      assertEquals(10, applied.applied());
      assertEquals(from + 10, applied.nextOffset());
    }
    long[][] ranges = {{0, 100}, {20, 50}, {99, 100}, {0, 1}, {37, 38}, {50, 100}};
    for (long[] r : ranges) {
      BatchOutcome.Applied again = assertInstanceOf(BatchOutcome.Applied.class, apply(kit, actor, payments(r[0], r[1])));
      assertEquals(new BatchOutcome.Applied(partition, 100, 0, (int) (r[1] - r[0]), 0, false), again);
    }
    // A batch that straddles the fence applies only the new part.
    BatchOutcome.Applied straddle = assertInstanceOf(BatchOutcome.Applied.class, apply(kit, actor, payments(95, 105)));
    assertEquals(new BatchOutcome.Applied(partition, 105, 5, 5, 0, true), straddle);

    assertEquals(once(0, 105), creditsPerOffset(kit.system()));
    PartitionStatus status = status(kit, actor);
    assertEquals(105, status.nextOffset().getAsLong());
    assertEquals(105, status.appliedRecords());
  }

  @Test
  void businessKeyDuplicatesAreDroppedWithinTheWindowAndAcceptedAfterIt() throws Exception {
    ActorTestKit kit = node(postgres);
    // A window of 5 keys: the count bound is exact and needs no sleeping.
    ActorRef<PartitionCommand> actor = spawn(kit, settings(kit).withKeyWindow(true, 5, Duration.ofHours(1)));
    assertInstanceOf(BatchOutcome.Applied.class, apply(kit, actor, payments(0, 5)));   // pay-0..pay-4

    // Re-sent by a producer at new offsets 5..9 (same business keys), plus an in-batch duplicate.
    List<Inbound<?>> resent = new ArrayList<>();
    for (long o = 5; o < 10; o++) {
      resent.add(TestLedger.payment(partition, o, "pay-" + (o - 5)));
    }
    resent.add(TestLedger.payment(partition, 10, "pay-new"));
    resent.add(TestLedger.payment(partition, 11, "pay-new"));
    BatchOutcome.Applied dropped = assertInstanceOf(BatchOutcome.Applied.class, apply(kit, actor, resent));
    assertEquals(new BatchOutcome.Applied(partition, 12, 1, 0, 6, true), dropped);

    // pay-0 fell out of the 5-key window when pay-new came in: its re-send is applied again.
    BatchOutcome.Applied after = assertInstanceOf(BatchOutcome.Applied.class,
        apply(kit, actor, List.of(TestLedger.payment(partition, 12, "pay-0"), TestLedger.payment(partition, 13, "pay-4"))));
    assertEquals(new BatchOutcome.Applied(partition, 14, 1, 0, 1, true), after);

    Map<Long, Integer> expected = once(0, 5);
    expected.put(10L, 1);
    expected.put(12L, 1);
    assertEquals(expected, creditsPerOffset(kit.system()));

    // The window survives recovery: a new incarnation drops pay-4 again.
    ActorTestKit other = node(postgres);
    ActorRef<PartitionCommand> recovered = spawn(other, settings(other).withKeyWindow(true, 5, Duration.ofHours(1)));
    BatchOutcome.Applied again = assertInstanceOf(BatchOutcome.Applied.class,
        apply(other, recovered, List.of(TestLedger.payment(partition, 14, "pay-4"))));
    assertEquals(new BatchOutcome.Applied(partition, 15, 0, 0, 1, true), again);
  }

  @Test
  void keysOlderThanMaxAgeAreForgotten() throws Exception {
    ActorTestKit kit = node(postgres);
    ActorRef<PartitionCommand> actor = spawn(kit, settings(kit).withKeyWindow(true, 1000, Duration.ofMillis(300)));
    apply(kit, actor, payments(0, 1));
    BatchOutcome.Applied within = assertInstanceOf(BatchOutcome.Applied.class,
        apply(kit, actor, List.of(TestLedger.payment(partition, 1, "pay-0"))));
    assertEquals(1, within.droppedByKey());
    Thread.sleep(600);
    // The next write's clock moves the window on; pay-0 is then older than 300 ms.
    apply(kit, actor, List.of(TestLedger.payment(partition, 2, "pay-x")));
    BatchOutcome.Applied afterAge = assertInstanceOf(BatchOutcome.Applied.class,
        apply(kit, actor, List.of(TestLedger.payment(partition, 3, "pay-0"))));
    assertEquals(new BatchOutcome.Applied(partition, 4, 1, 0, 0, true), afterAge);
  }

  @Test
  void staleOwnerIsFencedAndEveryOffsetIsAppliedExactlyOnce() throws Exception {
    staleOwnerIsFenced(false);
  }

  @Test
  void staleOwnerIsFencedAfterSnapshotsAndJournalCompaction() throws Exception {
    staleOwnerIsFenced(true);
  }

  private void staleOwnerIsFenced(boolean compact) throws Exception {
    ActorTestKit a = node(postgres);
    ActorTestKit b = node(postgres);
    PartitionActorSettings snapshotting = settings(a).withSnapshotEvery(2);
    ActorRef<PartitionCommand> old = spawn(a, snapshotting);
    assertInstanceOf(BatchOutcome.Applied.class, apply(a, old, payments(0, 10)));

    // A new owner starts elsewhere (rebalance while the old one is paused) and moves on.
    ActorRef<PartitionCommand> current = spawn(b, snapshotting);
    for (long from = 10; from < 50; from += 10) {
      assertInstanceOf(BatchOutcome.Applied.class, apply(b, current, payments(from, from + 10)));
    }
    if (compact) {
      SnapshotRows.awaitNewest(postgres, partition.persistenceId(), 4);
      int compacted = JournalCompaction.compact(b.system(), postgres, partition.persistenceId()).compacted();
      assertTrue(compacted >= 4, "events covered by the newest snapshot were compacted: " + compacted);
    }

    // The old owner wakes up and writes what it believes comes next.
    BatchOutcome outcome = apply(a, old, payments(10, 20));
    BatchOutcome.Rejected rejected = assertInstanceOf(BatchOutcome.Rejected.class, outcome);
    PartitionFencedException fenced = assertInstanceOf(PartitionFencedException.class, rejected.error());
    assertEquals(10, fenced.expectedNextOffset());
    assertEquals(50, fenced.storedNextOffset());

    // Interleave: both keep sending; only the current history grows, each offset once.
    assertInstanceOf(BatchOutcome.Applied.class, apply(b, current, payments(50, 60)));
    ActorRef<PartitionCommand> restarted = spawn(a, snapshotting);  // the old node's next incarnation
    BatchOutcome.Applied caughtUp = assertInstanceOf(BatchOutcome.Applied.class, apply(a, restarted, payments(40, 70)));
    assertEquals(new BatchOutcome.Applied(partition, 70, 10, 20, 0, true), caughtUp);
    BatchOutcome late = apply(b, current, payments(60, 70));
    assertInstanceOf(PartitionFencedException.class, assertInstanceOf(BatchOutcome.Rejected.class, late).error());

    ActorTestKit reader = node(postgres);
    ActorRef<PartitionCommand> audit = spawn(reader, snapshotting);
    PartitionStatus status = status(reader, audit);
    assertEquals(70, status.nextOffset().getAsLong());
    assertEquals(70, status.appliedRecords());
    if (!compact) {
      assertEquals(once(0, 70), creditsPerOffset(reader.system()));
    } else {
      Map<Long, Integer> visible = creditsPerOffset(reader.system());
      visible.forEach((offset, n) -> assertEquals(1, n, "offset " + offset));
    }
  }

  @Test
  void deletingEventsLikePekkoDoesWouldLetAStaleOwnerThrough() throws Exception {
    // Why Fencepost never deletes events: this reproduces pekko-persistence-jdbc's deleteMessagesTo
    // (rows below the highest deleted one are removed) and shows the stale write then commits.
    ActorTestKit a = node(postgres);
    ActorTestKit b = node(postgres);
    ActorRef<PartitionCommand> old = spawn(a, settings(a));
    apply(a, old, payments(0, 10));
    ActorRef<PartitionCommand> current = spawn(b, settings(b));
    apply(b, current, payments(10, 20));
    apply(b, current, payments(20, 30));
    try (Connection c = postgres.connect(); PreparedStatement st = c.prepareStatement(
        "DELETE FROM event_journal WHERE persistence_id = ? AND sequence_number < 3")) {
      st.setString(1, partition.persistenceId());
      assertEquals(2, st.executeUpdate());
    }
    BatchOutcome stale = apply(a, old, payments(10, 20));
    assertInstanceOf(BatchOutcome.Applied.class, stale, "the freed sequence number let the stale write commit");
  }

  @Test
  void crashBeforeTheReplyLosesNothingAndDoublesNothing() throws Exception {
    long next = 0;
    for (int round = 0; round < 8; round++) {
      ActorTestKit doomed = node(postgres);
      ActorRef<PartitionCommand> actor = spawn(doomed, settings(doomed));
      TestProbe<BatchOutcome> ignored = doomed.createTestProbe();
      actor.tell(new PartitionCommand.ApplyBatch(payments(next, next + 25), ignored.ref()));
      Thread.sleep(round * 7L);   // crash at a different moment each round: before, during, after the write
      doomed.shutdownTestKit();
      kits.remove(doomed);

      ActorTestKit survivor = node(postgres);
      ActorRef<PartitionCommand> recovered = spawn(survivor, settings(survivor));
      BatchOutcome.Applied redo = assertInstanceOf(BatchOutcome.Applied.class,
          apply(survivor, recovered, payments(next, next + 25)));
      assertEquals(next + 25, redo.nextOffset());
      assertEquals(25, redo.applied() + redo.droppedRedelivery(), "each record either applied now or before");
      next += 25;
      survivor.shutdownTestKit();
      kits.remove(survivor);
    }
    ActorTestKit reader = node(postgres);
    assertEquals(once(0, next), creditsPerOffset(reader.system()));
  }

  @Test
  void exactlyOnceModeReappliesNothingWhenTheProcessDiesBeforeTheWrite() throws Exception {
    ActorTestKit kit = node(postgres);
    ActorRef<PartitionCommand> actor = spawn(kit, settings(kit));
    TestLedger.FAIL_ONCE.put(scope + "|" + 13, true);
    BatchOutcome.Rejected dead = assertInstanceOf(BatchOutcome.Rejected.class, apply(kit, actor, payments(10, 20)));
    assertInstanceOf(HandlerFailedException.class, dead.error());
    assertFalse(dead.error().isRetriable());
    assertTrue(dead.error().getMessage().contains("offset [13]"), dead.error().getMessage());
    assertInstanceOf(BatchOutcome.Applied.class, apply(kit, actor, payments(10, 20)));
    assertEquals(once(10, 20), creditsPerOffset(kit.system()));
  }

  @Test
  void atLeastOnceModeRepeatsTheExternalCallsOfTheBatchWhoseWriteDidNotHappen() throws Exception {
    ActorTestKit kit = node(postgres);
    ActorRef<PartitionCommand> actor = spawn(kit, settings(kit).withDeliveryMode(DeliveryMode.AT_LEAST_ONCE));
    assertInstanceOf(BatchOutcome.Applied.class, apply(kit, actor, payments(0, 10)));
    TestLedger.FAIL_ONCE.put(scope + "|" + 13, true);   // dies after the external calls of 10..13
    assertInstanceOf(BatchOutcome.Rejected.class, apply(kit, actor, payments(10, 20)));
    assertInstanceOf(BatchOutcome.Applied.class, apply(kit, actor, payments(10, 20)));

    for (long o = 0; o < 20; o++) {
      int expected = o >= 10 && o <= 13 ? 2 : 1;
      assertEquals(expected, TestLedger.externalCalls(scope, "pay-" + o), "external calls for offset " + o);
    }
    assertEquals(once(0, 20), creditsPerOffset(kit.system()), "journaled effects stay exactly once");
  }

  @Test
  void atMostOnceModeLosesTheBatchWhoseEffectsDidNotRunAfterTheOffsetWrite() throws Exception {
    ActorTestKit kit = node(postgres);
    ActorRef<PartitionCommand> actor = spawn(kit, settings(kit).withDeliveryMode(DeliveryMode.AT_MOST_ONCE));
    assertInstanceOf(BatchOutcome.Applied.class, apply(kit, actor, payments(0, 10)));
    TestLedger.FAIL_ONCE.put(scope + "|" + 13, true);   // dies running the effects of offset 13
    BatchOutcome.Applied accepted = assertInstanceOf(BatchOutcome.Applied.class, apply(kit, actor, payments(10, 20)));
    assertEquals(20, accepted.nextOffset(), "the offset was written first");
    BatchOutcome.Applied redelivered = assertInstanceOf(BatchOutcome.Applied.class, apply(kit, actor, payments(10, 20)));
    assertEquals(10, redelivered.droppedRedelivery(), "never retried");

    Map<Long, Integer> expected = once(0, 20);
    expected.remove(13L);
    awaitCredits(kit.system(), expected);
    assertEquals(0, TestLedger.externalCalls(scope, "pay-13"), "offset 13's effect is lost");
  }

  private void awaitCredits(ActorSystem<?> system, Map<Long, Integer> expected) throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    Map<Long, Integer> seen = creditsPerOffset(system);
    while (!seen.equals(expected) && System.nanoTime() < deadline) {
      Thread.sleep(100);
      seen = creditsPerOffset(system);
    }
    assertEquals(expected, seen);
  }

  @Test
  void aBatchForAnotherPartitionIsRejectedAsFatal() {
    ActorTestKit kit = node(postgres);
    ActorRef<PartitionCommand> actor = spawn(kit, settings(kit));
    PartitionId other = new PartitionId(partition.group(), partition.topic(), 4);
    BatchOutcome.Rejected r = assertInstanceOf(BatchOutcome.Rejected.class,
        apply(kit, actor, List.of(TestLedger.payment(other, 0, "x"))));
    assertFalse(r.error().isRetriable());
    assertTrue(r.error().getMessage().contains("another partition"), r.error().getMessage());
  }

  @Test
  void retriableHandlerFailuresAreRejectedAsRetriable() {
    ActorTestKit kit = node(postgres);
    Function<PartitionContext, PartitionActor<TestLedger.Payment, TestLedger.Ledger, TestLedger.Credited>> flaky =
        ctx -> new TestLedger(ctx, scope) {
          @Override
          protected Effects<Credited> onRecord(Ledger ledger, Inbound<Payment> in) {
            throw new RetriableException("provider busy");
          }
        };
    ActorRef<PartitionCommand> actor = kit.spawn(PartitionActor.behavior(partition, settings(kit), flaky));
    BatchOutcome.Rejected r = assertInstanceOf(BatchOutcome.Rejected.class, apply(kit, actor, payments(0, 3)));
    assertTrue(r.error().isRetriable());
  }
}
