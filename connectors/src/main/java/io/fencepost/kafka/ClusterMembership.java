package io.fencepost.kafka;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigValueFactory;
import io.fencepost.FencepostMeters;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A node's Pekko Cluster membership in an actor system of its own, started again whenever the cluster
 * downs the node, while the node's pipelines go on consuming in theirs. Consuming needs no cluster
 * (Kafka assigns the partitions and the journal fences their writes); the cluster serves
 * {@link Pipeline#query queries} and {@link Pipeline#clusterStatus() the cluster view} across nodes.
 * A node whose pipelines ran in its clustered actor system stopped when the split-brain resolver
 * downed it; with a membership of its own, only the membership stops, and a new one joins the other
 * seed nodes (after 1 s, then with a backoff up to 30 s while it cannot start; never itself, which
 * would form a second cluster: a node that is its own only seed stays a non-member). Meanwhile queries
 * are answered by this node's own partitions only, and their results say so
 * ({@link QueryResult#localOnly()}).
 *
 * <pre>{@code
 * Config config = ...;   // pekko.actor.provider = cluster, seed nodes, the split-brain resolver
 * ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "ledger",
 *     ClusterMembership.pipelineConfig(config));
 * ClusterMembership.start(system, config);        // before the pipelines
 * KafkaPipeline.create(system, ...).start();
 * }</pre>
 *
 * <p>The membership stops for good when the pipeline system terminates or the JVM exits. Meters:
 * {@code fencepost.cluster.member} (1 while this node is an {@code Up} or {@code WeaklyUp} member) and
 * {@code fencepost.cluster.membership.starts} (tagged {@code outcome}: {@code started},
 * {@code failed}, {@code refused}). See docs/deployment.md, "What the cluster is for".
 */
public final class ClusterMembership {

  private static final Logger log = LoggerFactory.getLogger(ClusterMembership.class);

  private static final Duration FIRST_RESTART = Duration.ofSeconds(1);
  private static final Duration MAX_RESTART = Duration.ofSeconds(30);
  /** Failed starts in a row after which each further one is logged at ERROR. */
  private static final int FAILED_STARTS_BEFORE_ERROR = 5;
  /** A membership not a member this long after it started is reported at ERROR (once per start). */
  private static final Duration JOIN_DEADLINE = Duration.ofSeconds(60);

  private final ActorSystem<?> pipeline;
  private final String systemName;
  private final String node;
  private final AtomicInteger starts = new AtomicInteger();
  private final MembershipHooks hooks = new MembershipHooks(this);
  private final MeterRegistry meters;
  private volatile Config config;
  // The seed nodes but this node: those a restarted membership joins.
  private final List<String> otherSeeds;
  // This node is its own only seed node: a membership that ended does not start again.
  private final boolean onlySeed;
  private volatile boolean closed;
  /** Why the node is not a member now, since when. */
  private volatile String notMember = "joining the cluster";
  private volatile Instant notMemberSince = Instant.now();

  private ClusterMembership(ActorSystem<?> pipeline, Config config) {
    this.pipeline = pipeline;
    this.systemName = pipeline.name();
    this.config = config;
    this.meters = FencepostMeters.get(pipeline).registryForNewMeter();
    ActorSystem<Void> first = create();   // throws: a node whose membership cannot start does not start
    this.node = first.address().toString();
    // Started again on the same port, so the node keeps its address (a port of 0 picked one); and
    // without itself among the seed nodes: a seed that finds no other seed forms a cluster of its own,
    // and a node the others downed would form an island Pekko never merges (with itself as the only
    // seed, it does not start again at all). Until it reaches another seed it stays a non-member
    // (loudly). Seeds are compared as addresses, as Pekko compares them.
    List<String> seeds = config.getStringList("pekko.cluster.seed-nodes");
    this.otherSeeds = seeds.stream().filter(seed -> !isSelf(seed, first.address())).toList();
    this.onlySeed = !seeds.isEmpty() && otherSeeds.isEmpty();
    this.config = config.withValue("pekko.remote.artery.canonical.port",
        ConfigValueFactory.fromAnyRef(first.address().getPort().orElseThrow()))
        .withValue("pekko.cluster.seed-nodes", ConfigValueFactory.fromIterable(otherSeeds));
    Gauge.builder("fencepost.cluster.member", () -> isMember() ? 1 : 0)
        .description("1 while this node is an Up or WeaklyUp member of its Pekko cluster")
        .register(meters);
    adopt(first);
  }

  /**
   * The configuration of the pipelines' actor system, from the node's: the same, with the local
   * provider (no remoting) and without pekko-management-cluster-http's route and readiness check,
   * which need the cluster (its readiness would follow the membership, not the pipelines).
   */
  public static Config pipelineConfig(Config nodeConfig) {
    return nodeConfig
        .withValue("pekko.actor.provider", ConfigValueFactory.fromAnyRef("local"))
        .withValue("pekko.management.http.routes.cluster-management", ConfigValueFactory.fromAnyRef(""))
        .withValue("pekko.management.health-checks.readiness-checks.cluster-membership",
            ConfigValueFactory.fromAnyRef(""));
  }

  /**
   * Starts the membership of the node whose pipelines run on {@code pipelineSystem}, in an actor
   * system of the same name configured by {@code nodeConfig} (which joins its seed nodes). Blocks
   * until that system started (not until it joined).
   *
   * @throws IllegalArgumentException when {@code nodeConfig} does not use the cluster provider, or the
   *     pipeline system does ({@link #pipelineConfig})
   * @throws IllegalStateException when a pipeline already runs on {@code pipelineSystem}, or the
   *     membership's actor system could not start (its port taken)
   */
  public static ClusterMembership start(ActorSystem<?> pipelineSystem, Config nodeConfig) {
    if (!isProvider(nodeConfig.getString("pekko.actor.provider"), "cluster", "ClusterActorRefProvider")) {
      throw new IllegalArgumentException("ClusterMembership: pekko.actor.provider is ["
          + nodeConfig.getString("pekko.actor.provider") + "]: the node's configuration must use the cluster provider");
    }
    String provider = pipelineSystem.settings().config().getString("pekko.actor.provider");
    if (!isProvider(provider, "local", "LocalActorRefProvider")) {
      throw new IllegalArgumentException("ClusterMembership: the pipeline system [" + pipelineSystem.name()
          + "] uses pekko.actor.provider = " + provider + ": create it with ClusterMembership.pipelineConfig(config)");
    }
    if (of(pipelineSystem).isPresent()) {
      throw new IllegalStateException("ClusterMembership.start: [" + pipelineSystem.name() + "] has one already ("
          + of(pipelineSystem).get().node() + ")");
    }
    if (!RunningPipelines.get(pipelineSystem).all().isEmpty()) {
      throw new IllegalStateException("ClusterMembership.start came after a pipeline started on ["
          + pipelineSystem.name() + "]: start the membership first");
    }
    Config config = nodeConfig
        .withValue("pekko.coordinated-shutdown.exit-jvm", ConfigValueFactory.fromAnyRef("off"))
        .withValue("pekko.cluster.run-coordinated-shutdown-when-down", ConfigValueFactory.fromAnyRef("on"))
        .withValue("pekko.cluster.jmx.multi-mbeans-in-same-jvm", ConfigValueFactory.fromAnyRef("on"));
    ClusterMembership membership = new ClusterMembership(pipelineSystem, config);
    membership.hooks.install(pipelineSystem, membership.node);
    pipelineSystem.getWhenTerminated().thenRun(membership::close);
    return membership;
  }

  private static boolean isProvider(String configured, String name, String className) {
    return configured.equals(name) || configured.endsWith("." + className);
  }

  /** This node's address in the cluster ({@code pekko://system@host:port}), the same across restarts. */
  public String node() {
    return node;
  }

  /** The membership's actor system now; empty while it restarts. */
  public Optional<ActorSystem<Void>> system() {
    return Optional.ofNullable(hooks.current());
  }

  /** Whether this node is an {@code Up} or {@code WeaklyUp} member now. */
  public boolean isMember() {
    ActorSystem<Void> s = hooks.current();
    if (s == null) {
      return false;
    }
    MemberStatus status = Cluster.get(s).selfMember().status();
    return status == MemberStatus.up() || status == MemberStatus.weaklyUp();
  }

  /**
   * Runs {@code listener} each time this node becomes an {@code Up} member: once per start of its
   * membership (a listener added while the current one is up runs at once).
   */
  public void onEachMemberUp(Runnable listener) {
    hooks.onEachMemberUp(listener, starts.get());
  }

  /** The node's membership, when {@link #start} gave it one. */
  public static Optional<ClusterMembership> of(ActorSystem<?> pipelineSystem) {
    return Membership.of(pipelineSystem) instanceof MembershipHooks hooks ? Optional.of(hooks.owner())
        : Optional.empty();
  }

  /** Why this node is not a member now (downed, joining, since when), or empty while it is one. */
  public Optional<String> notMemberReason() {
    if (isMember()) {
      return Optional.empty();
    }
    long seconds = Duration.between(notMemberSince, Instant.now()).toSeconds();
    return Optional.of("this node (" + node + ") is not a cluster member now (" + notMember + ", " + seconds
        + " s ago): only its own partitions answer until it rejoins");
  }

  /**
   * The cluster's members as this node sees them now, by address: their status ({@code Up},
   * {@code Joining}, ...), followed by {@code " (unreachable)"} when this node's failure detector
   * doubts them. Empty while the membership restarts.
   */
  public SortedMap<String, String> members() {
    SortedMap<String, String> out = new TreeMap<>();
    ActorSystem<Void> s = hooks.current();
    if (s == null) {
      return out;
    }
    ClusterEvent.CurrentClusterState state = Cluster.get(s).state();
    Set<Member> unreachable = state.getUnreachable();
    for (Member m : state.getMembers()) {
      out.put(m.address().toString(), m.status().toString() + (unreachable.contains(m) ? " (unreachable)" : ""));
    }
    return out;
  }

  /** How many times the membership's actor system started (1 until the node was first downed). */
  public int starts() {
    return starts.get();
  }

  /** Stops the membership for good (it leaves the cluster). Also done when the pipeline system terminates. */
  public void close() {
    closed = true;
    ActorSystem<Void> s = hooks.current();
    if (s != null) {
      s.terminate();
    }
  }

  private ActorSystem<Void> create() {
    return ActorSystem.create(Behaviors.empty(), systemName, config);
  }

  /** Takes a started system as the current one: serves, sets up, and watches it. */
  private void adopt(ActorSystem<Void> s) {
    int n = starts.incrementAndGet();
    counter("started").increment();
    s.getWhenTerminated().thenRun(() -> onTerminated(s, n));   // first: whatever fails below, it restarts
    try {
      hooks.adopt(s);
      org.apache.pekko.cluster.Cluster.get(s.classicSystem()).registerOnMemberUp(() -> {
        log.info("cluster membership {} of {}: a member (was not since {}: {})", n, node, notMemberSince, notMember);
        hooks.memberUp(n);
      });
      s.scheduler().scheduleOnce(JOIN_DEADLINE, () -> {
        if (hooks.current() == s && hooks.lastUp() < n) {   // never a member (not: downed meanwhile)
          log.error("cluster membership {} of {}: not a member {} s after it started (seed nodes {}): queries "
              + "are answered by this node's own partitions only; check that a seed node runs and is reachable",
              n, node, JOIN_DEADLINE.toSeconds(), config.getStringList("pekko.cluster.seed-nodes"));
        }
      }, s.executionContext());
    } catch (RuntimeException e) {
      log.warn("cluster membership {} of {}: its actor system stopped while it was set up ({})", n, node, e.toString());
      s.terminate();
    }
    if (closed) {
      s.terminate();   // closed meanwhile (close() may have found no system to stop)
    }
  }

  private void onTerminated(ActorSystem<Void> s, int n) {
    hooks.lost(s);
    notMemberSince = Instant.now();
    Optional<CoordinatedShutdown.Reason> reason = CoordinatedShutdown.get(s).getShutdownReason();
    if (stopping() || reason.filter(CoordinatedShutdown.jvmExitReason()::equals).isPresent()) {
      return;
    }
    notMember = reason.filter(CoordinatedShutdown.clusterDowningReason()::equals).isPresent()
        ? "downed by the cluster (the split-brain resolver or an operator)"
        : reason.filter(CoordinatedShutdown.clusterJoinUnsuccessfulReason()::equals).isPresent()
            ? "it could not join the seed nodes"
            : "its actor system stopped (" + reason.map(Object::toString).orElse("terminated") + ")";
    if (onlySeed) {
      notMember = notMember + "; it does not join again: this node is its only seed node, and joining itself would "
          + "form a second cluster the others never merge with";
      log.error("cluster membership {} of {} ended: {}. This node keeps consuming its partitions; queries are answered "
          + "by its own partitions only. Restarting its process while other nodes run would also form a second "
          + "cluster: list other nodes in pekko.cluster.seed-nodes too (a downed node then rejoins through them), and "
          + "restart this node once the others are gone or restarted with that list", n, node, notMember);
      counter("refused").increment();
      return;
    }
    log.warn("cluster membership {} of {} ended: {}. This node keeps consuming its partitions; queries are answered "
        + "by its own partitions only until a new membership joins (starting in {} s)", n, node, notMember,
        FIRST_RESTART.toSeconds());
    restartAfter(FIRST_RESTART, 1);
  }

  private void restartAfter(Duration delay, int attempt) {
    try {
      pipeline.scheduler().scheduleOnce(delay, () -> restart(attempt),
          pipeline.dispatchers().lookup(DispatcherSelector.blocking()));
    } catch (IllegalStateException e) {
      // The pipeline system is shutting down: no membership after it.
    }
  }

  /** Closed, or the pipelines' system is shutting down (SIGTERM): no new membership. */
  private boolean stopping() {
    return closed || CoordinatedShutdown.get(pipeline).getShutdownReason().isPresent();
  }

  private void restart(int attempt) {
    if (stopping()) {
      return;
    }
    ActorSystem<Void> s;
    try {
      s = create();
    } catch (RuntimeException e) {
      counter("failed").increment();
      Duration next = backoff(attempt);
      String line = "cluster membership of " + node + " could not start again (attempt " + attempt + "): " + e
          + "; next attempt in " + next.toSeconds() + " s. This node keeps consuming; queries are answered locally";
      if (attempt >= FAILED_STARTS_BEFORE_ERROR) {
        log.error(line);
      } else {
        log.warn(line);
      }
      restartAfter(next, attempt + 1);
      return;
    }
    if (stopping()) {
      s.terminate();
      return;
    }
    adopt(s);
  }

  /**
   * Whether {@code seed} ({@code pekko://system@host:port}) is the address {@code self}, as Pekko compares
   * them: protocol, system, host and port equal once parsed. (A seed that names the node by another
   * host name is not the node to Pekko either: it never joins through it, and remoting drops messages
   * sent to it.) A seed that does not parse is not this node.
   */
  static boolean isSelf(String seed, org.apache.pekko.actor.Address self) {
    try {
      return org.apache.pekko.actor.AddressFromURIString.parse(seed).equals(self);
    } catch (Exception e) {   // (MalformedURLException, thrown without being declared)
      return false;
    }
  }

  static Duration backoff(int attempt) {
    long seconds = FIRST_RESTART.toSeconds() << Math.min(attempt, 5);
    return Duration.ofSeconds(Math.min(seconds, MAX_RESTART.toSeconds()));
  }

  private Counter counter(String outcome) {
    return Counter.builder("fencepost.cluster.membership.starts")
        .description("starts of this node's cluster membership actor system").tag("outcome", outcome)
        .register(meters);
  }
}
