package io.fencepost.kafka;

import java.time.Duration;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Optional;

import io.fencepost.AppliedView;
import io.fencepost.PartitionId;
import io.fencepost.kafka.internal.NodeNames;
import io.fencepost.kafka.internal.QueryReply;
import io.fencepost.kafka.internal.QueryRequest;
import org.apache.pekko.actor.DeadLetterSuppression;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Answers the queries of one admitted partition, beside its actor's write path: the actor publishes
 * its journaled state after recovery and after each durable write, and this actor (a child of the
 * partition's keeper, with a mailbox of its own, so queries never delay batches) answers from the
 * newest one, or holds a query until a state reaches its position bound. It never starts the
 * partition's actor: the pipeline does, with its own backoff. It is served under the partition's key
 * ({@link Membership#serve}) when it starts, and no longer when the keeper is told to stop or it stops.
 */
final class PartitionViews extends AbstractBehavior<Object> {

  private static final Logger log = LoggerFactory.getLogger(PartitionViews.class);

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

  private final String pipeline;
  private final PartitionId id;
  private final ServiceKey<QueryRequest> serviceKey;
  private final String node;
  private final QueryCodecs codecs;
  private final Membership membership;
  private final Map<Long, QueryRequest> held = new HashMap<>();
  private long nextHeld;
  private boolean leaving;
  private long incarnation = -1;
  private AppliedView view;

  private PartitionViews(ActorContext<Object> ctx, String pipeline, PartitionId id) {
    super(ctx);
    this.pipeline = pipeline;
    this.id = id;
    this.serviceKey = PartitionDirectory.key(id);
    this.node = NodeNames.of(ctx.getSystem());
    this.codecs = new QueryCodecs(ctx.getSystem());
    this.membership = Membership.of(ctx.getSystem());
    membership.serve(serviceKey, ctx.getSelf().narrow());
  }

  static Behavior<Object> create(String pipeline, PartitionId id) {
    return Behaviors.setup(ctx -> new PartitionViews(ctx, pipeline, id));
  }

  @Override
  public Receive<Object> createReceive() {
    return newReceiveBuilder()
        .onMessage(Published.class, this::onPublished)
        .onMessage(QueryRequest.class, this::onQuery)
        .onMessage(WaitOver.class, this::onWaitOver)
        .onMessageEquals(Leave.INSTANCE, this::onLeave)
        .onSignal(PostStop.class, stop -> {
          membership.unserve(serviceKey, getContext().getSelf().narrow());   // however it stopped
          return this;
        })
        .build();
  }

  private Behavior<Object> onLeave() {
    leaving = true;
    membership.unserve(serviceKey, getContext().getSelf().narrow());
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
    QueryReply reply;
    try {
      Object answer = view.answer(q.query());
      Optional<String> unserializable = codecs.unserializable(answer, "reply");
      reply = unserializable.isEmpty() ? new QueryReply.Answer(id, answer, view.nextOffset(), view.incarnation(), node)
          : new QueryReply.Refusal(id, QueryReply.Kind.FAILED, view.nextOffset(),
              IllegalArgumentException.class.getName(), unserializable.get());
    } catch (StackOverflowError | RuntimeException | LinkageError | AssertionError e) {
      // The user's onQuery failed: the query fails, this actor goes on (an Error would stop it).
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
