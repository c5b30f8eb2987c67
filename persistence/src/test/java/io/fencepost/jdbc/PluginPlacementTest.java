package io.fencepost.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Projections and compaction read and write through the plugins of the database they are given: a
 * database given on its own (index -1) where the deployment has several, or plugin ids that reach
 * another database, are refused at once, naming the database, the plugin and the fix.
 */
class PluginPlacementTest {

  private static final AtomicInteger NAMES = new AtomicInteger();
  private static JournalDatabase a;
  private static JournalDatabase b;
  private static JournalDatabases dbs;
  private static ActorSystem<Void> system;

  private static JournalDatabase fresh() {
    JournalDatabase db = JournalDatabase.h2Memory("placement-" + NAMES.incrementAndGet());
    db.installSchema();
    return db;
  }

  @BeforeAll
  static void start() {
    a = fresh();
    b = fresh();
    dbs = JournalDatabases.of("placement", List.of(a, b));
    Config config = dbs.pekkoConfig().withFallback(ConfigFactory.parseString("pekko.loglevel = WARNING"))
        .withFallback(ConfigFactory.load());
    system = ActorSystem.create(Behaviors.empty(), "placement", config);
  }

  @AfterAll
  static void stop() throws Exception {
    system.terminate();
    system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  @Test
  void aDatabaseGivenOnItsOwnWhereTheDeploymentHasSeveralIsRefused() {
    JournalDatabase alone = JournalDatabase.of(b.jdbcUrl(), b.user(), b.password());
    String why = assertThrows(IllegalArgumentException.class, () -> JdbcProjection.create(system, "balances", alone,
        List.of("fencepost|g|t|0"), (tx, batch) -> { })).getMessage();
    assertEquals("projection [balances] was given journal database [" + b.jdbcUrl() + "] on its own "
        + "(JournalDatabase.of), while the deployment has 2 journal databases "
        + "(fencepost.partition-actor.journal-databases): its plugins would not be that database's. Pass the "
        + "deployment's own: JournalDatabases.databases().get(i), or databaseOf(partition)", why);
    assertThrows(IllegalArgumentException.class, () -> JournalCompaction.compact(system, alone, "fencepost|g|t|0"));
    JdbcProjection.create(system, "balances", dbs.databases().get(1), List.of("fencepost|g|t|0"), (tx, batch) -> { })
        .close();
  }

  @Test
  void compactionWithPluginsOfAnotherDatabaseIsRefusedBeforeItMovesAnything() {
    JournalDatabase second = dbs.databases().get(1);
    String why = assertThrows(IllegalArgumentException.class, () -> JournalCompaction.compact(system, second,
        "fencepost|g|t|0", "fencepost-durable-state-store-0", second.readJournalPluginId())).getMessage();
    assertEquals("compaction of [fencepost|g|t|0] was given journal database [" + b.jdbcUrl() + "], but its "
        + "durable-state plugin [fencepost-durable-state-store-0] reaches [" + a.jdbcUrl() + "]: it would read or "
        + "move another database's rows. Pass that plugin's database, or the plugin ids configured for this one", why);
    assertEquals(0, JournalCompaction.compact(system, second, "fencepost|g|t|0").compacted(), "its own plugins pass");
  }
}
