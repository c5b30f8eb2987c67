package io.fencepost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.embedded.ClusterNodes;
import io.fencepost.embedded.ClusterTls;
import io.fencepost.embedded.Directories;
import io.fencepost.embedded.FreePorts;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The cluster transport over mutual TLS: nodes holding the cluster's key form the cluster and reach
 * each other's actors; a node with a key of its own (a certificate the members do not trust) can
 * neither join nor deliver a message to a member's actor.
 */
@Tag("integration")
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class ClusterTlsIT {

  private static final String SYSTEM = "tls-cluster";
  private static final String PASSWORD = "tls-test-pw";

  @Test
  void onlyNodesWithTheClustersCertificateJoinOrDeliver() throws Exception {
    Path dir = Files.createTempDirectory("fencepost-tls-");
    Path cluster = ClusterTls.selfSignedKeyStore(dir, "cluster", PASSWORD);
    Path foreign = ClusterTls.selfSignedKeyStore(dir, "foreign", PASSWORD);
    int seedPort = FreePorts.next();
    List<String> seeds = List.of("127.0.0.1:" + seedPort);
    BlockingQueue<String> inbox = new LinkedBlockingQueue<>();
    ActorSystem<Void> a = ActorSystem.create(Behaviors.setup(ctx -> {
      ctx.spawn(Behaviors.<String>receiveMessage(m -> {
        inbox.add(m);
        return Behaviors.same();
      }), "inbox");
      return Behaviors.empty();
    }), SYSTEM, config(seedPort, seeds, ClusterTls.config(cluster, cluster, PASSWORD)));
    ActorSystem<Void> b = null;
    ActorSystem<Void> c = null;
    try {
      awaitUp(a, 1);
      b = node(FreePorts.next(), seeds, ClusterTls.config(cluster, cluster, PASSWORD));
      awaitUp(a, 2);
      send(b, seedPort, "from a member");
      assertEquals("from a member", inbox.poll(30, TimeUnit.SECONDS), "a node with the cluster's key reaches it");

      // The stranger trusts the cluster's certificate; the cluster does not trust the stranger's.
      c = node(FreePorts.next(), seeds, ClusterTls.config(foreign, cluster, PASSWORD));
      send(c, seedPort, "from a stranger");
      long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
      while (System.nanoTime() < deadline) {
        assertNull(inbox.poll(200, TimeUnit.MILLISECONDS), "a stranger's message was delivered");
        assertEquals(2, Cluster.get(a).state().members().size(), "the stranger became a member");
      }
      assertNotEquals(MemberStatus.up(), Cluster.get(c).selfMember().status(), "the stranger is not up");
    } finally {
      for (ActorSystem<Void> s : new ActorSystem[] {c, b, a}) {
        if (s != null) {
          s.terminate();
          try {
            s.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
          } catch (TimeoutException e) {
            System.err.println("actor system " + s.address() + " did not stop within 30 s");   // not the finding
          }
        }
      }
      Directories.deleteRecursively(dir);
    }
  }

  private static Config config(int port, List<String> seeds, Config tls) {
    return tls.withFallback(ClusterNodes.node(SYSTEM, port, seeds)).withFallback(ConfigFactory.load());
  }

  private static ActorSystem<Void> node(int port, List<String> seeds, Config tls) {
    return ActorSystem.create(Behaviors.empty(), SYSTEM, config(port, seeds, tls));
  }

  private static void send(ActorSystem<Void> from, int seedPort, String message) {
    from.classicSystem().actorSelection("pekko://" + SYSTEM + "@127.0.0.1:" + seedPort + "/user/inbox")
        .tell(message, ActorRef.noSender());
  }

  private static void awaitUp(ActorSystem<Void> seed, int members) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (System.nanoTime() < deadline) {
      long up = 0;
      for (var m : Cluster.get(seed).state().getMembers()) {
        if (m.status() == MemberStatus.up()) {
          up++;
        }
      }
      if (up == members) {
        return;
      }
      Thread.sleep(100);
    }
    throw new AssertionError("cluster did not reach " + members + " members up: " + Cluster.get(seed).state());
  }
}
