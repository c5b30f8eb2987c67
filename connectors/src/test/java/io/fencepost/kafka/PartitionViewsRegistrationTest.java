package io.fencepost.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import com.typesafe.config.ConfigFactory;
import io.fencepost.PartitionId;
import io.fencepost.kafka.internal.QueryRequest;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.junit.jupiter.api.Test;

/**
 * A partition's query actor withdraws its registration once, however it stops: on a pipeline that
 * runs in the cluster's own actor system, a second deregistration made the cluster receptionist fail
 * and stop, and the node's queries and lookups went unanswered from then on.
 */
class PartitionViewsRegistrationTest {

  @Test
  void thePartitionsOfAStoppedPartitionLeaveTheClusterReceptionistServing() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    ActorTestKit kit = ActorTestKit.create("views-registration", ConfigFactory.parseString(String.join("\n",
        "pekko.actor.provider = cluster",
        "pekko.remote.artery.canonical.hostname = \"127.0.0.1\"",
        "pekko.remote.artery.canonical.port = " + port,
        "pekko.cluster.jmx.multi-mbeans-in-same-jvm = on",
        "pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off")).withFallback(ConfigFactory.load()));
    try {
      Cluster cluster = Cluster.get(kit.system());
      cluster.manager().tell(Join.create(cluster.selfMember().address()));
      QueryRouterTest.Node node = new QueryRouterTest.Node(kit.system(), "reg");
      for (int round = 0; round < 3; round++) {
        PartitionId id = new PartitionId("reg", "payments", round);
        node.ownWithState(id);
        node.host.stop(id);   // leaves (deregisters), then stops (PostStop)
      }
      // The receptionist still answers: a lookup and a registration made after the stops.
      PartitionId last = new PartitionId("reg", "payments", 9);
      node.ownWithState(last);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      Set<ActorRef<QueryRequest>> found = Set.of();
      while (found.isEmpty() && System.nanoTime() < deadline) {
        Receptionist.Listing listing = AskPattern.<Receptionist.Command, Receptionist.Listing>ask(
            kit.system().receptionist(), replyTo -> Receptionist.find(PartitionDirectory.key(last), replyTo),
            Duration.ofSeconds(3), kit.system().scheduler()).toCompletableFuture().get(5, TimeUnit.SECONDS);
        found = listing.getServiceInstances(PartitionDirectory.key(last));
        Thread.sleep(found.isEmpty() ? 100 : 0);
      }
      assertEquals(1, found.size(), "the partition registered after the stops is listed");
    } finally {
      kit.shutdownTestKit();
    }
  }
}
