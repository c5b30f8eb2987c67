package io.fencepost.kafka;

import java.net.URLEncoder;
import java.time.Duration;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.Optional;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.Function;

import io.fencepost.AppliedView;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionCommand;
import io.fencepost.PartitionContext;
import io.fencepost.PartitionId;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Props;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the partition actors of the partitions Kafka assigned to this node, on this node: Kafka's
 * group coordinator is the only placement authority, so placement can never disagree with the
 * assignment, and a fail-over waits for nothing but the consumer group. Two incarnations of one
 * partition on two nodes (a paused owner that comes back) are kept apart by the journal's fence;
 * on one node a partition has at most one incarnation at a time: a new one
 * starts only after the previous one stopped.
 *
 * <p>Each admitted partition gets a small keeper actor ({@link PartitionKeeper}) that forwards
 * commands to the partition's actor, starts it again (recovering from the journal) when it stopped on
 * its own, e.g. after the fence refused its write, and answers queries from its journaled state.
 */
final class PartitionHost implements OwnershipSeams.Actors {

  private static final Logger log = LoggerFactory.getLogger(PartitionHost.class);
  private static final AtomicLong KEEPERS = new AtomicLong();

  private final ActorSystem<?> system;
  private final String pipeline;
  private final BiFunction<PartitionId, Consumer<AppliedView>, Behavior<PartitionCommand>> behavior;
  private final Duration stopTimeout;
  // Guarded by this.
  private final Map<PartitionId, Keeper> keepers = new HashMap<>();

  PartitionHost(ActorSystem<?> system, PipelineSettings settings,
      Function<PartitionContext, ? extends PartitionActor<?, ?, ?>> factory) {
    this(system, settings.name(), (id, views) -> PartitionActor.behavior(id, settings.partitionActor(), factory, views),
        settings.askTimeout());
  }

  /**
   * @param stopTimeout how long a stopping actor may take (a write in flight ends within the ask
   *     timeout) before it is stopped at once; a write it still had in flight is then either
   *     committed before the next incarnation recovers or refused by the fence
   */
  PartitionHost(ActorSystem<?> system, String pipeline,
      BiFunction<PartitionId, Consumer<AppliedView>, Behavior<PartitionCommand>> behavior, Duration stopTimeout) {
    this.system = system;
    this.pipeline = pipeline;
    this.behavior = behavior;
    this.stopTimeout = stopTimeout;
  }

  private record Keeper(CompletionStage<ActorRef<Object>> ref, CompletableFuture<Done> stopped,
      CompletableFuture<PartitionViews.Local> views, boolean stopping) {
  }

  /**
   * Lets the partition's actor run here (the partition was assigned to this node). Starts its keeper
   * once the keeper of an earlier assignment has stopped.
   */
  @Override
  public synchronized void admit(PartitionId id) {
    Keeper current = keepers.get(id);
    if (current != null && !current.stopping() && !current.stopped().isDone()) {
      return;   // (a keeper that died on its own is replaced: asking it would time out forever)
    }
    CompletionStage<Done> previous = current == null ? CompletableFuture.completedFuture(Done.getInstance())
        : current.stopped();
    CompletableFuture<Done> stopped = new CompletableFuture<>();
    if (!previous.toCompletableFuture().isDone()) {
      log.info("[{}] [{}] assigned again while its previous actor stops; it starts once that one stopped", pipeline,
          id.shortName());
    }
    CompletableFuture<PartitionViews.Local> views = new CompletableFuture<>();
    CompletableFuture<ActorRef<Object>> ref = previous.toCompletableFuture().thenApply(d -> system
        .systemActorOf(PartitionKeeper.create(pipeline, id, behavior, stopTimeout, stopped, views), keeperName(id),
            Props.empty()));
    ref.whenComplete((r, e) -> {
      if (e != null) {
        log.error("[{}] [{}] could not start the keeper of its actor: {}", pipeline, id.shortName(), e.toString(), e);
        stopped.complete(Done.getInstance());
      }
    });
    keepers.put(id, new Keeper(ref, stopped, views, false));
  }

  /**
   * The partition's actor on this node (through its keeper). Fails for a partition not admitted:
   * nothing may start an actor of a partition this node does not own.
   */
  synchronized CompletionStage<ActorRef<PartitionCommand>> actor(PartitionId id) {
    Keeper k = keepers.get(id);
    if (k == null || k.stopping()) {
      return CompletableFuture.failedFuture(new IllegalStateException(
          "[" + pipeline + "] partition " + id.shortName() + " is not assigned to this node"));
    }
    CompletableFuture<ActorRef<PartitionCommand>> ref = k.ref().toCompletableFuture().thenApply(ActorRef::narrow);
    // Pending only while a previous incarnation stops, which is forced after stopTimeout.
    return ref.isDone() ? ref : ref.orTimeout(2 * stopTimeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** The partition's query actor and newest state when the partition runs here (admitted, started, not stopping). */
  synchronized Optional<PartitionViews.Local> localViews(PartitionId id) {
    Keeper k = keepers.get(id);
    if (k == null || k.stopping() || k.stopped().isDone() || !k.views().isDone()) {
      return Optional.empty();
    }
    return Optional.of(k.views().join());
  }

  /** Stops the partition's actor (after the commands it already holds); completes when it stopped. */
  @Override
  public synchronized CompletionStage<Done> stop(PartitionId id) {
    Keeper k = keepers.get(id);
    if (k == null) {
      return CompletableFuture.completedFuture(Done.getInstance());
    }
    if (!k.stopping()) {
      keepers.put(id, new Keeper(k.ref(), k.stopped(), k.views(), true));
      k.views().thenAccept(views -> views.latest().leave());   // other nodes' queries too, from now on
      k.ref().thenAccept(ref -> ref.tell(new PartitionCommand.Stop()));
      k.stopped().thenRun(() -> forget(id, k.stopped()));
    }
    return k.stopped();
  }

  private synchronized void forget(PartitionId id, CompletableFuture<Done> stopped) {
    Keeper k = keepers.get(id);
    if (k != null && k.stopped() == stopped) {
      keepers.remove(id);
    }
  }

  private String keeperName(PartitionId id) {
    return "fencepost-" + URLEncoder.encode(pipeline + "-" + id.qualifiedName(), StandardCharsets.UTF_8)
        + "-" + KEEPERS.incrementAndGet();
  }
}
