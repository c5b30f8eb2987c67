package io.fencepost.kafka;

import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Predicate;

import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;

/**
 * Where a node's cluster work happens: the actors it serves to other nodes (its partitions' query
 * actors, its status responder) are registered with a receptionist, and other nodes' are looked up,
 * through {@link #cluster()}. Without a {@link ClusterMembership}, that is the pipeline's own actor
 * system (clustered or local) for its whole life; with one, it is the membership's current actor
 * system, and none while the membership restarts.
 */
interface Membership {

  /** The membership of the node whose pipelines run on {@code pipelineSystem}. */
  static Membership of(ActorSystem<?> pipelineSystem) {
    return Holder.ID.apply(pipelineSystem).membership;
  }

  /** Makes {@code membership} the node's (before its pipelines start). */
  static void install(ActorSystem<?> pipelineSystem, Membership membership) {
    Holder.ID.apply(pipelineSystem).membership = membership;
  }

  /** The actor system to reach the cluster through now; empty while there is none (restarting). */
  Optional<ActorSystem<?>> cluster();

  /**
   * Why only this node's own partitions can answer now ("this node is not a cluster member ..."), or
   * empty while it is a member (always empty without a {@link ClusterMembership}).
   */
  Optional<String> localOnly();

  /**
   * Runs {@code setup} on the current cluster system, if any, and on every later one once it
   * started; the returned handle stops that.
   */
  Runnable onEachSystem(Consumer<ActorSystem<?>> setup);

  /** Registers {@code target} under {@code key} with the cluster's receptionist, now and after every restart. */
  default <T> void serve(ServiceKey<T> key, ActorRef<T> target) {
    serve(key, target, message -> false);
  }

  /**
   * Like {@link #serve(ServiceKey, ActorRef)}; a message from another node that {@code answersAtOnce}
   * answers (true) does not go on to {@code target}. It runs on the thread the message arrives on:
   * short, never blocking.
   */
  <T> void serve(ServiceKey<T> key, ActorRef<T> target, Predicate<Object> answersAtOnce);

  /** Undoes {@link #serve}. */
  <T> void unserve(ServiceKey<T> key, ActorRef<T> target);

  /** The pipeline's own actor system does the cluster work, for its whole life. */
  final class SameSystem implements Membership {

    private final ActorSystem<?> system;

    SameSystem(ActorSystem<?> system) {
      this.system = system;
    }

    @Override
    public Optional<ActorSystem<?>> cluster() {
      return Optional.of(system);
    }

    @Override
    public Optional<String> localOnly() {
      return Optional.empty();
    }

    @Override
    public Runnable onEachSystem(Consumer<ActorSystem<?>> setup) {
      setup.accept(system);
      return () -> { };
    }

    @Override
    public <T> void serve(ServiceKey<T> key, ActorRef<T> target, Predicate<Object> answersAtOnce) {
      // Other nodes' messages reach target itself: no hop to save.
      system.receptionist().tell(Receptionist.register(key, target));
    }

    @Override
    public <T> void unserve(ServiceKey<T> key, ActorRef<T> target) {
      system.receptionist().tell(Receptionist.deregister(key, target));
    }
  }

  /** The membership installed on a pipeline system. */
  final class Holder implements Extension {

    static final ExtensionId<Holder> ID = new ExtensionId<>() {
      @Override
      public Holder createExtension(ActorSystem<?> system) {
        return new Holder(new SameSystem(system));
      }
    };

    volatile Membership membership;

    private Holder(Membership membership) {
      this.membership = membership;
    }
  }
}
