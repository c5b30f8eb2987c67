package io.fencepost.tools;

import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.typesafe.config.ConfigFactory;
import io.fencepost.GuaranteeStatement;
import io.fencepost.PartitionActorSettings;
import io.fencepost.examples.LedgerBalances;
import io.fencepost.examples.LedgerNode;
import io.fencepost.jdbc.JdbcProjection;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.embedded.Directories;
import io.fencepost.embedded.FreePorts;
import io.fencepost.embedded.H2;
import io.fencepost.embedded.JvmProcess;
import io.fencepost.embedded.KafkaBroker;
import io.fencepost.reconciliation.ReconciliationReport;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * {@code fencepost demo}: zero set-up. An in-process Kafka broker, an H2 journal in
 * {@code ./fencepost-demo}, two ledger nodes as separate processes in one cluster; payments with
 * producer duplicates; one node SIGKILLed mid-stream and restarted; then the reconciliation verdict.
 */
final class DemoCommand implements Main.Command {

  private static final String TOPIC = "payments";
  private static final String GROUP = "ledger";

  @Override
  public int run(String[] args) throws Exception {
    Flags flags = new Flags("demo")
        .value("count", "n", null, "20000", "distinct payments to send")
        .value("dup-rate", "fraction", null, "0.01", "fraction of payments re-sent by the producer (0..1)")
        .value("partitions", "n", null, "4", "partitions of the payments topic")
        .value("rate", "per-second", null, "1000", "payments per second")
        .value("dir", "path", null, "fencepost-demo", "working directory (wiped first)");
    if (!flags.parse(args)) {
      return 0;
    }
    int count = flags.intValue("count", 100, 10_000_000);
    int rate = flags.intValue("rate", 1, 1_000_000);
    int partitions = flags.intValue("partitions", 1, 1000);
    double dupRate = flags.doubleValue("dup-rate", 0, 1);
    Path dir = Path.of(flags.require("dir")).toAbsolutePath();
    PrintStream out = System.out;
    Directories.deleteRecursively(dir);

    out.println("Fencepost demo: exactly-once effects on at-least-once Kafka delivery");
    try (KafkaBroker broker = KafkaBroker.create(dir.resolve("kafka"), 0, Map.of()).start()) {
      broker.createTopic(TOPIC, partitions);
      JournalDatabase journal = JournalDatabase.h2File(dir.resolve("journal"));
      // This process opens the H2 file first and so serves it to the nodes (AUTO_SERVER) all along.
      try (Connection keepOpen = journal.connect()) {
        journal.installSchemaIfMissing();
        GuaranteeStatement statement = GuaranteeStatement.of(
            PartitionActorSettings.create(ConfigFactory.load()), "[jdbc-journal on H2]");
        out.println("guarantee: " + statement.render());
        out.printf("broker %s, topic %s (%d partitions), journal %s%n", broker.bootstrapServers(), TOPIC, partitions,
            journal.jdbcUrl());

        int portA = FreePorts.next();
        int portB = FreePorts.next();
        // Two nodes: when one is killed, the split-brain resolver keeps the side with the lowest address.
        if (portB < portA) {
          int t = portA;
          portA = portB;
          portB = t;
        }
        List<String> seeds = List.of("127.0.0.1:" + portA, "127.0.0.1:" + portB);
        List<JvmProcess> all = new ArrayList<>();
        try {
          int managementA = FreePorts.next();
          JvmProcess a = node("node-a", portA, seeds, broker, journal, dir, managementA);
          all.add(a);
          JvmProcess b = node("node-b", portB, seeds, broker, journal, dir, FreePorts.next());
          all.add(b);
          a.awaitLine("READY", Duration.ofSeconds(120));
          b.awaitLine("READY", Duration.ofSeconds(120));
          out.println("two ledger nodes up (logs in " + dir + "/node-*.log)");

          PaymentProducer producer = new PaymentProducer(broker.bootstrapServers(), TOPIC, 50, dupRate, 42);
          long killAt = count * 2L / 5;
          JvmProcess[] nodeB = {b};
          PaymentProducer.Summary sent = producer.run(count, rate, i -> {
            if (i % 200 == 0 || i == count) {
              PaymentProducer.progress(out, "produce", i, count);
            }
            if (i == killAt) {
              nodeB[0].kill();
              out.printf("%nnode-b SIGKILLed mid-stream after %,d payments; restarting it%n", i);
              nodeB[0] = node("node-b", nodeB[0] == null ? 0 : seedsPort(seeds, 1), seeds, broker, journal, dir,
                  FreePorts.next());
              all.add(nodeB[0]);
            }
          });
          out.printf("%nsent %,d payments + %,d producer duplicates in %.1f s%n", sent.payments(), sent.duplicates(),
              sent.seconds());
          nodeB[0].awaitLine("READY", Duration.ofSeconds(120));
          ReconciliationReport report = LedgerReconciliation.awaitComplete(
              LedgerReconciliation.of(broker.bootstrapServers(), TOPIC, GROUP, journal).bucket(Duration.ofSeconds(10)),
              Duration.ofSeconds(120), (done, expected) -> PaymentProducer.progress(out, "applied", done, expected));
          out.println();
          out.print(report.render());
          out.println();
          printRemoteBalance(out, managementA);
          LedgerBalances.Totals totals = readModel(journal);
          out.printf("read model ledger_balances (kept exactly once by a projection): %,d merchants, %,d payments, "
              + "%,d cents in all%n", totals.merchants(), totals.payments(), totals.balanceCents());
          boolean readModelOk = totals.payments() == report.total().applied();
          if (!readModelOk) {
            out.println("READ MODEL MISMATCH: " + totals.payments() + " payments in ledger_balances, "
                + report.total().applied() + " applied");
          }
          return report.ok() && readModelOk ? 0 : 1;
        } finally {
          for (JvmProcess p : all) {
            if (p.isAlive()) {
              p.terminate(Duration.ofSeconds(30));
            }
          }
        }
      }
    }
  }

