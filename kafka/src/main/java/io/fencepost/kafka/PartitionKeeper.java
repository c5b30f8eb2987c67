package io.fencepost.kafka;

import java.time.Duration;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiFunction;
import java.util.function.Consumer;

import io.fencepost.AppliedView;
import io.fencepost.PartitionCommand;
import io.fencepost.PartitionId;
import io.fencepost.kafka.internal.QueryReply;
import io.fencepost.kafka.internal.QueryRequest;
import org.apache.pekko.Done;
import org.apache.pekko.actor.DeadLetterSuppression;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.Terminated;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The keeper of one admitted partition on this node: forwards commands to the partition's actor,
 * starting it (it recovers from the journal) whenever none runs; on {@link PartitionCommand.Stop}
 * stops it and then itself.
 *
 * <p>It also answers queries, beside the actor's write path (a persisting actor stashes every
 * command until the write is durable): the actor publishes its journaled state after recovery and
 * after each write, and the keeper answers from the newest one, or holds a query until a state
 * reaches its position bound (starting the actor if none runs). It registers with the receptionist
 * under the partition's key when it starts, so any node can find it, and deregisters as soon as it
 * is told to stop.
 */
final class PartitionKeeper extends AbstractBehavior<Object> {

  private static final Logger log = LoggerFactory.getLogger(PartitionKeeper.class);

  /** The actor did not stop in time. Usually found by no one (the keeper stopped first): no dead-letter log line. */
  private enum ForceStop implements DeadLetterSuppression { INSTANCE }

  /** The actor published its journaled state. */
  private record Published(AppliedView view) {
  }

  /** A held query's wait is over. Usually found by no one (answered earlier): no dead-letter log line. */
  private record WaitOver(long id) implements DeadLetterSuppression {
  }

  private final String pipeline;
  private final PartitionId id;
  private final BiFunction<PartitionId, Consumer<AppliedView>, Behavior<PartitionCommand>> behavior;
  private final Duration stopTimeout;
  private final CompletableFuture<Done> stopped;
  private final ServiceKey<QueryRequest> serviceKey;
  private final String node;
  private final QueryCodecs codecs;
  private final Map<Long, QueryRequest> held = new HashMap<>();
  private long nextHeld;
  private ActorRef<PartitionCommand> child;
  private long incarnation;
  private boolean stopping;
  private AppliedView view;

  private PartitionKeeper(ActorContext<Object> ctx, String pipeline, PartitionId id,
      BiFunction<PartitionId, Consumer<AppliedView>, Behavior<PartitionCommand>> behavior, Duration stopTimeout,
      CompletableFuture<Done> stopped) {
    super(ctx);
    this.pipeline = pipeline;
    this.id = id;
    this.behavior = behavior;
    this.stopTimeout = stopTimeout;
    this.stopped = stopped;
    this.serviceKey = PartitionDirectory.key(id);
    this.node = ctx.getSystem().address().toString();
    this.codecs = new QueryCodecs(ctx.getSystem());
  }

  /** @param stopped completed when the keeper stopped (its actor stopped before it) */
  static Behavior<Object> create(String pipeline, PartitionId id,
      BiFunction<PartitionId, Consumer<AppliedView>, Behavior<PartitionCommand>> behavior, Duration stopTimeout,
      CompletableFuture<Done> stopped) {
    return Behaviors.setup(ctx -> {
      ctx.getSystem().receptionist().tell(Receptionist.register(PartitionDirectory.key(id), ctx.getSelf().narrow()));
      return new PartitionKeeper(ctx, pipeline, id, behavior, stopTimeout, stopped);
    });
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
        .onMessage(Published.class, this::onPublished)
        .onMessage(QueryRequest.class, this::onQuery)
        .onMessage(WaitOver.class, this::onWaitOver)
        .onSignal(Terminated.class, t -> {
          if (!t.getRef().equals(child)) {
            return this;
          }
          child = null;
          return stopping ? Behaviors.stopped() : this;
        })
        .onSignal(PostStop.class, s -> {
          stopped.complete(Done.getInstance());
          return this;
        })
        .build();
  }

  private Behavior<Object> onStop(PartitionCommand.Stop stop) {
    stopping = true;
    getContext().getSystem().receptionist().tell(Receptionist.deregister(serviceKey, getContext().getSelf().narrow()));
    held.values().forEach(q -> q.replyTo().tell(refusal(QueryReply.Kind.NOT_OWNER)));
    held.clear();
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
      ActorRef<Object> self = getContext().getSelf();
      child = getContext().spawn(behavior.apply(id, v -> self.tell(new Published(v))), "incarnation-" + (++incarnation));
      getContext().watch(child);
    }
    return child;
  }

  private Behavior<Object> onPublished(Published published) {
    AppliedView v = published.view();
    // An earlier incarnation's last state may arrive after its successor's first (Terminated overtakes
    // messages): every published state is journaled, so the newest is the one with the highest offset.
    if (view != null && v.nextOffset() < view.nextOffset()) {
      return this;
    }
    view = v;
    for (Iterator<QueryRequest> it = held.values().iterator(); it.hasNext(); ) {
      QueryRequest q = it.next();
      if (view.nextOffset() >= q.minNextOffset()) {
        it.remove();
        answer(q);
      }
    }
    return this;
  }

  private Behavior<Object> onQuery(QueryRequest q) {
    if (stopping) {
      q.replyTo().tell(refusal(QueryReply.Kind.NOT_OWNER));
    } else if (view != null && view.nextOffset() >= q.minNextOffset()) {
      answer(q);
    } else if (q.waitMillis() <= 0) {
      q.replyTo().tell(refusal(QueryReply.Kind.NOT_REACHED));
    } else {
      running();   // an actor that stopped on its own recovers and publishes its state
      long n = nextHeld++;
      held.put(n, q);
      getContext().scheduleOnce(Duration.ofMillis(q.waitMillis()), getContext().getSelf(), new WaitOver(n));
    }
    return this;
  }

  private Behavior<Object> onWaitOver(WaitOver over) {
    QueryRequest q = held.remove(over.id());
    if (q != null) {
      q.replyTo().tell(refusal(QueryReply.Kind.NOT_REACHED));
    }
    return this;
  }

  private void answer(QueryRequest q) {
    QueryReply reply;
    try {
      Object answer = view.answer(q.query());
      Optional<String> unserializable = codecs.unserializable(answer, "reply");
      reply = unserializable.isEmpty() ? new QueryReply.Answer(id, answer, view.nextOffset(), view.incarnation(), node)
          : new QueryReply.Refusal(id, QueryReply.Kind.FAILED, view.nextOffset(),
              IllegalArgumentException.class.getName(), unserializable.get());
    } catch (RuntimeException e) {
      log.debug("[{}] [{}] onQuery failed for a {}: {}", pipeline, id.shortName(), q.query().getClass().getName(),
          e.toString());
      reply = new QueryReply.Refusal(id, QueryReply.Kind.FAILED, view.nextOffset(), e.getClass().getName(),
          String.valueOf(e.getMessage()));
    }
    q.replyTo().tell(reply);
  }

  private QueryReply refusal(QueryReply.Kind kind) {
    return new QueryReply.Refusal(id, kind, view == null ? -1 : view.nextOffset(), "", "");
  }
}
