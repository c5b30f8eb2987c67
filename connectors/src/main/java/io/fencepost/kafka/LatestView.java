package io.fencepost.kafka;

import java.util.Optional;

import io.fencepost.AppliedView;
import io.fencepost.PartitionId;
import io.fencepost.Query;
import io.fencepost.kafka.internal.QueryReply;
import io.fencepost.kafka.internal.QueryRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The newest journaled state of one admitted partition, as its {@link PartitionViews} actor last saw
 * it, readable by any thread. A query whose position bound that state meets is answered where it
 * arrives (the router's thread for this node's queries, the membership gateway's forwarder for other
 * nodes'), without a hop to the actor: on a small machine, handing a query from thread to thread
 * costs more than answering it. A query it cannot answer now (no state yet, its bound not reached,
 * the partition leaving) goes to the actor, which holds or refuses it.
 *
 * <p>Only the actor writes it. A reader may see a state the actor has just replaced, or miss a
 * {@code leave} by a moment: either way it answers from a state the journal holds and that meets the
 * query's bound, as the actor would have a moment earlier.
 */
final class LatestView {

  private static final Logger log = LoggerFactory.getLogger(LatestView.class);

  private final String pipeline;
  private final PartitionId id;
  private final String node;
  private final QueryCodecs codecs;
  private volatile AppliedView view;
  private volatile boolean leaving;

  LatestView(String pipeline, PartitionId id, String node, QueryCodecs codecs) {
    this.pipeline = pipeline;
    this.id = id;
    this.node = node;
    this.codecs = codecs;
  }

  /** The actor's newest state (it checked the incarnation order). */
  void publish(AppliedView newest) {
    view = newest;
  }

  /** The partition leaves this node: nothing is answered here any more. */
  void leave() {
    leaving = true;
  }

  /** The newest state, or {@code null} before the first. */
  AppliedView view() {
    return view;
  }

  /**
   * The answer to {@code query} from the newest state, when it meets {@code minNextOffset} and the
   * partition has not left; empty when only the actor can decide. A failing {@code onQuery} or an
   * unserializable reply is an answer too (a refusal saying so).
   */
  Optional<QueryReply> answerNow(PartitionId partition, Query<?> query, long minNextOffset) {
    AppliedView v = view;
    if (leaving || v == null || v.nextOffset() < minNextOffset || !partition.equals(id)) {
      return Optional.empty();
    }
    return Optional.of(answer(v, query));
  }

  /**
   * Answers {@code message} now when it is a query this state can answer (the reply is told to its
   * sender); false when it must go to the actor.
   */
  boolean tryAnswer(Object message) {
    if (!(message instanceof QueryRequest q)) {
      return false;
    }
    Optional<QueryReply> reply = answerNow(q.partition(), q.query(), q.minNextOffset());
    reply.ifPresent(q.replyTo()::tell);
    return reply.isPresent();
  }

  /** The reply to {@code query} from state {@code v}. */
  QueryReply answer(AppliedView v, Query<?> query) {
    try {
      Object answer = v.answer(query);
      Optional<String> unserializable = codecs.unserializable(answer, "reply");
      return unserializable.isEmpty() ? new QueryReply.Answer(id, answer, v.nextOffset(), v.incarnation(), node)
          : new QueryReply.Refusal(id, QueryReply.Kind.FAILED, v.nextOffset(),
              IllegalArgumentException.class.getName(), unserializable.get());
    } catch (VirtualMachineError e) {
      throw e;   // out of memory, an internal error: nothing here can go on
    } catch (Throwable e) {
      // The user's onQuery failed (whatever it threw, a checked exception thrown undeclared too): the
      // query fails, the caller goes on (a throw would stop the actor or forwarder answering it).
      log.debug("[{}] [{}] onQuery failed for a {}: {}", pipeline, id.shortName(), query.getClass().getName(),
          e.toString());
      return new QueryReply.Refusal(id, QueryReply.Kind.FAILED, v.nextOffset(), e.getClass().getName(),
          String.valueOf(e.getMessage()));
    }
  }
}
