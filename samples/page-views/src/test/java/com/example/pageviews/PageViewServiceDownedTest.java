package com.example.pageviews;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.ServerSocket;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import com.typesafe.config.ConfigFactory;
import io.fencepost.kafka.ClusterMembership;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Down;
import org.junit.jupiter.api.Test;

/**
 * With the cluster provider, a node the cluster downs goes on consuming: only its membership ends. This
 * node is its only seed, so its membership does not start again (joining itself would form a second
 * cluster): it stays a non-member and says why. With other seeds listed, a new membership joins them.
 */
class PageViewServiceDownedTest {

  @Test
  void aDownedNodeKeepsItsPipelineSystem() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    ActorSystem<Void> system = PageViewService.start(ConfigFactory.parseString(
        "pekko.actor.provider = cluster\npekko.remote.artery.canonical.port = " + port + "\n"
            + "pekko.cluster.seed-nodes = [\"pekko://page-views@127.0.0.1:" + port + "\"]\n"
            + "pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off\n")
        .withFallback(ConfigFactory.load()));
    try {
      ClusterMembership membership = ClusterMembership.of(system).orElseThrow();
      await(membership::isMember);
      ActorSystem<Void> first = membership.system().orElseThrow();
      Cluster.get(first).manager().tell(Down.apply(Cluster.get(first).selfMember().address()));
      first.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
      await(() -> membership.notMemberReason().orElse("").contains("it does not join again: this node is its only "
          + "seed node"));
      assertEquals(1, membership.starts(), "no membership of its own only");
      assertFalse(system.getWhenTerminated().toCompletableFuture().isDone(), "the pipeline's system runs on");
      assertEquals("pekko://page-views@127.0.0.1:" + port, membership.node());
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
  }

  private static void await(BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (!condition.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "not within 60 s");
      Thread.sleep(50);
    }
  }
}
