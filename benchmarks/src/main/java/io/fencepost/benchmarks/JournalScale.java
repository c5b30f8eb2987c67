package io.fencepost.benchmarks;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.embedded.ClusterNodes;
import io.fencepost.embedded.FreePorts;
import io.fencepost.embedded.Postgres;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.jdbc.JournalDatabases;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PartitionView;
import io.fencepost.kafka.PipelineSettings;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * The journal over one database and over two, each database on a PostgreSQL server of its own, side
 * by side in one run:
 *
 * <ol>
 *   <li>raw journal writes: {@value #WRITERS} writer threads (partitions) inserting rows the size of a
 *   1,000-record batch's ({@value #ROW_BYTES} bytes, incompressible, as on disk) the way
 *   pekko-persistence-jdbc does, one row per transaction with a synchronous commit, for
 *   {@value #WRITE_SECONDS} s: rows/s, MB/s and WAL per database, and the machine's CPU;
 *   <li>Fencepost exactly-once over one topic of {@value #PARTITIONS} partitions, with one database and
 *   with two: records/s, journal rows/s and WAL per database, this process's CPU per record.
 * </ol>
 *
 * <p>Arguments: {@code [records (default 300000)] [rounds (default 2)]}.
 */
public final class JournalScale {

  private static final int WRITERS = 16;
  private static final int ROW_BYTES = 26_000;
  private static final int WRITE_SECONDS = 15;
  private static final int PARTITIONS = 16;

  private JournalScale() {
  }

  public static void main(String[] args) throws Exception {
    int records = args.length > 0 ? Integer.parseInt(args[0]) : 300_000;
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 2;
    Path dir = Files.createTempDirectory("fencepost-journal-scale-");
    try (Infrastructure infra = Infrastructure.start()) {
      Postgres second = Postgres.startEmbedded(dir.resolve("pg-2"), FreePorts.next());
      try {
        System.out.println(Machine.describe(infra));
        List<String> rows = new ArrayList<>();
        for (int round = 1; round <= rounds; round++) {
          for (int n = 1; n <= 2; n++) {
            List<JournalDatabase> dbs = databases(infra, second, n, "raw");
            rows.add(rawWrites(round, dbs));
          }
        }
        System.out.println();
        System.out.println("| raw journal writes | round | rows/s | MB/s | rows/s per database | WAL MB/s per database "
            + "| machine CPU busy |");
        System.out.println("|---|---:|---:|---:|---|---|---:|");
        rows.forEach(System.out::println);

        String topic = infra.newTopic("scale", PARTITIONS);
        new Workload(records, 150).produce(infra.bootstrapServers(), topic);
        List<String> eo = new ArrayList<>();
        for (int round = 1; round <= rounds; round++) {
          for (int n = 1; n <= 2; n++) {
            infra.quiesce();
            eo.add(exactlyOnce(round, infra, databases(infra, second, n, "eo"), topic, records));
          }
        }
        System.out.println();
        System.out.println("| Fencepost exactly-once, " + PARTITIONS + " partitions | round | records/s | journal rows/s "
            + "per database | WAL bytes per record, per database | this process's CPU µs per record | machine CPU busy |");
        System.out.println("|---|---:|---:|---|---|---:|---:|");
        eo.forEach(System.out::println);
      } finally {
        second.close();
      }
    } finally {
      io.fencepost.embedded.Directories.deleteRecursively(dir);
    }
  }

  /** {@code n} fresh databases with the journal schema: the first on the shared server, the second on another. */
  private static List<JournalDatabase> databases(Infrastructure infra, Postgres second, int n, String prefix)
      throws Exception {
    List<JournalDatabase> dbs = new ArrayList<>();
    dbs.add(infra.newDatabase("scale_" + prefix + "_a"));
    if (n > 1) {
      JournalDatabase b = second.createDatabase("scale_" + prefix + "_b");
      b.installSchema();
      dbs.add(b);
    }
    return dbs;
  }

  private static String rawWrites(int round, List<JournalDatabase> dbs) throws Exception {
    List<DbUsage> before = new ArrayList<>();
    for (JournalDatabase db : dbs) {
      before.add(DbUsage.sample(db));
    }
    AtomicBoolean running = new AtomicBoolean(true);
    AtomicLong[] written = new AtomicLong[dbs.size()];
    List<Thread> writers = new ArrayList<>();
    for (int d = 0; d < dbs.size(); d++) {
      written[d] = new AtomicLong();
    }
    long[] busy0 = MachineCpu.busyAndTotal();
    long start = System.nanoTime();
    for (int w = 0; w < WRITERS; w++) {
      int d = w % dbs.size();
      JournalDatabase db = dbs.get(d);
      String pid = "fencepost|scale|raw|" + w;
      Thread t = new Thread(() -> write(db, pid, running, written[d]), "writer-" + w);
      t.start();
      writers.add(t);
    }
    Thread.sleep(WRITE_SECONDS * 1000L);
    running.set(false);
    for (Thread t : writers) {
      t.join();
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    long[] busy1 = MachineCpu.busyAndTotal();
    long total = 0;
    List<String> perDb = new ArrayList<>();
    List<String> walPerDb = new ArrayList<>();
    for (int d = 0; d < dbs.size(); d++) {
      DbUsage usage = DbUsage.settled(dbs.get(d)).minus(before.get(d));
      total += written[d].get();
      perDb.add(String.format("%,.0f", written[d].get() / seconds));
      walPerDb.add(String.format("%.1f", usage.walBytes() / seconds / 1e6));
    }
    return String.format("| %d database%s | %d | %,.0f | %.1f | %s | %s | %.0f %% |", dbs.size(),
        dbs.size() == 1 ? "" : "s", round, total / seconds, total * (double) ROW_BYTES / seconds / 1e6,
        String.join(" + ", perDb), String.join(" + ", walPerDb), MachineCpu.percent(busy0, busy1));
  }

  private static void write(JournalDatabase db, String pid, AtomicBoolean running, AtomicLong written) {
    byte[] payload = new byte[ROW_BYTES];
    Random random = new Random(pid.hashCode());
    try (Connection c = db.connect(); PreparedStatement st = c.prepareStatement("INSERT INTO event_journal "
        + "(persistence_id, sequence_number, deleted, writer, write_timestamp, adapter_manifest, event_ser_id, "
        + "event_ser_manifest, event_payload) VALUES (?, ?, FALSE, 'scale', ?, '', 1, 'B', ?)")) {
      for (long seq = 1; running.get(); seq++) {
        random.nextBytes(payload);
        st.setString(1, pid);
        st.setLong(2, seq);
        st.setLong(3, System.currentTimeMillis());
        st.setBytes(4, payload);
        st.executeUpdate();
        written.incrementAndGet();
      }
    } catch (Exception e) {
      throw new IllegalStateException("journal write failed on " + db.jdbcUrl() + ": " + e, e);
    }
  }

  private static String exactlyOnce(int round, Infrastructure infra, List<JournalDatabase> dbs, String topic,
      int records) throws Exception {
    Config journal = dbs.size() == 1 ? dbs.get(0).pekkoConfig()
        : JournalDatabases.of("scale-" + round, dbs).pekkoConfig();
    List<DbUsage> before = new ArrayList<>();
    for (JournalDatabase db : dbs) {
      before.add(DbUsage.sample(db));
    }
    Config config = ClusterNodes.node("journal-scale", 0, List.of()).withFallback(journal)
        .withFallback(ConfigFactory.parseString("pekko.loglevel = WARNING")).withFallback(ConfigFactory.load());
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "journal-scale", config);
    Progress progress = new Progress();
    long cpu0;
    long[] busy0;
    long[] busy1;
    long cpu1;
    try {
      ClusterNodes.joinSelf(system, Duration.ofSeconds(30));
      PipelineSettings settings = PipelineSettings.create(system, "scale").withBootstrapServers(infra.bootstrapServers())
          .withTopics(List.of(topic)).withGroupId(infra.uniqueName("scale")).withBatch(1000, Duration.ofMillis(20))
          .withKafkaClient("receive.buffer.bytes", Consumers.RECEIVE_BUFFER_BYTES);
      cpu0 = ProcessCpu.own();
      busy0 = MachineCpu.busyAndTotal();
      Pipeline pipeline = KafkaPipeline.create(system, ctx -> new CreditingActor(ctx, progress),
          new CreditingActor.PaymentDeserializer(), settings).start();
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(10);
      while (true) {
        List<PartitionView> views = pipeline.status().toCompletableFuture().get(30, TimeUnit.SECONDS);
        if (views.stream().mapToLong(v -> v.nextOffset().orElse(0)).sum() >= records) {
          progress.finished();
          break;
        }
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("not caught up within 10 minutes");
        }
        Thread.sleep(50);
      }
      cpu1 = ProcessCpu.own();
      busy1 = MachineCpu.busyAndTotal();
      pipeline.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
    double seconds = progress.seconds();
    List<String> rowsPerDb = new ArrayList<>();
    List<String> walPerDb = new ArrayList<>();
    for (int d = 0; d < dbs.size(); d++) {
      DbUsage usage = DbUsage.settled(dbs.get(d)).minus(before.get(d));
      rowsPerDb.add(String.format("%,.0f", usage.journalRows() / seconds));
      walPerDb.add(String.format("%.0f", usage.walBytes() / (double) records));
    }
    return String.format("| %d database%s | %d | %,.0f | %s | %s | %.1f | %.0f %% |", dbs.size(),
        dbs.size() == 1 ? "" : "s", round, records / seconds, String.join(" + ", rowsPerDb),
        String.join(" + ", walPerDb), ProcessCpu.microsEach(cpu1 - cpu0, records), MachineCpu.percent(busy0, busy1));
  }

  /** The machine's busy and total CPU time from /proc/stat. */
  private static final class MachineCpu {

    static long[] busyAndTotal() throws Exception {
      String[] f = Files.readAllLines(Path.of("/proc/stat")).get(0).trim().split("\\s+");
      long total = 0;
      for (int i = 1; i < f.length; i++) {
        total += Long.parseLong(f[i]);
      }
      long idle = Long.parseLong(f[4]) + Long.parseLong(f[5]);   // idle + iowait
      return new long[] {total - idle, total};
    }

    static double percent(long[] before, long[] after) {
      long total = after[1] - before[1];
      return total == 0 ? 0 : 100.0 * (after[0] - before[0]) / total;
    }
  }
}
