package io.fencepost.kafka;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;

/**
 * A {@link ClusterMembership} system's side of the actors a node serves: for each served actor (in
 * the pipeline's actor system, which has no remoting) a forwarder in the membership's system,
 * registered with its receptionist under the served key. Other nodes' messages reach the forwarder
 * and are answered there when they can be at once, else told on to the served actor in the same JVM;
 * its replies go back through the membership's
 * remoting (the reply-to references belong to it). Told {@link #SYNC}, it makes its forwarders match
 * what is served now.
 */
final class MembershipGateway {

  /** Compare the forwarders with what is served now. */
  static final Object SYNC = Sync.INSTANCE;

  private enum Sync { INSTANCE }

  /**
   * One served actor under one key; a message {@code answersAtOnce} answers (true) does not go on to
   * it. Equal by key and target: served once.
   */
  record Served(ServiceKey<?> key, ActorRef<?> target, Predicate<Object> answersAtOnce) {

    @Override
    public boolean equals(Object o) {
      return o instanceof Served s && key.equals(s.key) && target.equals(s.target);
    }

    @Override
    public int hashCode() {
      return 31 * key.hashCode() + target.hashCode();
    }
  }

  private MembershipGateway() {
  }

  static Behavior<Object> create(Set<Served> served) {
    return Behaviors.setup(ctx -> {
      Map<Served, ActorRef<Object>> forwarders = new HashMap<>();
      Runnable sync = () -> {
        Set<Served> wanted = Set.copyOf(served);
        for (Served s : new HashSet<>(forwarders.keySet())) {
          if (!wanted.contains(s)) {
            ActorRef<Object> forwarder = forwarders.remove(s);
            ctx.getSystem().receptionist().tell(Receptionist.deregister(key(s), forwarder));
            ctx.stop(forwarder);
          }
        }
        for (Served s : wanted) {
          if (!forwarders.containsKey(s)) {
            // On the query dispatcher: a slow onQuery answered here delays no cluster work.
            ActorRef<Object> forwarder = ctx.spawnAnonymous(forwarder(target(s), s.answersAtOnce()),
                DispatcherSelector.fromConfig(QueryRouter.DISPATCHER));
            forwarders.put(s, forwarder);
            ctx.getSystem().receptionist().tell(Receptionist.register(key(s), forwarder));
          }
        }
      };
      sync.run();
      return Behaviors.receive(Object.class)
          .onMessageEquals(SYNC, () -> {
            sync.run();
            return Behaviors.same();
          })
          .build();
    });
  }

  private static Behavior<Object> forwarder(ActorRef<Object> target, Predicate<Object> answersAtOnce) {
    return Behaviors.receive(Object.class).onAnyMessage(m -> {
      boolean answered;
      try {
        answered = answersAtOnce.test(m);
      } catch (RuntimeException e) {
        answered = false;   // the served actor answers it (or says why it cannot)
      }
      if (!answered) {
        target.tell(m);
      }
      return Behaviors.same();
    }).build();
  }

  @SuppressWarnings("unchecked")
  private static ServiceKey<Object> key(Served s) {
    return (ServiceKey<Object>) s.key();
  }

  @SuppressWarnings("unchecked")
  private static ActorRef<Object> target(Served s) {
    return (ActorRef<Object>) s.target();
  }
}
