package io.fencepost.examples;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionContext;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineSettings;
import io.fencepost.testkit.ClusterNodes;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/** One ledger cluster node: an actor system on the cluster, the journal, and the ledger pipeline. */
public final class LedgerNode implements AutoCloseable {

  /** The actor system name every ledger node shares (nodes of one cluster must agree). */
  public static final String SYSTEM_NAME = "fencepost-ledger";

  private final ActorSystem<Void> system;
  private final Pipeline pipeline;

  private LedgerNode(ActorSystem<Void> system, Pipeline pipeline) {
    this.system = system;
    this.pipeline = pipeline;
  }

  /**
   * Starts a node.
   *
   * @param seeds {@code host:port} of seed nodes; empty for a node that forms a cluster of its own
   */
  public static LedgerNode start(String bootstrap, String topic, String group, JournalDatabase journal, String host,
      int port, List<String> seeds) {
    return start(bootstrap, topic, group, journal, host, port, seeds, java.util.Optional.empty());
  }

  /**
   * Starts a node whose ledger announces each credit on {@code outboxTopic} (when present) through
   * the outbox, with the pipeline's outbox relay on.
   */
  public static LedgerNode start(String bootstrap, String topic, String group, JournalDatabase journal, String host,
      int port, List<String> seeds, java.util.Optional<String> outboxTopic) {
    List<String> seedNodes = seeds.isEmpty() ? List.of(host + ":" + port) : seeds;
    // Precedence: -D system properties, then the flags, then application.conf, then the examples'
    // cluster defaults (split-brain resolver, fast rebalances), then the journal, then reference.conf.
    Config flags = ConfigFactory.parseMap(Map.of(
        "pekko.remote.artery.canonical.hostname", host,
        "pekko.remote.artery.canonical.port", port,
        "pekko.cluster.seed-nodes", seedNodes.stream().map(s -> "pekko://" + SYSTEM_NAME + "@" + s).toList()));
    Config config = ConfigFactory.systemProperties()
        .withFallback(flags)
        .withFallback(ConfigFactory.defaultApplication())
        .withFallback(ClusterNodes.node(SYSTEM_NAME, port, seedNodes))
        .withFallback(journal.pekkoConfig())
        .withFallback(ConfigFactory.defaultReference())
        .resolve();
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), SYSTEM_NAME, config);
    // ctx -> new LedgerActor(ctx, outboxTopic), unless a test asks for a held payment (HoldOnceLedger).
    Function<PartitionContext, PartitionActor<Payment, Ledger, Credited>> ledger =
        ctx -> HoldOnceLedger.create(ctx, outboxTopic);
    // snippet: start-pipeline
    PipelineSettings settings = PipelineSettings.create(system, "ledger")
        .withBootstrapServers(bootstrap)
        .withTopics(List.of(topic))
        .withGroupId(group);
    if (outboxTopic.isPresent()) {
      settings = settings.withOutbox(settings.outbox().withEnabled(true));
    }
    Pipeline pipeline = KafkaPipeline.create(system, ledger, new PaymentJson(), settings).start();
    // end-snippet: start-pipeline
    return new LedgerNode(system, pipeline);
  }

  /**
   * Keeps {@code ledger_balances} up to date from this node, once a second, until the node stops.
   * Every node may do it: the projection's conditional position applies each batch once.
   */
  public void startReadModel(JournalDatabase journal, String topic, String group) {
    LedgerBalances.installSchema(journal);
    io.fencepost.jdbc.JdbcProjection projection = LedgerBalances.projection(system, journal, group, topic)
        .start(java.time.Duration.ofSeconds(1));
    system.getWhenTerminated().thenRun(projection::close);
  }

  public ActorSystem<Void> system() {
    return system;
  }

  public Pipeline pipeline() {
    return pipeline;
  }

  /** Leaves the cluster gracefully: the pipeline drains first (a coordinated-shutdown task). */
  @Override
  public void close() {
    system.terminate();
    try {
      system.getWhenTerminated().toCompletableFuture().get(60, java.util.concurrent.TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException("ledger node did not stop within 60 s", e);
    }
  }

  /** The {@code fencepost ledger} arguments of a node on 127.0.0.1:{@code port} (for multi-process runs). */
  public static List<String> commandLine(String bootstrap, String topic, String group, JournalDatabase journal,
      int port, List<String> seeds) {
    return List.of("ledger", "--bootstrap", bootstrap, "--topic", topic, "--group", group,
        "--jdbc-url", journal.jdbcUrl(), "--jdbc-user", journal.user(), "--jdbc-password", journal.password(),
        "--port", Integer.toString(port), "--seeds", String.join(",", seeds));
  }

  /** {@code fencepost ledger}'s exit status when the cluster downed the node (0 after SIGTERM). */
  public static final int DOWNED_EXIT_STATUS = 3;

  /** {@code fencepost ledger}: runs one node until SIGTERM (graceful) or SIGKILL. */
  static final class Command implements Main.Command {
    @Override
    public int run(String[] args) throws Exception {
      Flags flags = new Flags("ledger")
          .value("bootstrap", "host:port", "FENCEPOST_BOOTSTRAP", null, "Kafka bootstrap servers")
          .value("topic", "name", "FENCEPOST_TOPIC", "payments", "input topic")
          .value("group", "id", "FENCEPOST_GROUP", "ledger", "consumer group")
          .value("jdbc-url", "url", "FENCEPOST_JDBC_URL", null,
              "journal database (jdbc:postgresql:... or jdbc:h2:...); default an H2 file under ./fencepost-demo")
          .value("jdbc-user", "user", "FENCEPOST_JDBC_USER", "postgres", "journal database user")
          .value("jdbc-password", "password", "FENCEPOST_JDBC_PASSWORD", "", "journal database password")
          .value("host", "address", "FENCEPOST_HOST", "127.0.0.1", "address this node binds and advertises")
          .value("port", "n", "FENCEPOST_PORT", "2551", "cluster port")
          .value("seeds", "host:port,...", "FENCEPOST_SEEDS", null, "seed nodes; default this node alone")
          .value("outbox-topic", "name", "FENCEPOST_OUTBOX_TOPIC", null,
              "announce every credit on this topic through the outbox (relay on); default none")
          .bool("install-schema", "create the journal tables if they are missing")
          .bool("read-model", "also keep the ledger_balances SQL table in the journal database (exactly once; "
              + "safe on every node)");
      if (!flags.parse(args)) {
        return 0;
      }
      int port = flags.intValue("port", 1, 65535);
      String url = flags.get("jdbc-url").orElse(null);
      JournalDatabase journal = url == null
          ? JournalDatabase.h2File(Path.of("fencepost-demo", "journal"))
          : JournalDatabase.of(url, flags.require("jdbc-user"), flags.require("jdbc-password"));
      if (flags.isSet("install-schema") || url == null) {
        journal.installSchemaIfMissing();
      }
      List<String> seeds = flags.get("seeds")
          .map(s -> Arrays.stream(s.split(",")).map(String::trim).filter(x -> !x.isEmpty()).toList())
          .orElse(List.of());
      // Every meter in one in-memory registry, so that the node can say on exit how many writes were fenced.
      SimpleMeterRegistry meters = new SimpleMeterRegistry();
      Metrics.addRegistry(meters);
      LedgerNode node = start(flags.require("bootstrap"), flags.require("topic"), flags.require("group"), journal,
          flags.require("host"), port, seeds, flags.get("outbox-topic"));
      if (flags.isSet("read-model")) {
        node.startReadModel(journal, flags.require("topic"), flags.require("group"));
      }
      // A supervisor or a test may wait for the node to be a cluster member (consuming does not).
      org.apache.pekko.cluster.Cluster.get(node.system().classicSystem()).registerOnMemberUp(() -> {
        System.out.println("UP " + node.system().address());
        System.out.flush();
      });
      System.out.println("READY " + node.system().address());
      System.out.flush();
      node.system().getWhenTerminated().toCompletableFuture().get();
      System.out.println("fencepost.writes.fenced on this node: "
          + (long) meters.find("fencepost.writes.fenced").counters().stream().mapToDouble(Counter::count).sum());
      Optional<CoordinatedShutdown.Reason> reason = CoordinatedShutdown.get(node.system()).getShutdownReason();
      if (reason.isPresent() && reason.get().equals(CoordinatedShutdown.clusterDowningReason())) {
        System.err.println("fencepost ledger: this node was downed by the cluster (split-brain resolver or an "
            + "operator) and stopped; exit status " + DOWNED_EXIT_STATUS + ": let a supervisor start it again");
        return DOWNED_EXIT_STATUS;
      }
      return 0;
    }

    @Override
    public String summary() {
      return "run one ledger cluster node (Kafka pipeline + journal); stop with SIGTERM";
    }
  }
}
