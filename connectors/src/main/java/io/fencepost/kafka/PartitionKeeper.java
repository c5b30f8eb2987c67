package io.fencepost.kafka;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiFunction;
import java.util.function.Consumer;

import io.fencepost.AppliedView;
import io.fencepost.PartitionCommand;
import io.fencepost.PartitionId;
import org.apache.pekko.Done;
import org.apache.pekko.actor.DeadLetterSuppression;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.Terminated;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The keeper of one admitted partition on this node: forwards commands to the partition's actor,
 * starting it (it recovers from the journal) whenever none runs; on {@link PartitionCommand.Stop}
 * stops it and then itself.
 *
 * <p>Its child {@link PartitionViews} answers the partition's queries from the states the actor
 * publishes; told to stop, the keeper has it deregister first.
 */
final class PartitionKeeper extends AbstractBehavior<Object> {

  private static final Logger log = LoggerFactory.getLogger(PartitionKeeper.class);

  /** The actor did not stop in time. Usually found by no one (the keeper stopped first): no dead-letter log line. */
  private enum ForceStop implements DeadLetterSuppression { INSTANCE }

  private final String pipeline;
  private final PartitionId id;
  private final BiFunction<PartitionId, Consumer<AppliedView>, Behavior<PartitionCommand>> behavior;
  private final Duration stopTimeout;
  private final CompletableFuture<Done> stopped;
  private final ActorRef<Object> views;
  private final LatestView latest;
  private ActorRef<PartitionCommand> child;
  private long incarnation;
  private boolean stopping;

  private PartitionKeeper(ActorContext<Object> ctx, String pipeline, PartitionId id,
      BiFunction<PartitionId, Consumer<AppliedView>, Behavior<PartitionCommand>> behavior, Duration stopTimeout,
      CompletableFuture<Done> stopped, CompletableFuture<PartitionViews.Local> viewsRef) {
    super(ctx);
    this.pipeline = pipeline;
    this.id = id;
    this.behavior = behavior;
    this.stopTimeout = stopTimeout;
    this.stopped = stopped;
    this.latest = PartitionViews.latestView(ctx.getSystem(), pipeline, id);
    this.views = ctx.spawn(PartitionViews.create(id, latest), "views",
        DispatcherSelector.fromConfig(QueryRouter.DISPATCHER));
    viewsRef.complete(new PartitionViews.Local(views.narrow(), latest));
  }

  /**
   * @param stopped completed when the keeper stopped (its actor stopped before it)
   * @param viewsRef completed with the partition's query actor once the keeper started
   */
  static Behavior<Object> create(String pipeline, PartitionId id,
      BiFunction<PartitionId, Consumer<AppliedView>, Behavior<PartitionCommand>> behavior, Duration stopTimeout,
      CompletableFuture<Done> stopped, CompletableFuture<PartitionViews.Local> viewsRef) {
    return Behaviors.setup(ctx -> new PartitionKeeper(ctx, pipeline, id, behavior, stopTimeout, stopped, viewsRef));
  }

  @Override
  public Receive<Object> createReceive() {
    return newReceiveBuilder()
        .onMessage(PartitionCommand.Stop.class, this::onStop)
        .onMessageEquals(ForceStop.INSTANCE, this::onForceStop)
        .onMessage(PartitionCommand.class, command -> {
          running().tell(command);
          return this;
        })
        .onSignal(Terminated.class, t -> {
          if (!t.getRef().equals(child)) {
            return this;
          }
          child = null;
          return stopping ? Behaviors.stopped() : this;
        })
        .onSignal(PostStop.class, s -> {
          latest.leave();
          stopped.complete(Done.getInstance());
          return this;
        })
        .build();
  }

  private Behavior<Object> onStop(PartitionCommand.Stop stop) {
    stopping = true;
    latest.leave();   // at once: Leave may be dropped if this keeper stops before its child read it
    views.tell(PartitionViews.Leave.INSTANCE);
    if (child == null) {
      return Behaviors.stopped();
    }
    child.tell(stop);
    getContext().scheduleOnce(stopTimeout, getContext().getSelf(), ForceStop.INSTANCE);
    return this;
  }

  private Behavior<Object> onForceStop() {
    if (child != null) {
      log.warn("[{}] [{}] actor did not stop within {} (a write in flight, or recovering); stopping it at once (the "
          + "journal's fence refuses a write it still had in flight if another incarnation wrote first)", pipeline,
          id.shortName(), stopTimeout);
      getContext().stop(child);
    }
    return this;
  }

  /** The partition's actor, started (it recovers from the journal) when none runs. */
  private ActorRef<PartitionCommand> running() {
    if (child == null) {
      long n = ++incarnation;
      child = getContext().spawn(behavior.apply(id, v -> views.tell(new PartitionViews.Published(n, v))),
          "incarnation-" + n);
      getContext().watch(child);
    }
    return child;
  }
}
