package io.fencepost;

import java.util.Objects;

import org.apache.pekko.actor.typed.ActorSystem;
import org.slf4j.Logger;

/** What a {@link PartitionActor} is told about itself when it is created. */
public final class PartitionContext {

  private final PartitionId partition;
  private final PartitionActorSettings settings;
  private final ActorSystem<?> system;
  private final Logger log;

  /** Created by the framework (and by tests that unit-test a handler). */
  public PartitionContext(PartitionId partition, PartitionActorSettings settings, ActorSystem<?> system, Logger log) {
    this.partition = Objects.requireNonNull(partition, "partition");
    this.settings = Objects.requireNonNull(settings, "settings");
    this.system = Objects.requireNonNull(system, "system");
    this.log = Objects.requireNonNull(log, "log");
  }

  /** The partition this actor owns. */
  public PartitionId partition() {
    return partition;
  }

  /** This actor's settings. */
  public PartitionActorSettings settings() {
    return settings;
  }

  /** The actor system the actor runs in. */
  public ActorSystem<?> system() {
    return system;
  }

  /** The actor's logger. */
  public Logger log() {
    return log;
  }
}
