package io.fencepost.kafka;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import io.fencepost.PartitionId;
import io.fencepost.kafka.internal.QueryRequest;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;

/**
 * Which nodes' keepers serve which partition, as the receptionist lists them (Pekko's cluster
 * receptionist on a cluster, its local one otherwise): each partition's {@link PartitionViews}
 * registers under its partition's key when the partition is admitted and deregisters when told to stop. A partition is looked up
 * on its first query and followed from then on, so later queries need no lookup. Listings hold
 * unreachable nodes' owners too, until the cluster removes the node.
 */
final class PartitionDirectory {

  /** The owners of a partition, and since when it has none ({@code null} while it has some). */
  private record Entry(Set<ActorRef<QueryRequest>> owners, Instant noneSince) {
  }

  private enum Close { INSTANCE }

  private record Follow(PartitionId id) {
  }

  private record Listed(PartitionId id, Set<ActorRef<QueryRequest>> owners) {
  }

  private static final AtomicLong DIRECTORIES = new AtomicLong();

  private final Map<PartitionId, CompletableFuture<Void>> followed = new ConcurrentHashMap<>();
  private final Map<PartitionId, Entry> entries = new ConcurrentHashMap<>();
  private final Runnable stopFollowing;
  private volatile ActorRef<Object> follower;
  private volatile boolean closed;

  PartitionDirectory(Membership membership, String pipeline) {
    String name = "fencepost-query-directory-" + URLEncoder.encode(pipeline, StandardCharsets.UTF_8) + "-"
        + DIRECTORIES.incrementAndGet();
    // A follower in each of the membership's actor systems: one restarted after the node was downed
    // lists afresh (the old listings name actors of a cluster this node left).
    this.stopFollowing = membership.onEachSystem(system -> {
      entries.clear();
      ActorRef<Object> before = follower;
      ActorRef<Object> started = system.systemActorOf(follower(), name,
          DispatcherSelector.fromConfig(QueryRouter.DISPATCHER));
      follower = started;
      if (before != null) {
        before.tell(Close.INSTANCE);   // of a system that stopped, or stopping: a no-op there
      }
      if (closed) {
        started.tell(Close.INSTANCE);   // the pipeline stopped while this system was set up
      }
    });
  }

  /** The receptionist key a partition's keeper registers under. */
  static ServiceKey<QueryRequest> key(PartitionId id) {
    return ServiceKey.create(QueryRequest.class, "fencepost-partition|" + id.group() + "|" + id.topic() + "|"
        + id.partition());
  }

  /** The keepers serving the partition now (after its first listing arrived). */
  CompletionStage<Set<ActorRef<QueryRequest>>> owners(PartitionId id) {
    CompletableFuture<Void> first = followed.computeIfAbsent(id, p -> new CompletableFuture<>());
    ActorRef<Object> f = follower;
    if (!first.isDone() && f != null) {
      // After the future is in the map: its first listing completes it. Told again while none came (a
      // follower that started meanwhile subscribed already: the follower subscribes once).
      f.tell(new Follow(id));
    }
    return first.thenApply(v -> {
      Entry e = entries.get(id);
      return e == null ? Set.<ActorRef<QueryRequest>>of() : e.owners();
    });
  }

  /** Since when the partition has no listed owner; empty when it has some or was never looked up. */
  Optional<Instant> noOwnerSince(PartitionId id) {
    Entry e = entries.get(id);
    return Optional.ofNullable(e == null ? null : e.noneSince());
  }

  /** Stops following. */
  void close() {
    closed = true;
    stopFollowing.run();
    ActorRef<Object> f = follower;
    if (f != null) {
      f.tell(Close.INSTANCE);
    }
  }

  /**
   * Subscribes to each followed partition's key, with one listing adapter for all of them (Pekko keeps
   * one adapter per message class: a second one would replace the first). Restarted after a failure,
   * it subscribes again to every partition followed so far.
   */
  private Behavior<Object> follower() {
    return Behaviors.supervise(Behaviors.setup(ctx -> {
      Map<ServiceKey<QueryRequest>, PartitionId> byKey = new HashMap<>();
      ActorRef<Receptionist.Listing> listings = ctx.messageAdapter(Receptionist.Listing.class, l -> {
        @SuppressWarnings("unchecked")
        ServiceKey<QueryRequest> key = (ServiceKey<QueryRequest>) l.getKey();
        // Unreachable nodes' owners too: a node the failure detector doubts under load still answers, and
        // a dead one costs one attempt's timeout while its successor, listed as well, answers.
        return new Listed(byKey.get(key), l.getAllServiceInstances(key));
      });
      for (PartitionId id : followed.keySet()) {
        byKey.put(key(id), id);
        ctx.getSystem().receptionist().tell(Receptionist.subscribe(key(id), listings));
      }
      return Behaviors.receive(Object.class)
          .onMessage(Follow.class, f -> {
            if (byKey.putIfAbsent(key(f.id()), f.id()) == null) {
              ctx.getSystem().receptionist().tell(Receptionist.subscribe(key(f.id()), listings));
            }
            return Behaviors.same();
          })
          .onMessage(Listed.class, l -> {
            if (l.id() == null) {
              return Behaviors.same();
            }
            Entry before = entries.get(l.id());
            Instant noneSince = !l.owners().isEmpty() ? null
                : before != null && before.noneSince() != null ? before.noneSince() : Instant.now();
            entries.put(l.id(), new Entry(Set.copyOf(l.owners()), noneSince));
            followed.computeIfAbsent(l.id(), p -> new CompletableFuture<>()).complete(null);
            return Behaviors.same();
          })
          .onMessageEquals(Close.INSTANCE, Behaviors::stopped)
          .build();
    })).onFailure(SupervisorStrategy.restart());
  }
}
