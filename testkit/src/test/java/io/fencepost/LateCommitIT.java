package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import com.typesafe.config.ConfigFactory;
import io.fencepost.internal.BatchEvent;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.embedded.Postgres;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.jdbc.query.javadsl.JdbcReadJournal;
import org.apache.pekko.persistence.query.EventEnvelope;
import org.apache.pekko.persistence.query.PersistenceQuery;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The ambiguous write on a real PostgreSQL journal: a write the journal reports as failed (its
 * circuit breaker's call timeout) that commits afterwards. A trigger on {@code event_journal} holds
 * the chosen insert in {@code pg_sleep} past the timeout.
 */
@Tag("integration")
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class LateCommitIT {

  private static final Duration CALL_TIMEOUT = Duration.ofSeconds(1);
  private static final Duration COMMIT_DELAY = Duration.ofSeconds(3);

  private static JournalDatabase db;
  private static ActorTestKit kit;

  @BeforeAll
  static void start() throws Exception {
    db = Postgres.shared().createDatabase("late_commit_it");
    db.installSchema();
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      st.execute("CREATE TABLE late_writes (persistence_id text PRIMARY KEY, remaining int NOT NULL)");
      st.execute("CREATE FUNCTION hold_write() RETURNS trigger AS $$ BEGIN "
          + "UPDATE late_writes SET remaining = remaining - 1 WHERE persistence_id = NEW.persistence_id "
          + "AND remaining > 0; "
          + "IF FOUND THEN PERFORM pg_sleep(" + COMMIT_DELAY.toSeconds() + "); END IF; "
          + "RETURN NEW; END $$ LANGUAGE plpgsql");
      st.execute("CREATE TRIGGER hold_write BEFORE INSERT ON event_journal FOR EACH ROW EXECUTE FUNCTION hold_write()");
    }
    kit = ActorTestKit.create("late-commit", ConfigFactory.parseString(
        "jdbc-journal.circuit-breaker.call-timeout = " + CALL_TIMEOUT.toMillis() + "ms")
        .withFallback(db.pekkoConfig()).withFallback(ConfigFactory.load()));
  }

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
    Postgres.shared().dropDatabase(db);
  }

  private static void holdNextWriteOf(PartitionId partition) throws Exception {
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      st.execute("INSERT INTO late_writes VALUES ('" + partition.persistenceId() + "', 1)");
    }
  }

  private static BatchOutcome apply(ActorRef<PartitionCommand> actor, PartitionId partition, long from, long to) {
    List<Inbound<?>> records = new ArrayList<>();
    for (long o = from; o < to; o++) {
      records.add(TestLedger.payment(partition, o, "pay-" + o));
    }
    TestProbe<BatchOutcome> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.ApplyBatch(records, probe.ref()));
    return probe.expectMessageClass(BatchOutcome.class, Duration.ofSeconds(60));
  }

  @Test
  void aWriteThatTimesOutAndCommitsLateIsRecognisedAsOursAndItsResendIsARedelivery() throws Exception {
    PartitionId partition = new PartitionId("late", "payments", 0);
    // The actor recovers (after the failed write) only once the held insert committed.
    PartitionActorSettings settings = PartitionActorSettings.create(kit.system())
        .withFailureBackoff(COMMIT_DELAY.plusSeconds(2), COMMIT_DELAY.plusSeconds(4));
    ActorRef<PartitionCommand> actor = kit.spawn(PartitionActor.behavior(partition, settings,
        ctx -> new TestLedger(ctx, "late")));
    assertEquals(new BatchOutcome.Applied(partition, 10, 10, 0, 0, true, 0, 0), apply(actor, partition, 0, 10));

    holdNextWriteOf(partition);
    long start = System.nanoTime();
    BatchOutcome late = apply(actor, partition, 10, 20);
    assertEquals(new BatchOutcome.Applied(partition, 20, 10, 0, 0, true, 0, 0), late,
        "the write the journal reported failed committed: it is this incarnation's own, not a fence");
    Duration took = Duration.ofNanos(System.nanoTime() - start);

    // The pipeline had given up on the batch meanwhile and sends it again: a redelivery, nothing written.
    BatchOutcome resent = apply(actor, partition, 10, 20);
    assertEquals(new BatchOutcome.Applied(partition, 20, 0, 10, 0, false, 0, 0), resent);
    assertInstanceOf(BatchOutcome.Applied.class, apply(actor, partition, 20, 30));

    Map<Long, Integer> credits = new TreeMap<>();
    JdbcReadJournal journal = PersistenceQuery.get(kit.system())
        .getReadJournalFor(JdbcReadJournal.class, JdbcReadJournal.Identifier());
    for (EventEnvelope env : journal.currentEventsByPersistenceId(partition.persistenceId(), 0, Long.MAX_VALUE)
        .runFold(new ArrayList<EventEnvelope>(), (acc, e) -> {
          acc.add(e);
          return acc;
        }, kit.system()).toCompletableFuture().get(30, TimeUnit.SECONDS)) {
      for (Object e : ((BatchEvent) env.event()).events()) {
        credits.merge(((TestLedger.Credited) e).offset(), 1, Integer::sum);
      }
    }
    Map<Long, Integer> once = new TreeMap<>();
    for (long o = 0; o < 30; o++) {
      once.put(o, 1);
    }
    assertEquals(once, credits, "every offset credited exactly once, the late-committed batch included");
    System.out.printf("late commit recognised after %d ms%n", took.toMillis());
  }
}
