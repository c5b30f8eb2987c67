package io.fencepost.benchmarks;

import java.io.PrintStream;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.stream.IntStream;

import io.fencepost.PartitionId;
import io.fencepost.examples.LedgerBalances;
import io.fencepost.examples.LedgerNode;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.embedded.Directories;
import io.fencepost.embedded.FreePorts;
import io.fencepost.embedded.JvmProcess;
import io.fencepost.embedded.Postgres;
import io.fencepost.tools.Main;

/**
 * How far the ledger's read model ({@code ledger_balances}, kept by {@code fencepost ledger
 * --read-model} on every node) trails its journal under a steady load: a 3-node ledger cluster as
 * separate JVMs, the broker in a fourth, the journal on an embedded PostgreSQL, {@code rate}
 * payments/s on {@value #PARTITIONS} partitions for {@code seconds}.
 *
 * <p>Every {@value #SAMPLE_MS} ms, for each partition, the read model's lag is the age of the oldest
 * journal entry it has not applied (now minus that entry's {@code write_timestamp}; 0 when it applied
 * them all). The report gives the percentiles over every sample of every partition, each partition's
 * worst, and the time the read model took to finish once the producer stopped; it then checks that
 * {@code ledger_balances} counts each payment once.
 *
 * <p>Run: {@code ReadModelLag [rate] [seconds]} (defaults 2000 and 60).
 */
final class ReadModelLag {

  static final String TOPIC = "payments";
  static final String GROUP = "ledger";
  static final int PARTITIONS = 12;
  static final int NODES = 3;
  private static final long SAMPLE_MS = 250;
  private static final Duration WARM_UP = Duration.ofSeconds(20);
  private static final Duration START_LIMIT = Duration.ofSeconds(120);
  private static final Duration FINISH_LIMIT = Duration.ofMinutes(5);
  private static final String PROJECTION = "ledger-balances";

  private ReadModelLag() {
  }

  public static void main(String[] args) throws Exception {
    double rate = args.length > 0 ? Double.parseDouble(args[0]) : 2_000;
    int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 60;
    System.exit(run(rate, seconds, System.out) ? 0 : 1);
  }

