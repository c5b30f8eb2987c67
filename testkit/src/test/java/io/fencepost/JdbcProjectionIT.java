package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import com.typesafe.config.ConfigFactory;
import io.fencepost.jdbc.JdbcProjection;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.embedded.Postgres;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;

/** A SQL read model kept exactly once from the journal, with crashes and two competing instances. */
@Tag("integration")
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class JdbcProjectionIT {

  private static JournalDatabase db;
  private static ActorTestKit kit;
  private static final List<String> PIDS = new ArrayList<>();
  private static final Map<String, Long> EXPECTED = new TreeMap<>();

  @BeforeAll
  static void journal() {
    db = Postgres.shared().createDatabase("projection_it");
    db.installSchema();
    kit = ActorTestKit.create("projection", db.pekkoConfig().withFallback(ConfigFactory.load()));
    for (int p = 0; p < 3; p++) {
      PartitionId id = new PartitionId("proj", "payments", p);
      PIDS.add(id.persistenceId());
      ActorRef<PartitionCommand> actor = kit.spawn(PartitionActor.behavior(id, PartitionActorSettings.create(kit.system()),
          ctx -> new TestLedger(ctx, "projection")));
      for (int b = 0; b < 20; b++) {
        List<Inbound<?>> batch = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
          long offset = b * 10L + i;
          Inbound<TestLedger.Payment> in = TestLedger.payment(id, offset, "p" + p + "-" + offset);
          batch.add(in);
          EXPECTED.merge(in.value().merchant(), in.value().cents(), Long::sum);
        }
        TestProbe<BatchOutcome> probe = kit.createTestProbe();
        actor.tell(new PartitionCommand.ApplyBatch(batch, probe.ref()));
        probe.expectMessageClass(BatchOutcome.Applied.class, Duration.ofSeconds(30));
      }
    }
  }

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
    Postgres.shared().dropDatabase(db);
  }

  private static void table(String name) throws Exception {
    try (Connection c = db.connect(); Statement st = c.createStatement()) {
      st.execute("DROP TABLE IF EXISTS " + name);
      st.execute("CREATE TABLE " + name + " (merchant text PRIMARY KEY, cents bigint NOT NULL, payments bigint NOT NULL)");
    }
  }

  private static JdbcProjection.Handler crediting(String table) {
    return (tx, batch) -> {
      try (PreparedStatement st = tx.prepareStatement("INSERT INTO " + table + " (merchant, cents, payments) "
          + "VALUES (?, ?, 1) ON CONFLICT (merchant) DO UPDATE SET cents = " + table + ".cents + EXCLUDED.cents, "
          + "payments = " + table + ".payments + 1")) {
        for (Object e : batch.events()) {
          TestLedger.Credited c = (TestLedger.Credited) e;
          st.setString(1, c.merchant());
          st.setLong(2, c.cents());
          st.executeUpdate();
        }
      }
    };
  }

  private static Map<String, Long> balances(String table) throws Exception {
    Map<String, Long> out = new TreeMap<>();
    try (Connection c = db.connect(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT merchant, cents FROM " + table)) {
      while (rs.next()) {
        out.put(rs.getString(1), rs.getLong(2));
      }
    }
    return out;
  }

  private static long payments(String table) throws Exception {
    try (Connection c = db.connect(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT coalesce(sum(payments), 0) FROM " + table)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Test
  void aProjectionCrashingMidTransactionStillAppliesEveryBatchOnce() throws Exception {
    table("balances_crash");
    AtomicBoolean crashedOnce = new AtomicBoolean();
    JdbcProjection.Handler base = crediting("balances_crash");
    JdbcProjection projection = JdbcProjection.create(kit.system(), "crash", db, PIDS, (tx, batch) -> {
      base.apply(tx, batch);   // the credits are written...
      if (batch.fromOffset() == 100 && crashedOnce.compareAndSet(false, true)) {
        throw new IllegalStateException("crash after writing, before the position moved");
      }
    }).installSchema();
    assertThrows(IllegalStateException.class, projection::runOnce, "the crashed run fails");
    while (projection.runOnce() > 0) {
      // catch up
    }
    assertEquals(EXPECTED, balances("balances_crash"));
    assertEquals(600, payments("balances_crash"));
    for (String pid : PIDS) {
      assertEquals(20, projection.position(pid));
    }
  }

  /**
   * A handler that keeps failing on one batch: the other journals are projected; that journal is
   * retried with a backoff (not every run), reported at ERROR once it has failed for errorAfter, counted
   * in fencepost.projection.failing, its entries in fencepost.projection.lag, and named by the readiness
   * registry (/ready); once the cause is gone it goes on by itself, every batch once, lag 0, and the
   * projection is ready again.
   */
  @Test
  void aBatchThatKeepsFailingBacksOffIsReportedAndHealsOnceItsCauseIsGone() throws Exception {
    table("balances_stuck");
    AtomicBoolean broken = new AtomicBoolean(true);
    JdbcProjection.Handler base = crediting("balances_stuck");
    String stuck = PIDS.get(1);
    ch.qos.logback.classic.Logger logger =
        (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger(JdbcProjection.class);
    ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> seen =
        new ch.qos.logback.core.read.ListAppender<>();
    seen.start();
    logger.addAppender(seen);
    JdbcProjection projection = JdbcProjection.create(kit.system(), "stuck", db, PIDS, (tx, batch) -> {
      if (broken.get() && batch.fromOffset() == 50
          && ((TestLedger.Credited) batch.events().get(0)).paymentId().startsWith("p1-")) {
        throw new IllegalStateException("no such merchant");
      }
      base.apply(tx, batch);
    }).installSchema().withErrorAfter(Duration.ofSeconds(2));
    // The kit's meters go to Micrometer's global registry (FencepostMeters' default): read them there.
    io.micrometer.core.instrument.simple.SimpleMeterRegistry meters =
        new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
    io.micrometer.core.instrument.Metrics.globalRegistry.add(meters);
    try {
      projection.start(Duration.ofMillis(20));
      Await.until("the other journals projected", Duration.ofSeconds(60),
          () -> projection.position(PIDS.get(0)) == 20 && projection.position(PIDS.get(2)) == 20);
      Await.until("the stuck journal reported at ERROR", Duration.ofSeconds(60), () -> seen.list.stream().anyMatch(
          e -> e.getLevel() == ch.qos.logback.classic.Level.ERROR && e.getFormattedMessage().contains(
              "projection has failed on [" + stuck + "]") && e.getFormattedMessage().contains("no such merchant")));
      assertEquals(5, projection.position(stuck), "the batches before the failing one are kept");
      assertEquals(1.0, meters.get("fencepost.projection.failing").tag("projection", "stuck").gauge().value());
      Await.until("the lag gauge shows the stuck journal's 15 entries", Duration.ofSeconds(30),
          () -> meters.get("fencepost.projection.lag").tag("projection", "stuck").gauge().value() == 15.0);
      List<String> notReady = Readiness.get(kit.system()).notReady();
      assertTrue(notReady.stream().anyMatch(r -> r.startsWith("projection [stuck] has failed on [" + stuck + "]")),
          "readiness names it: " + notReady);
      double attempts = meters.get("fencepost.projection.failures").tag("projection", "stuck").counter().count();
      assertTrue(attempts <= 6, "retried with a backoff (0.5, 1, 2 s ...), not every 20 ms run: " + attempts);

      broken.set(false);   // the cause is gone: it goes on by itself
      Await.until("the stuck journal projected", Duration.ofSeconds(60), () -> projection.position(stuck) == 20);
      assertEquals(EXPECTED, balances("balances_stuck"));
      assertEquals(600, payments("balances_stuck"), "every batch once");
      assertEquals(0.0, meters.get("fencepost.projection.failing").tag("projection", "stuck").gauge().value());
      Await.until("the lag gauge back at 0", Duration.ofSeconds(30),
          () -> meters.get("fencepost.projection.lag").tag("projection", "stuck").gauge().value() == 0.0);
      assertTrue(Readiness.get(kit.system()).notReady().stream().noneMatch(r -> r.contains("[stuck]")));
    } finally {
      projection.close();
      logger.detachAppender(seen);
      io.micrometer.core.instrument.Metrics.globalRegistry.remove(meters);
    }
  }

  /**
   * A journal with a backlog of more than one chunk does not hold the others back: their first batches
   * are applied before the backlog's batch after the first chunk, whatever the order of the list.
   */
  @Test
  void aJournalWithABacklogDoesNotStarveTheOthers() throws Exception {
    PartitionId backlog = new PartitionId("proj", "backlog", 0);
    ActorRef<PartitionCommand> actor = kit.spawn(PartitionActor.behavior(backlog,
        PartitionActorSettings.create(kit.system()), ctx -> new TestLedger(ctx, "projection")));
    int chunk = 200;   // batches per journal per run (JdbcProjection's documented chunk)
    int entries = chunk + 100;
    for (int b = 0; b < entries; b++) {
      TestProbe<BatchOutcome> probe = kit.createTestProbe();
      actor.tell(new PartitionCommand.ApplyBatch(List.of(TestLedger.payment(backlog, b, "b-" + b)), probe.ref()));
      probe.expectMessageClass(BatchOutcome.Applied.class, Duration.ofSeconds(30));
    }
    List<String> order = new ArrayList<>();
    List<String> pids = List.of(backlog.persistenceId(), PIDS.get(0), PIDS.get(1));
    JdbcProjection projection = JdbcProjection.create(kit.system(), "fair", db, pids, (tx, batch) ->
        order.add(((TestLedger.Credited) batch.events().get(0)).paymentId())).installSchema();
    while (projection.runOnce() > 0) {
      // catch up
    }
    assertEquals(entries + 40, order.size(), "every batch once");
    int afterFirstChunk = order.indexOf("b-" + chunk);
    for (String other : List.of("p0-0", "p1-0")) {
      int first = order.indexOf(other);
      assertTrue(first >= 0 && first < afterFirstChunk, other + " waited for the backlog: applied at " + first
          + ", the backlog's batch after the first chunk at " + afterFirstChunk);
    }
  }

  @Test
  void twoInstancesOfOneProjectionNeverApplyABatchTwice() throws Exception {
    table("balances_twins");
    JdbcProjection a = JdbcProjection.create(kit.system(), "twins", db, PIDS, crediting("balances_twins")).installSchema();
    JdbcProjection b = JdbcProjection.create(kit.system(), "twins", db, PIDS, crediting("balances_twins"));
    List<Throwable> errors = new ArrayList<>();
    Runnable loop = () -> {
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (System.nanoTime() < deadline) {
        try {
          if (PIDS.stream().allMatch(pid -> a.position(pid) == 20)) {
            return;
          }
          (Thread.currentThread().getName().equals("a") ? a : b).runOnce();
        } catch (IllegalStateException e) {
          // a deadlock or a lost race rolled a batch back: the next run goes on
        } catch (Throwable t) {
          synchronized (errors) {
            errors.add(t);
          }
          return;
        }
      }
    };
    Thread ta = new Thread(loop, "a");
    Thread tb = new Thread(loop, "b");
    ta.start();
    tb.start();
    ta.join();
    tb.join();
    assertEquals(List.of(), errors);
    assertEquals(EXPECTED, balances("balances_twins"));
    assertEquals(600, payments("balances_twins"), "each of the 600 payments credited once");
  }
}
