package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.embedded.Postgres;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.jdbc.query.javadsl.JdbcReadJournal;
import org.apache.pekko.persistence.query.PersistenceQuery;
import org.apache.pekko.serialization.jackson.JacksonMigration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An event class evolves: version 1 ({@code StockReserved(sku, qty)}) journaled the committed rows of
 * {@code journal-fixtures/journal-evolution-v1.tsv} (three entries and a snapshot, written by
 * {@link #writeTheVersion1Fixture} when the class was at version 1); version 2 renames {@code qty} to
 * {@code quantity} and adds {@code warehouse}. With Pekko's Jackson migration registered, the old
 * entries are recovered as version 2 and new ones are written as version 2 beside them; without it,
 * the renamed field silently reads as its default (what docs/evolving-events.md warns about).
 */
@Tag("integration")
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class EvolutionIT {

  private static final PartitionId PARTITION = new PartitionId("evolution", "reservations", 0);

  // snippet: evolved-event
  /** Version 2 of the event. Version 1 was {@code record StockReserved(String sku, int qty)}. */
  record StockReserved(String sku, int quantity, String warehouse) implements JacksonSerializable {
  }

  /** Reads version 1: {@code qty} becomes {@code quantity}, and the warehouse of old reservations is "main". */
  public static final class StockReservedMigration extends JacksonMigration {
    @Override
    public int currentVersion() {
      return 2;
    }

    @Override
    public JsonNode transform(int fromVersion, JsonNode json) {
      ObjectNode node = (ObjectNode) json;
      if (fromVersion < 2) {
        node.set("quantity", node.remove("qty"));
        node.put("warehouse", "main");
      }
      return node;
    }
  }
  // end-snippet: evolved-event

  private static final Config MIGRATION = ConfigFactory.parseString("pekko.serialization.jackson.migrations {\n"
      + "  \"" + StockReserved.class.getName() + "\" = \"" + StockReservedMigration.class.getName() + "\"\n}");

  /** Reserved units per SKU. */
  record Stock(Map<String, Integer> reserved) implements JacksonSerializable {
    Stock add(String sku, int units) {
      Map<String, Integer> next = new TreeMap<>(reserved);
      next.merge(sku, units, Integer::sum);
      return new Stock(next);
    }
  }

  /** Records "SKU:units" (version 1's) or "SKU:units:warehouse". */
  static final class Reservations extends PartitionActor<String, Stock, StockReserved> {
    Reservations(PartitionContext context) {
      super(context);
    }

    @Override
    protected Stock emptyState() {
      return new Stock(Map.of());
    }

    @Override
    protected Effects<StockReserved> onRecord(Stock state, Inbound<String> in) {
      String[] f = in.value().split(":");
      return Effects.persist(new StockReserved(f[0], Integer.parseInt(f[1]), f.length > 2 ? f[2] : "main"));
    }

    @Override
    protected Stock applyEvent(Stock state, StockReserved e) {
      return state.add(e.sku(), e.quantity());
    }
  }

  private static JournalDatabase postgres;

  @BeforeAll
  static void createDatabase() {
    postgres = Postgres.shared().createDatabase("evolution_it");
    postgres.installSchema();
  }

  @AfterAll
  static void dropDatabase() {
    Postgres.shared().dropDatabase(postgres);
  }

  private static ActorTestKit node(String name, Config extra) {
    return ActorTestKit.create(name, extra.withFallback(postgres.pekkoConfig()).withFallback(ConfigFactory.load()));
  }

  private static ActorRef<PartitionCommand> spawn(ActorTestKit kit) {
    PartitionActorSettings settings = PartitionActorSettings.create(kit.system()).withSnapshotEvery(2)
        .withFailureBackoff(Duration.ofMillis(50), Duration.ofMillis(200));
    return kit.spawn(PartitionActor.behavior(PARTITION, settings, Reservations::new));
  }

  private static BatchOutcome.Applied apply(ActorTestKit kit, ActorRef<PartitionCommand> actor, long from,
      String... values) {
    List<Inbound<?>> records = new ArrayList<>();
    for (String v : values) {
      records.add(Inbound.of(PARTITION, from++, v));
    }
    TestProbe<BatchOutcome> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.ApplyBatch(records, probe.ref()));
    return assertInstanceOf(BatchOutcome.Applied.class, probe.expectMessageClass(BatchOutcome.class,
        Duration.ofSeconds(30)));
  }

  @Test
  @EnabledIfSystemProperty(named = "fencepost.write-evolution-fixture", matches = ".+")
  void writeTheVersion1Fixture() throws Exception {
    ActorTestKit kit = node("writer", ConfigFactory.empty());
    try {
      ActorRef<PartitionCommand> actor = spawn(kit);
      apply(kit, actor, 0, "A7:3", "B1:5");
      apply(kit, actor, 2, "A7:2");
      SnapshotRows.awaitNewest(postgres, PARTITION.persistenceId(), 2);
      apply(kit, actor, 3, "C4:1", "B1:1");
    } finally {
      kit.shutdownTestKit();
    }
    JournalRows.dump(postgres, PARTITION.persistenceId(), Path.of(System.getProperty("fencepost.write-evolution-fixture")));
  }

  @SuppressWarnings("unchecked")
  private static Stock state(ActorTestKit kit, ActorRef<PartitionCommand> actor) {
    TestProbe<Object> probe = kit.createTestProbe();
    actor.tell(new PartitionCommand.GetState(probe.ref()));
    return (Stock) probe.receiveMessage(Duration.ofSeconds(30));
  }

  /** Every event of the partition's journal, in order, as the running version reads them. */
  private static List<Object> events(ActorTestKit kit) throws Exception {
    JdbcReadJournal journal = PersistenceQuery.get(kit.system())
        .getReadJournalFor(JdbcReadJournal.class, JdbcReadJournal.Identifier());
    List<Object> out = new ArrayList<>();
    journal.currentEventsByPersistenceId(PARTITION.persistenceId(), 0, Long.MAX_VALUE)
        .runForeach(env -> AppliedBatch.from(env.event()).ifPresent(b -> out.addAll(b.events())), kit.system())
        .toCompletableFuture().get(30, TimeUnit.SECONDS);
    return out;
  }

  private static void reset() throws Exception {
    try (Connection c = postgres.connect(); Statement st = c.createStatement()) {
      st.executeUpdate("DELETE FROM event_journal");
      st.executeUpdate("DELETE FROM snapshot");
    }
  }

  @Test
  void version1EventsAreRecoveredByVersion2ThroughItsMigrationAndVersion2IsWrittenBesideThem() throws Exception {
    reset();
    assertEquals(4, JournalRows.load(postgres, "journal-evolution-v1.tsv"), "3 entries and a snapshot at 2");
    ActorTestKit first = node("evolution-v2", MIGRATION);
    try {
      ActorRef<PartitionCommand> actor = spawn(first);
      // The snapshot at 2 (version 1's state: the state class did not change), then entry 3's version-1 events.
      assertEquals(new Stock(Map.of("A7", 5, "B1", 6, "C4", 1)), state(first, actor));
      assertEquals(new BatchOutcome.Applied(PARTITION, 6, 1, 0, 0, true), apply(first, actor, 5, "A7:4:east"));
      assertEquals(List.of(new StockReserved("A7", 3, "main"), new StockReserved("B1", 5, "main"),
          new StockReserved("A7", 2, "main"), new StockReserved("C4", 1, "main"), new StockReserved("B1", 1, "main"),
          new StockReserved("A7", 4, "east")), events(first), "version 1's entries read as version 2, then the new one");
    } finally {
      first.shutdownTestKit();
    }
    ActorTestKit second = node("evolution-v2-again", MIGRATION);
    try {
      assertEquals(new Stock(Map.of("A7", 9, "B1", 6, "C4", 1)), state(second, spawn(second)),
          "a journal of both versions recovers");
    } finally {
      second.shutdownTestKit();
    }
  }

  @Test
  void withoutTheMigrationTheRenamedFieldOfVersion1EventsReadsAsItsDefault() throws Exception {
    reset();
    JournalRows.load(postgres, "journal-evolution-v1.tsv");
    ActorTestKit node = node("evolution-no-migration", ConfigFactory.empty());
    try {
      // Pekko's Jackson ignores the unknown "qty" and gives the missing "quantity" its default: no error, wrong
      // state. This is why a renamed field needs a migration (or FAIL_ON_MISSING_CREATOR_PROPERTIES).
      assertEquals(new Stock(Map.of("A7", 5, "B1", 5, "C4", 0)), state(node, spawn(node)));
      assertEquals(new StockReserved("C4", 0, null), events(node).get(3));
    } finally {
      node.shutdownTestKit();
    }
  }

  @Test
  void withMissingCreatorPropertiesRefusedAVersion1EventWithoutMigrationFailsRecoveryInsteadOfReadingWrong()
      throws Exception {
    reset();
    JournalRows.load(postgres, "journal-evolution-v1.tsv");
    ActorTestKit node = node("evolution-strict", ConfigFactory.parseString(
        "pekko.serialization.jackson.deserialization-features.FAIL_ON_MISSING_CREATOR_PROPERTIES = on"));
    ch.qos.logback.classic.Logger root = (ch.qos.logback.classic.Logger) LoggerFactory.getLogger(
        Logger.ROOT_LOGGER_NAME);
    ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> seen =
        new ch.qos.logback.core.read.ListAppender<>();
    seen.start();
    root.addAppender(seen);
    try {
      ActorRef<PartitionCommand> actor = spawn(node);
      TestProbe<PartitionStatus> probe = node.createTestProbe();
      actor.tell(new PartitionCommand.GetStatus(probe.ref()));
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      String refused = null;
      while (refused == null && System.nanoTime() < deadline) {
        refused = seen.list.stream().map(ch.qos.logback.classic.spi.ILoggingEvent::getFormattedMessage)
            .filter(m -> m.contains("cannot recover: a journal entry or snapshot of [" + PARTITION.persistenceId()
                + "] cannot be deserialized")).findFirst().orElse(null);
        Thread.sleep(100);
      }
      assertTrue(refused != null && refused.contains("quantity"), "the refusal names the missing field: " + refused);
      probe.expectNoMessage(Duration.ofMillis(500));   // never recovered: nothing applied, nothing answered
    } finally {
      root.detachAppender(seen);
      node.shutdownTestKit();
    }
  }
}
