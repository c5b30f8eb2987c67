package io.fencepost.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.stream.IntStream;

import io.fencepost.PartitionId;
import io.fencepost.embedded.Directories;
import io.fencepost.embedded.FreePorts;
import io.fencepost.embedded.JvmProcess;
import io.fencepost.embedded.Postgres;
import io.fencepost.examples.LedgerBalances;
import io.fencepost.examples.LedgerNode;
import io.fencepost.examples.Payment;
import io.fencepost.examples.PaymentJson;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.jdbc.JournalDatabases;
import io.fencepost.reconciliation.ReconciliationReport;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The ledger on two journal databases, each on a PostgreSQL server of its own: two nodes (separate
 * JVMs) in one cluster and group, 8 partitions. A node is SIGKILLed and started again, then one
 * database server is stopped for 20 s while payments keep coming: the partitions whose histories live
 * on the other database go on applying, the stopped database's partitions resume once it is back, and
 * in the end every payment is applied exactly once, each partition's history is in its own database
 * only, and each database's read model equals its journals. A node given the databases in another
 * order refuses to start.
 */
@Tag("integration")
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class JournalDatabasesIT {

  private static final int PARTITIONS = 8;
  private static final String TOPIC = "payments";
  private static final String GROUP = "ledger";
  private static final Duration OUTAGE = Duration.ofSeconds(20);

  private final List<JvmProcess> processes = new ArrayList<>();
  private final Path logs = Path.of("target", "it-logs", "journal-databases");
  private final int[] ports = IntStream.generate(FreePorts::next).limit(2).sorted().toArray();
  private final JvmProcess[] nodes = new JvmProcess[2];
  private Postgres second;
  private JournalDatabase a;
  private JournalDatabase b;
  private String bootstrap;

  @BeforeEach
  void start() throws Exception {
    Directories.deleteRecursively(logs);
    Files.createDirectories(logs);
    JvmProcess broker = track(JvmProcess.start("broker", Main.class.getName(),
        List.of("broker", "--topic", TOPIC + ":" + PARTITIONS), logs.resolve("broker.log")));
    bootstrap = broker.awaitLine("BOOTSTRAP=", Duration.ofSeconds(90)).substring("BOOTSTRAP=".length());
    a = Postgres.shared().createDatabase("journal_a");
    second = Postgres.startEmbedded(logs.resolve("pg-b").toAbsolutePath(), FreePorts.next());
    b = second.createDatabase("journal_b");
    a.installSchema();
    b.installSchema();
    for (int i = 0; i < 2; i++) {
      startNode(i);
    }
    for (int i = 0; i < 2; i++) {
      nodes[i].awaitLine("READY", Duration.ofSeconds(90));
      nodes[i].awaitLine("UP ", Duration.ofSeconds(90));
    }
  }

  @AfterEach
  void stop() {
    processes.forEach(JvmProcess::close);
    Postgres.shared().dropDatabase(a);
    if (second != null) {
      second.close();
    }
    OwnershipLog ownership = OwnershipLog.of(List.of(nodes[0].log(), nodes[1].log()));
    System.out.println("ownership: " + ownership.render());
    assertEquals(0, ownership.anomalies(), "ownership anomalies in the nodes' logs");
  }

  private JvmProcess track(JvmProcess p) {
    processes.add(p);
    return p;
  }

  private List<String> nodeArgs(List<JournalDatabase> order, int port) {
    List<String> seeds = List.of("127.0.0.1:" + ports[0], "127.0.0.1:" + ports[1]);
    List<String> args = new ArrayList<>(LedgerNode.commandLine(bootstrap, TOPIC, GROUP, order, port, seeds));
    args.add("--read-model");
    return args;
  }

  private void startNode(int i) {
    nodes[i] = track(JvmProcess.start("node" + i, Main.class.getName(), nodeArgs(List.of(a, b), ports[i]),
        logs.resolve("node" + i + ".log")));
  }

  @Test
  void aDatabaseOutageStopsOnlyItsPartitionsAndNothingIsLostOrDoubled() throws Exception {
    JournalDatabases journals = JournalDatabases.of(LedgerNode.DEPLOYMENT, List.of(a, b));
    List<Integer> onA = new ArrayList<>();
    List<Integer> onB = new ArrayList<>();
    for (int p = 0; p < PARTITIONS; p++) {
      (journals.indexOf(new PartitionId(GROUP, TOPIC, p)) == 0 ? onA : onB).add(p);
    }
    assertEquals(List.of(0, 2, 4, 6), onA, "ledger|payments|p alternate between the databases");

    AtomicLongArray produced = new AtomicLongArray(PARTITIONS);
    AtomicBoolean producing = new AtomicBoolean(true);
    Thread producer = producer(600, producing, produced);
    Thread.sleep(4_000);
    nodes[1].kill();                                            // SIGKILL mid-stream
    startNode(1);
    nodes[1].awaitLine("READY", Duration.ofSeconds(90));
    nodes[1].awaitLine("UP ", Duration.ofSeconds(90));
    awaitEveryPartitionJournaled(Duration.ofMinutes(2));

    Map<String, Long> aBefore = newestEntries(a);
    second.stopServer();
    System.out.println("database b stopped");
    long outageStart = System.nanoTime();
    // During the outage, database a's partitions go on applying: each one's history grows.
    Map<String, Long> aDuring = aBefore;
    while (System.nanoTime() - outageStart < OUTAGE.toNanos()) {
      Thread.sleep(1_000);
      aDuring = newestEntries(a);
    }
    second.startServer();
    System.out.println("database b started again");
    for (int p : onA) {
      String pid = new PartitionId(GROUP, TOPIC, p).persistenceId();
      assertTrue(aDuring.getOrDefault(pid, 0L) > aBefore.getOrDefault(pid, 0L),
          "partition " + p + " (database a) applied during database b's outage: " + aBefore.get(pid) + " -> "
              + aDuring.get(pid));
    }
    assertTrue(producer.isAlive(), "payments kept coming through the outage");
    Thread.sleep(5_000);                                        // payments for b's partitions after its return
    producing.set(false);
    producer.join();

    ReconciliationReport report = LedgerReconciliation.awaitComplete(
        LedgerReconciliation.of(bootstrap, TOPIC, GROUP, List.of(a, b)), Duration.ofMinutes(4), (done, all) -> { });
    System.out.println(report.render());
    long total = IntStream.range(0, PARTITIONS).mapToLong(produced::get).sum();
    assertTrue(report.ok(), report.verdict());
    assertEquals(total, report.total().expected(), "payments expected");
    assertEquals(total, report.total().applied(), "payments applied, each once");

    // Each partition's history is in its own database only.
    for (int p = 0; p < PARTITIONS; p++) {
      String pid = new PartitionId(GROUP, TOPIC, p).persistenceId();
      boolean homeA = onA.contains(p);
      assertNotEquals(0L, newestEntries(homeA ? a : b).getOrDefault(pid, 0L), "partition " + p + " at home");
      assertEquals(0L, newestEntries(homeA ? b : a).getOrDefault(pid, 0L), "partition " + p + " elsewhere");
    }
    // Each database's read model equals its partitions' payments (applied in the same transactions).
    long onADatabase = onA.stream().mapToLong(produced::get).sum();
    long onBDatabase = onB.stream().mapToLong(produced::get).sum();
    awaitReadModel(a, onADatabase);
    awaitReadModel(b, onBDatabase);
    assertEquals(List.of(onADatabase, onBDatabase),
        List.of(LedgerBalances.totals(a).payments(), LedgerBalances.totals(b).payments()), "read models");
    assertEquals(total, LedgerBalances.totals(journals).payments(), "the read models summed");
    for (JvmProcess node : nodes) {
      assertTrue(node.isAlive(), node + " still runs");
    }

    // The same databases in another order: refused before consuming anything.
    JvmProcess wrong = track(JvmProcess.start("wrong-order", Main.class.getName(),
        nodeArgs(List.of(b, a), FreePorts.next()), logs.resolve("wrong-order.log")));
    assertNotEquals(0, wrong.awaitExit(Duration.ofSeconds(90)), "a node on a reordered list exits");
    String refusal = String.join("\n", wrong.lines());
    assertTrue(refusal.contains("[" + LedgerNode.DEPLOYMENT + "] journal databases refused: the configured list is "
        + "not the one the deployment's histories were written with"), refusal);
    assertEquals(List.of(onADatabase, onBDatabase),
        List.of(LedgerBalances.totals(a).payments(), LedgerBalances.totals(b).payments()), "nothing applied since");
  }

  /** Produces payments at about {@code perSecond} (unique ids), round-robin over partitions, until told to stop. */
  private Thread producer(int perSecond, AtomicBoolean producing, AtomicLongArray produced) {
    Thread t = new Thread(() -> {
      Properties p = new Properties();
      p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
      p.put(ProducerConfig.ACKS_CONFIG, "all");
      p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
      p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
      PaymentJson json = new PaymentJson();
      try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(p, new StringSerializer(),
          new ByteArraySerializer())) {
        long start = System.nanoTime();
        for (int i = 0; producing.get(); i++) {
          int partition = i % PARTITIONS;
          String merchant = "m" + (i % 53);
          producer.send(new ProducerRecord<>(TOPIC, partition, merchant,
              json.serialize(TOPIC, new Payment("pay-" + i, merchant, 100 + i % 900))), (md, e) -> {
                if (e == null) {
                  produced.incrementAndGet(md.partition());
                }
              });
          long wait = start + (long) ((i + 1) * 1e9 / perSecond) - System.nanoTime();
          if (wait > 0) {
            Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
          }
        }
        producer.flush();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }, "producer");
    t.start();
    return t;
  }

  /** Waits until every partition has written to its journal (in either database). */
  private void awaitEveryPartitionJournaled(Duration timeout) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      Map<String, Long> entries = new TreeMap<>(newestEntries(a));
      entries.putAll(newestEntries(b));
      long started = IntStream.range(0, PARTITIONS)
          .filter(p -> entries.getOrDefault(new PartitionId(GROUP, TOPIC, p).persistenceId(), 0L) > 0).count();
      if (started == PARTITIONS) {
        return;
      }
      assertTrue(System.nanoTime() < deadline, "partitions with journal entries: " + entries + " after " + timeout);
      Thread.sleep(500);
    }
  }

  private static void awaitReadModel(JournalDatabase db, long payments) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
    while (LedgerBalances.totals(db).payments() < payments && System.nanoTime() < deadline) {
      Thread.sleep(500);
    }
  }

  /** The newest journal entry (sequence number) of each persistence id of the ledger in {@code db}. */
  private static Map<String, Long> newestEntries(JournalDatabase db) throws SQLException {
    Map<String, Long> out = new TreeMap<>();
    try (Connection c = db.connect(); PreparedStatement st = c.prepareStatement("SELECT persistence_id, "
        + "max(sequence_number) FROM event_journal WHERE persistence_id LIKE 'fencepost|ledger|payments|%' "
        + "GROUP BY persistence_id")) {
      try (ResultSet rs = st.executeQuery()) {
        while (rs.next()) {
          out.put(rs.getString(1), rs.getLong(2));
        }
      }
    }
    return out;
  }
}
