package io.fencepost.embedded;

import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;

/** Pekko Cluster configuration for nodes on loopback, and a helper to form a one-node cluster. */
public final class ClusterNodes {

  private ClusterNodes() {
  }

  /**
   * Cluster config for a node on 127.0.0.1:{@code port} (0 for a free port) with the given seed
   * nodes ({@code host:port}) and the split-brain resolver on (keep-majority). Fencepost's
   * partition actors run where Kafka assigns their partitions, so a fail-over does not wait for the
   * resolver: it only decides which nodes stay members.
   */
  public static Config node(String systemName, int port, List<String> seeds) {
    String seedList = seeds.stream().map(s -> "\"pekko://" + systemName + "@" + s + "\"")
        .collect(Collectors.joining(", "));
    return ConfigFactory.parseString(String.join("\n",
        "pekko.actor.provider = cluster",
        "pekko.remote.artery.canonical.hostname = \"127.0.0.1\"",
        "pekko.remote.artery.canonical.port = " + port,
        "pekko.cluster.seed-nodes = [" + seedList + "]",
        "pekko.cluster.downing-provider-class = \"org.apache.pekko.cluster.sbr.SplitBrainResolverProvider\"",
        "pekko.cluster.split-brain-resolver.active-strategy = keep-majority",
        "pekko.cluster.split-brain-resolver.stable-after = 5s",
        "pekko.cluster.jmx.multi-mbeans-in-same-jvm = on",
        "pekko.coordinated-shutdown.exit-jvm = off"));
  }

  /** Makes a node with no seed nodes join itself and waits until it is up. */
  public static void joinSelf(ActorSystem<?> system, Duration timeout) {
    Cluster cluster = Cluster.get(system);
    cluster.manager().tell(Join.create(cluster.selfMember().address()));
    long deadline = System.nanoTime() + timeout.toNanos();
    while (cluster.selfMember().status() != MemberStatus.up()) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("cluster node " + cluster.selfMember().address() + " not up within " + timeout);
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }
  }
}
