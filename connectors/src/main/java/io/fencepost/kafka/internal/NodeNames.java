package io.fencepost.kafka.internal;

import io.fencepost.internal.NodeName;
import org.apache.pekko.actor.typed.ActorSystem;

/** The connectors module's access to the node name its partitions report (core's {@link NodeName}). */
public final class NodeNames {

  private NodeNames() {
  }

  /** The name of the node whose pipelines run on {@code system}. */
  public static String of(ActorSystem<?> system) {
    return NodeName.get(system).value();
  }

  /** Names the node whose pipelines run on {@code system} (before they start). */
  public static void set(ActorSystem<?> system, String name) {
    NodeName.get(system).set(name);
  }
}
