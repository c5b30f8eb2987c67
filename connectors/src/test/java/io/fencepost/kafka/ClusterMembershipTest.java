package io.fencepost.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.PartitionId;
import io.fencepost.errors.PartitionMovingException;
import io.fencepost.kafka.QueryRouterTest.Ask;
import io.fencepost.kafka.QueryRouterTest.Node;
import io.fencepost.kafka.internal.QueryRequest;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Down;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A one-node Pekko cluster whose membership runs beside a local pipeline system: the node's
 * partitions are served through the membership's receptionist; the cluster downs the node, and its
 * partitions still answer, locally only and saying so, while a new membership starts and joins
 * (this node is its own seed); then they are served through the new one.
 */
class ClusterMembershipTest {

  private static final String TOPIC = "payments";

  private ActorSystem<Void> pipeline;
  private ActorSystem<Void> other;

  @AfterEach
  void stop() throws Exception {
    for (ActorSystem<Void> s : new ActorSystem[] {pipeline, other}) {
      if (s != null) {
        s.terminate();
        s.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
      }
    }
  }

  private static Config nodeConfig(int port) {
    return nodeConfig(port, "\"pekko://membership-test@127.0.0.1:" + port + "\"");
  }

  private static Config nodeConfig(int port, String seeds) {
    return ConfigFactory.parseString(String.join("\n",
        "pekko.actor.provider = cluster",
        "pekko.remote.artery.canonical.hostname = \"127.0.0.1\"",
        "pekko.remote.artery.canonical.port = " + port,
        "pekko.cluster.seed-nodes = [" + seeds + "]",
        "pekko.cluster.jmx.multi-mbeans-in-same-jvm = on",
        "pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off"))
        .withFallback(ConfigFactory.load());
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /**
   * Two nodes, each listing both as seeds; the first seed is downed: it answers its own partitions
   * locally, saying so, while a new membership joins the other seed (not itself: a downed first seed
   * that joined itself would form a second cluster), then serves them through that membership.
   */
  @Test
  void aDownedNodeAnswersLocallySayingSoThenServesItsPartitionsThroughItsNewMembership() throws Exception {
    int port = freePort();
    int otherPort = freePort();
    String seeds = "\"pekko://membership-test@127.0.0.1:" + port + "\", \"pekko://membership-test@127.0.0.1:"
        + otherPort + "\"";
    Config config = nodeConfig(port, seeds);
    pipeline = ActorSystem.create(Behaviors.empty(), "membership-test", ClusterMembership.pipelineConfig(config));
    ClusterMembership membership = ClusterMembership.start(pipeline, config);
    Config otherConfig = nodeConfig(otherPort, seeds);
    other = ActorSystem.create(Behaviors.empty(), "membership-test", ClusterMembership.pipelineConfig(otherConfig));
    ClusterMembership otherMembership = ClusterMembership.start(other, otherConfig);
    await(() -> membership.isMember() && otherMembership.isMember(), "both memberships join");
    Node node = new Node(pipeline, "m1");
    PartitionId owned = new PartitionId("m1", TOPIC, 0);
    node.own(owned);
    QueryRouter router = node.router(QueryRouterTest.settings("m1"));
    await(() -> served(membership, owned) == 1, "partition 0 served through the membership's receptionist");
    QueryResult<String> member = router.<String>query(QueryTarget.partition(TOPIC, 0), new Ask("a"),
        QueryOptions.defaults()).toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertEquals("a@10", member.reply());
    assertEquals(membership.node(), member.node(), "answered by this node, named by its cluster address");
    assertFalse(member.localOnly());

    ActorSystem<Void> first = membership.system().orElseThrow();
    Cluster.get(first).manager().tell(Down.apply(Cluster.get(first).selfMember().address()));
    first.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    await(() -> membership.notMemberReason().orElse("").contains("not a cluster member now (downed by the cluster"),
        "the membership knows it was downed");
    QueryResult<String> downed = router.<String>query(QueryTarget.partition(TOPIC, 0), new Ask("b"),
        QueryOptions.defaults()).toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertEquals("b@10", downed.reply(), "its own partition answers while it is not a member");
    assertTrue(downed.localOnly(), "and says so");
    ExecutionException e = assertThrows(ExecutionException.class, () -> router.<String>query(
        QueryTarget.partition(TOPIC, 1), new Ask("c"), QueryOptions.defaults().withTimeout(Duration.ofMillis(500)))
        .toCompletableFuture().get(10, TimeUnit.SECONDS));
    assertInstanceOf(PartitionMovingException.class, e.getCause());
    assertTrue(e.getCause().getMessage().contains("is not a cluster member now (downed by the cluster"),
        e.getCause().getMessage());

    await(() -> membership.starts() == 2 && membership.isMember(), "a new membership joins");
    assertEquals(2, otherMembership.members().size(), "one cluster of both nodes: " + otherMembership.members());
    await(() -> served(membership, owned) == 1, "partition 0 served through the new membership");
    assertFalse(router.<String>query(QueryTarget.partition(TOPIC, 0), new Ask("d"), QueryOptions.defaults())
        .toCompletableFuture().get(10, TimeUnit.SECONDS).localOnly());
    assertFalse(pipeline.getWhenTerminated().toCompletableFuture().isDone(), "the pipeline system runs on");
  }

  /**
   * A node whose only seed is itself: once downed it does not join itself again (a cluster of its own
   * the others would never merge with); it stays a non-member, answering its own partitions, and says why.
   */
  @Test
  void aDownedNodeWhoseOnlySeedIsItselfDoesNotFormASecondCluster() throws Exception {
    int port = freePort();
    Config config = nodeConfig(port);
    pipeline = ActorSystem.create(Behaviors.empty(), "membership-test", ClusterMembership.pipelineConfig(config));
    ClusterMembership membership = ClusterMembership.start(pipeline, config);
    ActorSystem<Void> first = membership.system().orElseThrow();
    await(membership::isMember, "the first membership forms the cluster");
    Cluster.get(first).manager().tell(Down.apply(Cluster.get(first).selfMember().address()));
    first.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    await(() -> membership.notMemberReason().orElse("").contains("it does not join again: this node is its only "
        + "seed node"), "the membership says it does not rejoin");
    assertEquals(1, membership.starts(), "no second membership");
    assertTrue(membership.system().isEmpty());
    assertFalse(membership.isMember());
  }

  @Test
  void aSeedIsThisNodeByAddressNotBySpelling() {
    org.apache.pekko.actor.Address self = new org.apache.pekko.actor.Address("pekko", "ledger", "127.0.0.1", 2551);
    assertTrue(ClusterMembership.isSelf("pekko://ledger@127.0.0.1:2551", self));
    assertFalse(ClusterMembership.isSelf("pekko://ledger@localhost:2551", self),
        "another name of the host is another address to Pekko");
    assertFalse(ClusterMembership.isSelf("pekko://ledger@127.0.0.1:2552", self));
    assertFalse(ClusterMembership.isSelf("pekko://other@127.0.0.1:2551", self));
    assertFalse(ClusterMembership.isSelf("not an address", self));
  }

  @Test
  void aPipelineSystemOnTheClusterProviderIsRefusedNamingTheFix() throws Exception {
    Config config = nodeConfig(freePort());
    pipeline = ActorSystem.create(Behaviors.empty(), "membership-test", config);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ClusterMembership.start(pipeline, config));
    assertEquals("ClusterMembership: the pipeline system [membership-test] uses pekko.actor.provider = cluster: "
        + "create it with ClusterMembership.pipelineConfig(config)", e.getMessage());
  }

  /** How many actors the membership's receptionist lists for the partition (0 while it restarts). */
  private static int served(ClusterMembership membership, PartitionId id) {
    ActorSystem<Void> s = membership.system().orElse(null);
    if (s == null) {
      return 0;
    }
    try {
      Set<ActorRef<QueryRequest>> listed = AskPattern.<Receptionist.Command, Receptionist.Listing>ask(s.receptionist(),
          r -> Receptionist.find(PartitionDirectory.key(id), r), Duration.ofSeconds(3), s.scheduler())
          .toCompletableFuture().get(5, TimeUnit.SECONDS).getServiceInstances(PartitionDirectory.key(id));
      return listed.size();
    } catch (Exception e) {
      return 0;
    }
  }

  private static void await(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, what + ": not within 60 s");
      Thread.sleep(50);
    }
  }
}