  static boolean run(double rate, int seconds, PrintStream out) throws Exception {
    Path dir = Path.of("target", "read-model-lag").toAbsolutePath();
    Directories.deleteRecursively(dir);
    List<JvmProcess> started = new ArrayList<>();
    Postgres postgres = null;
    SteadyPayments payments = null;
    try {
      JvmProcess broker = JvmProcess.start("broker", Main.class.getName(), List.of("broker", "--dir",
          dir.resolve("kafka").toString(), "--port", Integer.toString(FreePorts.next()), "--topic",
          TOPIC + ":" + PARTITIONS), dir.resolve("broker.log"));
      started.add(broker);
      String bootstrap = broker.awaitLine("BOOTSTRAP=", START_LIMIT).substring("BOOTSTRAP=".length());
      postgres = Postgres.startEmbedded(dir.resolve("postgres"), FreePorts.next());
      JournalDatabase db = postgres.createDatabase("read_model_lag");
      db.installSchema();
      int[] ports = IntStream.range(0, NODES).map(i -> FreePorts.next()).toArray();
      List<String> contacts = Arrays.stream(ports).mapToObj(p -> "127.0.0.1:" + p).toList();
      for (int i = 0; i < NODES; i++) {
        List<String> args = new ArrayList<>(LedgerNode.commandLine(bootstrap, TOPIC, GROUP, db, ports[i], contacts));
        args.add("--read-model");
        started.add(JvmProcess.start("node" + i, Main.class.getName(), args, dir.resolve("node" + i + ".log")));
      }
      for (JvmProcess n : started.subList(1, started.size())) {
        n.awaitLine("READY", START_LIMIT);
      }
      out.printf(Locale.ROOT, "%d ledger nodes with --read-model, %d partitions, journal %s; logs in %s%n", NODES,
          PARTITIONS, db.jdbcUrl(), dir);
      payments = new SteadyPayments(bootstrap, TOPIC, rate);
      payments.start();
      out.printf(Locale.ROOT, "producing %,.0f payments/s; warming up for %d s%n", rate, WARM_UP.toSeconds());
      Thread.sleep(WARM_UP.toMillis());
      List<Long> samples = new ArrayList<>();
      long[] worst = new long[PARTITIONS];
      long sentBefore = payments.sent();
      long begin = System.currentTimeMillis();
      long end = begin + seconds * 1000L;
      try (Connection c = db.connect()) {
        while (System.currentTimeMillis() < end) {
          long now = System.currentTimeMillis();
          long[] lag = lags(c, now);
          for (int p = 0; p < PARTITIONS; p++) {
            samples.add(lag[p]);
            worst[p] = Math.max(worst[p], lag[p]);
          }
          payments.check();
          if ((now - begin) / 10_000 != (now + SAMPLE_MS - begin) / 10_000) {
            out.printf(Locale.ROOT, "  %3d s: read-model lag now, worst partition %,d ms%n", (now - begin) / 1000,
                Arrays.stream(lag).max().orElse(0));
          }
          Thread.sleep(Math.max(0, now + SAMPLE_MS - System.currentTimeMillis()));
        }
        double achieved = (payments.sent() - sentBefore) * 1000.0 / (System.currentTimeMillis() - begin);
        payments.stop();
        payments.check();
        long stoppedAt = System.currentTimeMillis();
        long total = payments.sent();
        long finishedAt = awaitFinished(c, total);
        Collections.sort(samples);
        out.printf(Locale.ROOT, "%nproducer: %,d payments, %,.0f/s achieved while sampled (asked %,.0f/s)%n", total,
            achieved, rate);
        out.printf(Locale.ROOT, "read-model lag over %,d samples (%d partitions every %d ms for %d s): p50 %,d ms, "
            + "p90 %,d ms, p99 %,d ms, max %,d ms%n", samples.size(), PARTITIONS, SAMPLE_MS, seconds,
            percentile(samples, 50), percentile(samples, 90), percentile(samples, 99), samples.get(samples.size() - 1));
        out.printf(Locale.ROOT, "worst per partition (ms): %s%n", Arrays.toString(worst));
        LedgerBalances.Totals totals = LedgerBalances.totals(db);
        out.printf(Locale.ROOT, "finished %s after the producer stopped; ledger_balances counts %,d payments of %,d "
            + "sent%n", finishedAt < 0 ? "NOT within " + FINISH_LIMIT.toSeconds() + " s"
            : String.format(Locale.ROOT, "%.1f s", (finishedAt - stoppedAt) / 1e3), totals.payments(), total);
        for (int i = 1; i < started.size(); i++) {
          out.printf(Locale.ROOT, "node%d: %s%n", i - 1, started.get(i).isAlive() ? "running" : "EXITED");
        }
        return finishedAt >= 0 && totals.payments() == total;
      }
    } finally {
      if (payments != null) {
        payments.stop();
      }
      List<JvmProcess> byAge = new ArrayList<>(started);
      Collections.reverse(byAge);   // the nodes before the broker
      byAge.forEach(JvmProcess::close);
      if (postgres != null) {
        postgres.close();
      }
      Directories.deleteRecursively(dir.resolve("postgres"));
      Directories.deleteRecursively(dir.resolve("kafka"));
    }
  }

  /**
   * Per partition, the age at {@code now} of the oldest journal entry the read model has not applied
   * (0: none). A partition the projection has not registered yet counts from its first entry.
   */
  private static long[] lags(Connection c, long now) throws SQLException {
    long[] lag = new long[PARTITIONS];
    try (PreparedStatement st = c.prepareStatement("SELECT j.write_timestamp FROM event_journal j "
        + "WHERE j.persistence_id = ? AND j.sequence_number = coalesce((SELECT o.seq FROM "
        + "fencepost_projection_offsets o WHERE o.projection = ? AND o.persistence_id = ?), 0) + 1")) {
      for (int p = 0; p < PARTITIONS; p++) {
        String pid = persistenceId(p);
        st.setString(1, pid);
        st.setString(2, PROJECTION);
        st.setString(3, pid);
        try (ResultSet rs = st.executeQuery()) {
          lag[p] = rs.next() ? Math.max(0, now - rs.getLong(1)) : 0;
        }
      }
    }
    return lag;
  }

  /** Waits until ledger_balances counts {@code total} payments; the time it did, or -1. */
  private static long awaitFinished(Connection c, long total) throws Exception {
    long deadline = System.currentTimeMillis() + FINISH_LIMIT.toMillis();
    while (System.currentTimeMillis() < deadline) {
      try (PreparedStatement st = c.prepareStatement("SELECT coalesce(sum(payments), 0) FROM ledger_balances");
          ResultSet rs = st.executeQuery()) {
        rs.next();
        if (rs.getLong(1) >= total) {
          return System.currentTimeMillis();
        }
      }
      Thread.sleep(100);
    }
    return -1;
  }

  private static String persistenceId(int partition) {
    return new PartitionId(GROUP, TOPIC, partition).persistenceId();
  }

  private static long percentile(List<Long> sorted, int p) {
    return sorted.get(Math.min(sorted.size() - 1, (int) Math.ceil(p / 100.0 * sorted.size()) - 1));
  }
}
