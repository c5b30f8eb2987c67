package com.example.pageviews;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import com.typesafe.config.ConfigFactory;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.Cluster;
import org.junit.jupiter.api.Test;

/** With the cluster provider, a node the cluster downs ends with the status a supervisor restarts on. */
class PageViewServiceDownedTest {

  @Test
  void aDownedNodeEndsWithStatus3AndAStoppedOneWith0() throws Exception {
    for (boolean downed : new boolean[] {true, false}) {
      ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "page-views", ConfigFactory.parseString(
          "pekko.actor.provider = cluster\npekko.remote.artery.canonical.port = 0\n"
              + "pekko.cluster.seed-nodes = []\npekko.coordinated-shutdown.exit-jvm = off\n")
          .withFallback(ConfigFactory.load()));
      Cluster cluster = Cluster.get(system.classicSystem());
      cluster.join(cluster.selfAddress());
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (cluster.selfMember().status() != org.apache.pekko.cluster.MemberStatus.up()
          && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
      if (downed) {
        cluster.down(cluster.selfAddress());
      } else {
        system.terminate();
      }
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
      assertEquals(downed ? PageViewService.DOWNED : 0, PageViewService.exitStatus(system));
    }
  }
}
