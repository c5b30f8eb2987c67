package io.fencepost.examples;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.FencepostMeters;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionContext;
import io.fencepost.jdbc.JdbcProjection;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.jdbc.JournalDatabases;
import io.fencepost.kafka.ClusterMembership;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.PipelineSettings;
import io.fencepost.management.FencepostManagement;
import io.fencepost.embedded.ClusterNodes;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * One ledger cluster node: the ledger pipeline and the journal in one actor system, the cluster
 * membership ({@link ClusterMembership}) in another.
 */
public final class LedgerNode implements AutoCloseable {

  /** The actor system name every ledger node shares (nodes of one cluster must agree). */
  public static final String SYSTEM_NAME = "fencepost-ledger";
  /** The deployment name the ledger's journal databases record ({@link JournalDatabases}). */
  public static final String DEPLOYMENT = "fencepost-ledger";

  private final ActorSystem<Void> system;
  private final ClusterMembership membership;
  private final Pipeline pipeline;

  private LedgerNode(ActorSystem<Void> system, ClusterMembership membership, Pipeline pipeline) {
    this.system = system;
    this.membership = membership;
    this.pipeline = pipeline;
  }

  /**
   * Starts a node.
   *
   * @param seeds {@code host:port} of seed nodes; empty for a node that forms a cluster of its own
   */
  public static LedgerNode start(String bootstrap, String topic, String group, JournalDatabase journal, String host,
      int port, List<String> seeds) {
    return start(bootstrap, topic, group, journal, host, port, seeds, Optional.empty());
  }

  /**
   * Starts a node whose ledger announces each credit on {@code outboxTopic} (when present) through
   * the outbox, with the pipeline's outbox relay on.
   */
  public static LedgerNode start(String bootstrap, String topic, String group, JournalDatabase journal, String host,
      int port, List<String> seeds, Optional<String> outboxTopic) {
    return start(bootstrap, topic, group, journal, host, port, seeds, outboxTopic, Optional.empty());
  }

  /**
   * Starts a node; with {@code management} (host and port) it also serves its operations endpoints
   * there ({@code /ready}, {@code /alive}, {@code /metrics}, {@code /cluster}, and
   * {@code /queries/balances/{merchant}}, answered from any node: {@link BalanceRequests}).
   */
  public static LedgerNode start(String bootstrap, String topic, String group, JournalDatabase journal, String host,
      int port, List<String> seeds, Optional<String> outboxTopic,
      Optional<Map.Entry<String, Integer>> management) {
    return start(bootstrap, topic, group, journals(List.of(journal)), host, port, seeds, outboxTopic, management);
  }

  /**
   * The ledger's journal databases, in the order first used: each partition's history lives in one of
   * them ({@link JournalDatabases#indexOf}). Every ledger node of every consumer group is deployment
   * {@value #DEPLOYMENT}, the name the databases record.
   */
  public static JournalDatabases journals(List<JournalDatabase> databases) {
    return JournalDatabases.of(DEPLOYMENT, databases);
  }

