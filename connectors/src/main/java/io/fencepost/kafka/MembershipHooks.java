package io.fencepost.kafka;

import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Predicate;

import io.fencepost.kafka.internal.NodeNames;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a {@link ClusterMembership} keeps across its actor systems, and what the node's pipelines see
 * of it ({@link Membership}): the actors served (each system's {@link MembershipGateway} serves them
 * all), the pipelines' setups (run once on each system) and the member-up listeners (run once per
 * system that became a member).
 */
final class MembershipHooks implements Membership {

  private static final Logger log = LoggerFactory.getLogger(MembershipHooks.class);

  private final ClusterMembership owner;
  private final Set<MembershipGateway.Served> served = ConcurrentHashMap.newKeySet();
  private final List<Setup> setups = new CopyOnWriteArrayList<>();
  private final List<MemberUpListener> memberUp = new CopyOnWriteArrayList<>();
  private volatile ActorSystem<Void> current;
  private volatile ActorRef<Object> gateway;
  /** The last start whose membership became a member. */
  private volatile int upStart;

  MembershipHooks(ClusterMembership owner) {
    this.owner = owner;
  }

  /** Makes these the membership of the node whose pipelines run on {@code pipelineSystem}, named {@code node}. */
  void install(ActorSystem<?> pipelineSystem, String node) {
    NodeNames.set(pipelineSystem, node);
    Membership.install(pipelineSystem, this);
  }

  ClusterMembership owner() {
    return owner;
  }

  ActorSystem<Void> current() {
    return current;
  }

  /** Takes a started system as the current one: serves every served actor through it and sets it up. */
  void adopt(ActorSystem<Void> s) {
    current = s;
    ActorRef<Object> g = s.systemActorOf(MembershipGateway.create(served), "fencepost-membership-gateway", Props.empty());
    gateway = g;
    g.tell(MembershipGateway.SYNC);   // whatever was served while the gateway started
    for (Setup setup : setups) {
      setup.runOn(s);
    }
  }

  /** The system terminated. */
  void lost(ActorSystem<Void> s) {
    if (current == s) {
      current = null;
      gateway = null;
    }
  }

  /** Start {@code start}'s membership became a member. */
  void memberUp(int start) {
    upStart = start;
    memberUp.forEach(listener -> listener.runFor(start));
  }

  /** The last start whose membership became a member (0: none yet). */
  int lastUp() {
    return upStart;
  }

  /** See {@link ClusterMembership#onEachMemberUp}. */
  void onEachMemberUp(Runnable listener, int currentStart) {
    MemberUpListener each = new MemberUpListener(listener);
    memberUp.add(each);
    int up = upStart;
    if (up > 0 && up == currentStart && owner.isMember()) {
      each.runFor(up);
    }
  }

  @Override
  public Optional<ActorSystem<?>> cluster() {
    return Optional.ofNullable(current);
  }

  @Override
  public Optional<String> localOnly() {
    return owner.notMemberReason();
  }

  @Override
  public Runnable onEachSystem(Consumer<ActorSystem<?>> setup) {
    Setup each = new Setup(setup);
    setups.add(each);
    ActorSystem<Void> s = current;
    if (s != null) {
      each.runOn(s);
    }
    return () -> setups.remove(each);
  }

  @Override
  public <T> void serve(ServiceKey<T> key, ActorRef<T> target, Predicate<Object> answersAtOnce) {
    served.add(new MembershipGateway.Served(key, target, answersAtOnce));
    sync();
  }

  @Override
  public <T> void unserve(ServiceKey<T> key, ActorRef<T> target) {
    served.removeIf(s -> s.key().equals(key) && s.target().equals(target));
    sync();
  }

  private void sync() {
    ActorRef<Object> g = gateway;
    if (g != null) {
      g.tell(MembershipGateway.SYNC);
    }
  }

  /** A pipeline's setup of each membership system, run once on each. */
  private static final class Setup {
    private final Consumer<ActorSystem<?>> setup;
    private final AtomicReference<ActorSystem<?>> last = new AtomicReference<>();

    Setup(Consumer<ActorSystem<?>> setup) {
      this.setup = setup;
    }

    void runOn(ActorSystem<?> s) {
      if (last.getAndSet(s) == s) {
        return;
      }
      try {
        setup.accept(s);
      } catch (RuntimeException e) {
        log.error("cluster membership: setting up {} failed", s, e);
      }
    }
  }

  /** Runs once per membership start that became a member. */
  private static final class MemberUpListener {
    private final Runnable listener;
    private final AtomicInteger ranFor = new AtomicInteger();

    MemberUpListener(Runnable listener) {
      this.listener = listener;
    }

    void runFor(int start) {
      if (ranFor.getAndSet(start) == start) {
        return;
      }
      try {
        listener.run();
      } catch (RuntimeException e) {
        log.error("cluster membership: a member-up listener failed", e);
      }
    }
  }
}
