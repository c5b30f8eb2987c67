package io.fencepost.internal;

import java.util.Objects;

import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;

/**
 * The name a node's partitions report as their owner ({@code pekko://system@host:port}). By default
 * the actor system's own address; a node whose cluster membership runs in an actor system of its own
 * (the connectors module's {@code ClusterMembership}) names its partitions by that system's address, which
 * stays the same while the membership restarts.
 */
public final class NodeName implements Extension {

  private static final ExtensionId<NodeName> ID = new ExtensionId<>() {
    @Override
    public NodeName createExtension(ActorSystem<?> system) {
      return new NodeName(system.address().toString());
    }
  };

  private volatile String value;

  private NodeName(String value) {
    this.value = value;
  }

  public static NodeName get(ActorSystem<?> system) {
    return ID.apply(system);
  }

  public String value() {
    return value;
  }

  /** Names the node (before its pipelines start). */
  public void set(String name) {
    this.value = Objects.requireNonNull(name, "name");
  }
}