  /**
   * Starts a node on journal databases {@code journals}; refuses to start (before joining the cluster
   * or consuming) when they are not the list the ledger's histories were written with
   * ({@link JournalDatabases#verifyIdentities()}).
   */
  public static LedgerNode start(String bootstrap, String topic, String group, JournalDatabases journals, String host,
      int port, List<String> seeds, Optional<String> outboxTopic,
      Optional<Map.Entry<String, Integer>> management) {
    List<String> seedNodes = seeds.isEmpty() ? List.of(host + ":" + port) : seeds;
    // Precedence: -D system properties, then the flags, then application.conf, then the examples'
    // cluster defaults (split-brain resolver, fast rebalances), then the journal, then reference.conf.
    Map<String, Object> given = new HashMap<>(Map.of(
        "pekko.remote.artery.canonical.hostname", host,
        "pekko.remote.artery.canonical.port", port,
        "pekko.cluster.seed-nodes", seedNodes.stream().map(s -> "pekko://" + SYSTEM_NAME + "@" + s).toList(),
        // GET /queries/balances/{merchant} on the management port: a query route, BalanceRequests its code.
        "fencepost.management.queries.balances.pipeline", "ledger",
        "fencepost.management.queries.balances.topic", topic,
        "fencepost.management.queries.balances.request", BalanceRequests.class.getName()));
    management.ifPresent(m -> {
      given.put("fencepost.management.hostname", m.getKey());
      given.put("fencepost.management.port", m.getValue());
    });
    Config flags = ConfigFactory.parseMap(given);
    Config config = ConfigFactory.systemProperties()
        .withFallback(flags)
        .withFallback(ConfigFactory.defaultApplication())
        .withFallback(ClusterNodes.node(SYSTEM_NAME, port, seedNodes))
        .withFallback(journals.pekkoConfig())
        .withFallback(ConfigFactory.defaultReference())
        .resolve();
    // snippet: membership
    // The pipeline consumes in an actor system of its own; the cluster membership runs in another,
    // started again whenever the cluster downs this node (the node goes on consuming meanwhile).
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), SYSTEM_NAME,
        ClusterMembership.pipelineConfig(config));
    // snippet: meters
    PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    FencepostMeters.get(system).use(prometheus);
    // end-snippet: meters
    ClusterMembership membership;
    try {
      membership = ClusterMembership.start(system, config);   // before the pipelines
    } catch (RuntimeException e) {
      system.terminate();   // its port taken, say: no actor system left behind
      throw e;
    }
    // end-snippet: membership
    if (management.isPresent()) {
      try {
        FencepostManagement.start(system).toCompletableFuture().get(30, TimeUnit.SECONDS);
      } catch (Exception e) {
        system.terminate();
        Throwable cause = e.getCause() != null ? e.getCause() : e;
        throw cause instanceof RuntimeException r ? r : new IllegalStateException(cause.toString(), cause);
      }
    }
    try {
      return new LedgerNode(system, membership, startPipeline(system, bootstrap, topic, group, outboxTopic));
    } catch (RuntimeException | Error e) {
      system.terminate();   // a node that cannot start leaves no actor system (and no threads) behind
      throw e;
    }
  }

  private static Pipeline startPipeline(ActorSystem<Void> system, String bootstrap, String topic, String group,
      Optional<String> outboxTopic) {
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
    return pipeline;
  }

  /**
   * Keeps {@code ledger_balances} up to date from this node, every 500 ms, until the node stops.
   * Every node may do it: the projection's conditional position applies each batch once.
   */
  public void startReadModel(JournalDatabase journal, String topic, String group) {
    startReadModel(journals(List.of(journal)), topic, group);
  }

  /**
   * Keeps {@code ledger_balances} in each journal database, for the partitions whose histories it
   * holds (so each batch and its read-model rows commit in one local transaction): a merchant's
   * balance is the sum over the databases ({@link LedgerBalances#totals}).
   */
  public void startReadModel(JournalDatabases journals, String topic, String group) {
    for (JournalDatabase journal : journals.databases()) {
      LedgerBalances.installSchema(journal);
      JdbcProjection projection = LedgerBalances.projection(system, journal, group, topic)
          .start(Duration.ofMillis(500));
      system.getWhenTerminated().thenRun(projection::close);
    }
  }

  /** The actor system the pipeline runs in (local: the cluster membership runs in {@link #membership()}'s). */
  public ActorSystem<Void> system() {
    return system;
  }

  /** The node's cluster membership, started again whenever the cluster downs the node. */
  public ClusterMembership membership() {
    return membership;
  }

  public Pipeline pipeline() {
    return pipeline;
  }

  /** Stops the node: the pipeline drains (a coordinated-shutdown task), and the membership leaves the cluster. */
  @Override
  public void close() {
    system.terminate();
    try {
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException("ledger node did not stop within 60 s", e);
    }
  }

  /** The {@code fencepost ledger} arguments of a node on 127.0.0.1:{@code port} (for multi-process runs). */
  public static List<String> commandLine(String bootstrap, String topic, String group, JournalDatabase journal,
      int port, List<String> seeds) {
    return commandLine(bootstrap, topic, group, List.of(journal), port, seeds);
  }

  /**
   * The arguments of a node on several journal databases (one {@code --jdbc-url} each, in order; they
   * share the first one's user and password).
   */
  public static List<String> commandLine(String bootstrap, String topic, String group, List<JournalDatabase> journals,
      int port, List<String> seeds) {
    List<String> args = new ArrayList<>(List.of("ledger", "--bootstrap", bootstrap, "--topic", topic,
        "--group", group));
    for (JournalDatabase journal : journals) {
      args.addAll(List.of("--jdbc-url", journal.jdbcUrl()));
    }
    args.addAll(List.of("--jdbc-user", journals.get(0).user(), "--jdbc-password", journals.get(0).password(),
        "--port", Integer.toString(port), "--seeds", String.join(",", seeds)));
    return List.copyOf(args);
  }
}
