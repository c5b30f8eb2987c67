package io.fencepost.tools;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

import com.typesafe.config.ConfigFactory;
import io.fencepost.FencepostMeters;
import io.fencepost.examples.LedgerNode;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.jdbc.JournalDatabases;
import io.fencepost.embedded.H2;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.pekko.Done;
import org.apache.pekko.actor.CoordinatedShutdown;

/** {@code fencepost ledger}: runs one node until SIGTERM (graceful) or SIGKILL. */
final class LedgerCommand implements Main.Command {
  @Override
  public int run(String[] args) throws Exception {
    Flags flags = new Flags("ledger")
        .value("bootstrap", "host:port", "FENCEPOST_BOOTSTRAP", null, "Kafka bootstrap servers")
        .value("topic", "name", "FENCEPOST_TOPIC", "payments", "input topic")
        .value("group", "id", "FENCEPOST_GROUP", "ledger", "consumer group")
        .repeatable("jdbc-url", "url", "FENCEPOST_JDBC_URL", null,
            "journal database (jdbc:postgresql:... or jdbc:h2:...); default an H2 file under ./fencepost-demo. "
                + "Give it once per database to spread the partitions' histories over several, always in the "
                + "order first used (a node refuses another order)")
        .value("jdbc-user", "user", "FENCEPOST_JDBC_USER", "postgres", "journal database user")
        .value("jdbc-password", "password", "FENCEPOST_JDBC_PASSWORD", "", "journal database password")
        .value("host", "address", "FENCEPOST_HOST", "127.0.0.1", "address this node binds and advertises")
        .value("port", "n", "FENCEPOST_PORT", "2551", "cluster port")
        .value("seeds", "host:port,...", "FENCEPOST_SEEDS", null, "seed nodes; default this node alone")
        .value("outbox-topic", "name", "FENCEPOST_OUTBOX_TOPIC", null,
            "announce every credit on this topic through the outbox (relay on); default none")
        .value("outbox-delivery", "mode", "FENCEPOST_OUTBOX_DELIVERY", "at-least-once",
            "exactly-once (each relay round a Kafka transaction with its position: read_committed consumers see "
                + "each credit once) or at-least-once (copies after a crash, same fencepost.outbox-id)")
        .value("management-port", "n", "FENCEPOST_MANAGEMENT_PORT", null,
            "serve /ready, /alive, /metrics (Prometheus), /cluster and /queries/balances/{merchant} on this port; default off")
        .value("management-host", "address", "FENCEPOST_MANAGEMENT_HOST", "127.0.0.1",
            "address the management port binds; beyond loopback only for an orchestrator's probes")
        .bool("install-schema", "create the journal tables if they are missing")
        .bool("read-model", "also keep the ledger_balances SQL table in the journal database (exactly once; "
            + "safe on every node)");
    if (!flags.parse(args)) {
      return 0;
    }
    int port = flags.intValue("port", 1, 65535);
    String delivery = flags.require("outbox-delivery");
    if (!List.of("exactly-once", "at-least-once").contains(delivery)) {
      throw new IllegalArgumentException("--outbox-delivery must be exactly-once or at-least-once, was [" + delivery
          + "]");
    }
    // Read by the pipeline's settings (fencepost.pipelines.ledger.outbox.delivery), like any -D override.
    System.setProperty("fencepost.pipelines.ledger.outbox.delivery", delivery);
    ConfigFactory.invalidateCaches();
    List<String> urls = flags.all("jdbc-url");
    JournalDatabases journals = LedgerNode.journals(urls.isEmpty()
        ? List.of(JournalDatabase.h2File(Path.of("fencepost-demo", "journal")))
        : urls.stream().map(url -> JournalDatabase.of(url, flags.require("jdbc-user"), flags.require("jdbc-password")))
            .toList());
    if (flags.isSet("install-schema") || urls.isEmpty()) {
      journals.installSchemaIfMissing();
    }
    List<String> seeds = flags.get("seeds")
        .map(s -> Arrays.stream(s.split(",")).map(String::trim).filter(x -> !x.isEmpty()).toList())
        .orElse(List.of());
    Optional<Map.Entry<String, Integer>> management = flags.get("management-port").isEmpty() ? Optional.empty()
        : Optional.of(Map.entry(flags.require("management-host"), flags.intValue("management-port", 0, 65535)));
    LedgerNode node = LedgerNode.start(flags.require("bootstrap"), flags.require("topic"), flags.require("group"), journals,
        flags.require("host"), port, seeds, flags.get("outbox-topic"), management);
    MeterRegistry meters = FencepostMeters.get(node.system()).registry();
    if (flags.isSet("read-model")) {
      node.startReadModel(journals, flags.require("topic"), flags.require("group"));
    }
    // A supervisor or a test may wait for the node to be a cluster member (consuming does not): one
    // line each time it becomes one, again after the cluster downed it and a new membership joined.
    node.membership().onEachMemberUp(() -> {
      System.out.println("UP " + node.membership().node() + " (membership " + node.membership().starts() + ")");
      System.out.flush();
    });
    System.out.println("READY " + node.membership().node());
    System.out.flush();
    LivenessWatch liveness = LivenessWatch.start(node.pipeline(), node.system());
    // In the shutdown itself: after SIGTERM the JVM halts once its shutdown hooks ran, before this
    // thread would print anything.
    CoordinatedShutdown.get(node.system()).addTask(CoordinatedShutdown.PhaseBeforeActorSystemTerminate(),
        "print-fenced-writes", () -> {
          System.out.println("fencepost.writes.fenced on this node: "
              + (long) meters.find("fencepost.writes.fenced").counters().stream().mapToDouble(Counter::count).sum());
          System.out.flush();
          return CompletableFuture.completedFuture(Done.getInstance());
        });
    node.system().getWhenTerminated().toCompletableFuture().get();
    Optional<CoordinatedShutdown.Reason> reason = CoordinatedShutdown.get(node.system()).getShutdownReason();
    if (reason.isPresent() && reason.get().equals(LivenessWatch.REASON)) {
      System.err.println("fencepost ledger: this node was not live (" + liveness.lastReason() + ") and stopped; exit "
          + "status " + LivenessWatch.EXIT_STATUS + ": let a supervisor start it again");
      return LivenessWatch.EXIT_STATUS;
    }
    return 0;
  }

  @Override
  public String summary() {
    return "run one ledger cluster node (Kafka pipeline + journal); stop with SIGTERM";
  }
}
