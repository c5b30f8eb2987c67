package io.fencepost.kafka;

import java.time.Duration;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

import io.fencepost.AppliedView;
import io.fencepost.PartitionId;
import io.fencepost.kafka.internal.NodeNames;
import io.fencepost.kafka.internal.QueryReply;
import io.fencepost.kafka.internal.QueryRequest;
import org.apache.pekko.actor.DeadLetterSuppression;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;

/**
 * Answers the queries of one admitted partition, beside its actor's write path: the actor publishes
 * its journaled state after recovery and after each durable write, and this actor (a child of the
 * partition's keeper, with a mailbox of its own, so queries never delay batches) answers from the
 * newest one, or holds a query until a state reaches its position bound (a query whose bound the
 * newest state meets is usually answered before it reaches this actor: {@link LatestView}). It never starts the
 * partition's actor: the pipeline does, with its own backoff. It is served under the partition's key
 * ({@link Membership#serve}) when it starts, and no longer when the keeper is told to stop or it stops.
 */
final class PartitionViews extends AbstractBehavior<Object> {

  /**
   * Incarnation {@code incarnation} of the partition's actor published its journaled state. No
   * dead-letter log line when it arrives after this actor stopped (the partition was revoked).
   */
  record Published(long incarnation, AppliedView view) implements DeadLetterSuppression {
  }

  /** The keeper was told to stop: no more answers, the registration goes. */
  enum Leave implements DeadLetterSuppression { INSTANCE }

  /** A held query's wait is over. Usually found by no one (answered earlier): no dead-letter log line. */
  private record WaitOver(long id) implements DeadLetterSuppression {
  }

  /** A partition's query actor and its newest state, for this node's own queries. */
  record Local(ActorRef<QueryRequest> actor, LatestView latest) {
  }

  private final PartitionId id;
  private final ServiceKey<QueryRequest> serviceKey;
  private final LatestView latest;
  private final Membership membership;
  private final Map<Long, QueryRequest> held = new HashMap<>();
  private long nextHeld;
  private boolean leaving;
  private long incarnation = -1;
  private AppliedView view;
  private boolean served;

  private PartitionViews(ActorContext<Object> ctx, PartitionId id, LatestView latest) {
    super(ctx);
    this.id = id;
    this.serviceKey = PartitionDirectory.key(id);
    this.latest = latest;
    this.membership = Membership.of(ctx.getSystem());
    membership.serve(serviceKey, ctx.getSelf().narrow(), latest::tryAnswer);
    this.served = true;
  }

  /** The newest state it sees is also {@code latest}'s, which answers what it can without this actor. */
  static Behavior<Object> create(PartitionId id, LatestView latest) {
    return Behaviors.setup(ctx -> new PartitionViews(ctx, id, latest));
  }

  /** A {@link LatestView} of partition {@code id} on {@code system}'s node. */
  static LatestView latestView(ActorSystem<?> system, String pipeline, PartitionId id) {
    return new LatestView(pipeline, id, NodeNames.of(system), new QueryCodecs(system));
  }

  @Override
  public Receive<Object> createReceive() {
    return newReceiveBuilder()
        .onMessage(Published.class, this::onPublished)
        .onMessage(QueryRequest.class, this::onQuery)
        .onMessage(WaitOver.class, this::onWaitOver)
        .onMessageEquals(Leave.INSTANCE, this::onLeave)
        .onSignal(PostStop.class, stop -> {
          latest.leave();   // however it stopped: a frozen state must not answer for a partition still applying
          unserve();   // however it stopped
          return this;
        })
        .build();
  }

  /**
   * Withdraws the registration, once: a cluster receptionist fails on a second deregistration of the
   * same actor ("has never been registered") and its supervisor stops it, leaving the node's
   * receptionist dead (a pipeline in the cluster's own actor system registers there directly).
   */
  private void unserve() {
    if (served) {
      served = false;
      membership.unserve(serviceKey, getContext().getSelf().narrow());
    }
  }

  private Behavior<Object> onLeave() {
    leaving = true;
    latest.leave();
    unserve();
    held.values().forEach(q -> q.replyTo().tell(refusal(QueryReply.Kind.NOT_OWNER)));
    held.clear();
    return this;
  }

  private Behavior<Object> onPublished(Published published) {
    // Every published state is journaled; a later incarnation's states are newer than an earlier
    // one's (it recovered from the journal), and one incarnation publishes in order. (Not ordered by
    // offset: an offset reset recovers at a lower offset, which is then the partition's state.)
    if (published.incarnation() < incarnation) {
      return this;
    }
    incarnation = published.incarnation();
    view = published.view();
    latest.publish(view);
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
    if (leaving || !q.partition().equals(id)) {
      q.replyTo().tell(refusal(QueryReply.Kind.NOT_OWNER));
    } else if (view != null && view.nextOffset() >= q.minNextOffset()) {
      answer(q);
    } else if (q.waitMillis() <= 0) {
      q.replyTo().tell(refusal(QueryReply.Kind.NOT_REACHED));
    } else {
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
    q.replyTo().tell(latest.answer(view, q.query()));
  }

  private QueryReply refusal(QueryReply.Kind kind) {
    return new QueryReply.Refusal(id, kind, view == null ? -1 : view.nextOffset(), "", "");
  }
}
