package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;

import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineSettings;
import io.fencepost.embedded.KafkaBroker;
import io.fencepost.embedded.Postgres;
import org.apache.pekko.actor.DeadLetter;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.eventstream.EventStream;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Fencing rests on the journal's unique key (persistence_id, sequence_number): a pipeline whose
 * journal table lacks it refuses to start, naming the table and the fix, and starts once it is added.
 */
@Tag("integration")
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class FencePreconditionIT {

  private static KafkaBroker broker;

  @BeforeAll
  static void start() {
    broker = KafkaBroker.create().start();
  }

  @AfterAll
  static void stop() {
    broker.close();
  }

  @Test
  void aPostgresJournalWithoutItsUniqueKeyIsRefusedAtStartAndAcceptedOnceTheKeyIsBack() throws Exception {
    JournalDatabase db = Postgres.shared().createDatabase("fence_precondition_it");
    try {
      db.installSchema();
      execute(db, "ALTER TABLE event_journal DROP CONSTRAINT event_journal_pkey");
      refusedThenAcceptedAfter(db, "DELETE FROM event_journal a USING event_journal b WHERE a.persistence_id = "
          + "b.persistence_id AND a.sequence_number = b.sequence_number AND a.ordering > b.ordering",
          "ALTER TABLE event_journal ADD PRIMARY KEY (persistence_id, sequence_number)");
    } finally {
      Postgres.shared().dropDatabase(db);
    }
  }

  @Test
  void anH2JournalWithoutItsUniqueKeyIsRefusedAtStart() throws Exception {
    JournalDatabase db = JournalDatabase.h2Memory(KafkaBroker.uniqueName("fence_h2"));
    db.installSchema();
    String pk;
    try (Connection c = db.connect(); ResultSet rs = c.getMetaData().getPrimaryKeys(null, "PUBLIC", "event_journal")) {
      rs.next();
      pk = rs.getString("PK_NAME");
    }
    execute(db, "ALTER TABLE \"event_journal\" DROP CONSTRAINT \"" + pk + "\"");
    refusedThenAcceptedAfter(db, "DELETE FROM \"event_journal\" WHERE \"sequence_number\" = 1 AND \"ordering\" > "
        + "(SELECT MIN(\"ordering\") FROM \"event_journal\")",
        "ALTER TABLE \"event_journal\" ADD PRIMARY KEY (\"persistence_id\", \"sequence_number\")");
  }

  private static void refusedThenAcceptedAfter(JournalDatabase db, String... fix) throws Exception {
    String topic = KafkaBroker.uniqueName("fenced-in");
    broker.createTopic(topic, 1);
    ActorSystem<Void> system = KafkaPipelineIT.node("fence", db);
    Queue<Object> deadLetters = new ConcurrentLinkedQueue<>();
    system.eventStream().tell(new EventStream.Subscribe<>(
        DeadLetter.class, system.systemActorOf(
            Behaviors.receive(DeadLetter.class)
                .onAnyMessage(d -> {
                  deadLetters.add(d.message());
                  return Behaviors.same();
                }).build(), "dead-letters", Props.empty())));
    try {
      PipelineSettings settings = PipelineSettings.create(system, "fence").withBootstrapServers(broker.bootstrapServers())
          .withTopics(List.of(topic)).withBatch(100, Duration.ofMillis(20)).withGroupId(KafkaBroker.uniqueName("fence"));
      IllegalStateException refused = assertThrows(IllegalStateException.class, () -> KafkaPipeline.create(system,
          ctx -> new TestLedger(ctx, "fence"), new KafkaPipelineIT.PaymentDeserializer(), settings).start());
      assertEquals("[fence] the journal [jdbc-journal] accepted two writes of sequence number 1 for persistence id "
          + "[fencepost-fence-check|fence]: its table has no unique key on (persistence_id, sequence_number), so a "
          + "stale owner's write would commit beside the rightful owner's (no fencing). Add it (pekko-persistence-jdbc: "
          + "ALTER TABLE event_journal ADD PRIMARY KEY (persistence_id, sequence_number), after removing rows that "
          + "break it) and start again; nothing was consumed", refused.getMessage());
      for (String sql : fix) {
        execute(db, sql);
      }
      Pipeline pipeline = KafkaPipeline.create(system, ctx -> new TestLedger(ctx, "fence"),
          new KafkaPipelineIT.PaymentDeserializer(), settings).start();
      pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
      // The check's probes are told to stop after one stopped itself: no dead-letter line for that.
      assertTrue(deadLetters.stream().noneMatch(m -> m.getClass().getName().contains("FenceCheck")),
          "dead letters: " + deadLetters);
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
  }

  private static void execute(JournalDatabase db, String sql) throws Exception {
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      st.execute(sql);
    }
  }
}
