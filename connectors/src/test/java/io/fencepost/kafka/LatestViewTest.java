package io.fencepost.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Optional;

import com.typesafe.config.ConfigFactory;
import io.fencepost.AppliedView;
import io.fencepost.JacksonSerializable;
import io.fencepost.PartitionId;
import io.fencepost.Query;
import io.fencepost.kafka.internal.QueryReply;
import io.fencepost.kafka.internal.QueryRequest;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * What a partition's newest state answers without its actor: only a query for its own partition,
 * whose bound the state meets, while the partition has not left; everything else goes to the actor.
 */
class LatestViewTest {

  private static final ActorTestKit kit = ActorTestKit.create(ConfigFactory.parseString(
      "pekko.actor.provider = local").withFallback(ConfigFactory.load()));
  private static final PartitionId P0 = new PartitionId("g", "payments", 0);
  private static final PartitionId P1 = new PartitionId("g", "payments", 1);

  @AfterAll
  static void shutdown() {
    kit.shutdownTestKit();
  }

  record Ask(String what) implements Query<String>, JacksonSerializable {
  }

  private static LatestView latest() {
    return PartitionViews.latestView(kit.system(), "p", P0);
  }

  private static AppliedView at(long next) {
    return new AppliedView(P0, next, "inc-" + next, q -> {
      if (((Ask) q).what().equals("boom")) {
        throw new IllegalStateException("no such thing");
      }
      return ((Ask) q).what() + "@" + next;
    });
  }

  @Test
  void aStateThatMeetsTheBoundAnswersAtOnce() {
    LatestView latest = latest();
    latest.publish(at(10));
    QueryReply.Answer a = assertInstanceOf(QueryReply.Answer.class, latest.answerNow(P0, new Ask("x"), 10).orElseThrow());
    assertEquals("x@10", a.reply());
    assertEquals(10, a.nextOffset());
    assertEquals("inc-10", a.incarnation());
    assertEquals(P0, a.partition());
  }

  @Test
  void noStateABoundAboveItAnotherPartitionOrALeavingPartitionGoToTheActor() {
    LatestView latest = latest();
    assertEquals(Optional.empty(), latest.answerNow(P0, new Ask("x"), -1), "no state published yet");
    latest.publish(at(10));
    assertEquals(Optional.empty(), latest.answerNow(P0, new Ask("x"), 11), "the state does not hold offset 10");
    assertEquals(Optional.empty(), latest.answerNow(P1, new Ask("x"), -1), "another partition's query");
    latest.leave();
    assertEquals(Optional.empty(), latest.answerNow(P0, new Ask("x"), -1), "the partition left this node");
  }

  @Test
  void aFailingOnQueryIsARefusalThatSaysWhy() {
    LatestView latest = latest();
    latest.publish(at(7));
    QueryReply.Refusal r = assertInstanceOf(QueryReply.Refusal.class,
        latest.answerNow(P0, new Ask("boom"), 0).orElseThrow());
    assertEquals(QueryReply.Kind.FAILED, r.kind());
    assertEquals(IllegalStateException.class.getName(), r.causeClass());
    assertEquals("no such thing", r.message());
  }

  /** Whatever onQuery throws (an Error of its own, a checked exception thrown undeclared), the query is refused. */
  @Test
  void anythingOnQueryThrowsIsARefusal() {
    for (Throwable thrown : List.of(new Error("custom"), new java.io.IOException("sneaky"))) {
      LatestView latest = latest();
      latest.publish(new AppliedView(P0, 3, "inc-3", q -> sneakyThrow(thrown)));
      QueryReply.Refusal r = assertInstanceOf(QueryReply.Refusal.class,
          latest.answerNow(P0, new Ask("x"), 0).orElseThrow());
      assertEquals(QueryReply.Kind.FAILED, r.kind());
      assertEquals(thrown.getClass().getName(), r.causeClass());
    }
  }

  @SuppressWarnings("unchecked")
  private static <E extends Throwable> Object sneakyThrow(Throwable t) throws E {
    throw (E) t;
  }

  @Test
  void aForwardedQueryItCanAnswerIsRepliedToAndOneItCannotIsLeftForTheActor() {
    LatestView latest = latest();
    latest.publish(at(10));
    TestProbe<QueryReply> replies = kit.createTestProbe();
    assertTrue(latest.tryAnswer(new QueryRequest(P0, new Ask("y"), 10, 1_000, replies.getRef())));
    assertEquals("y@10", assertInstanceOf(QueryReply.Answer.class, replies.receiveMessage()).reply());
    assertEquals(false, latest.tryAnswer(new QueryRequest(P0, new Ask("y"), 11, 1_000, replies.getRef())));
    assertEquals(false, latest.tryAnswer("not a query"));
    replies.expectNoMessage(java.time.Duration.ofMillis(50));
  }
}