  /** Runs the ledger_balances projection over the journal until it has caught up, and sums the table. */
  private static LedgerBalances.Totals readModel(JournalDatabase journal) throws Exception {
    LedgerBalances.installSchema(journal);
    ActorSystem<Void> system = journal.localSystem("fencepost-demo-projection",
        DemoCommand.class.getClassLoader());
    try {
      JdbcProjection projection =
          LedgerBalances.projection(system, journal, GROUP, TOPIC);
      while (projection.runOnce() > 0) {
        // until caught up
      }
      return LedgerBalances.totals(journal);
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
  }

  /**
   * One merchant's balance read through node-a's {@code /balances} for a merchant whose partition
   * node-b owns: the query goes over the cluster to the owner.
   */
  private static void printRemoteBalance(PrintStream out, int management) throws Exception {
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    ObjectMapper json = new ObjectMapper();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);   // node-b owns partitions again by then
    for (int m = 0; System.nanoTime() < deadline; m = (m + 1) % 50) {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + management
          + "/queries/balances/merchant-" + m)).timeout(Duration.ofSeconds(10)).build(),
          HttpResponse.BodyHandlers.ofString());
      JsonNode answer = r.statusCode() == 200 ? json.readTree(r.body()) : null;
      if (answer != null && !answer.get("local").asBoolean()) {
        out.printf("balance of merchant-%d read through node-a, which does not own its partition %d: %,d cents "
            + "(answered by %s from next offset %,d)%n", m, answer.get("partition").asInt(),
            answer.get("reply").asLong(), answer.get("node").asText(), answer.get("appliedNextOffset").asLong());
        return;
      }
      if (m == 49) {
        Thread.sleep(500);
      }
    }
    out.println("no merchant's partition is owned by node-b: no balance read across the cluster");
  }

  private static int seedsPort(List<String> seeds, int i) {
    return Integer.parseInt(seeds.get(i).substring(seeds.get(i).lastIndexOf(':') + 1));
  }

  private static JvmProcess node(String name, int port, List<String> seeds, KafkaBroker broker,
      JournalDatabase journal, Path dir, int management) {
    List<String> args = new ArrayList<>(LedgerNode.commandLine(broker.bootstrapServers(), TOPIC, GROUP, journal, port,
        seeds));
    args.addAll(List.of("--management-port", Integer.toString(management)));
    return JvmProcess.start(name, Main.class.getName(), args, dir.resolve(name + ".log"));
  }

  @Override
  public String summary() {
    return "zero set-up demo: broker, H2 journal, two nodes, a SIGKILL mid-stream, then the verdict";
  }
}
