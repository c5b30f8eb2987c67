package io.fencepost.kafka.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import java.util.List;

import io.fencepost.JacksonSerializable;
import io.fencepost.PartitionId;
import io.fencepost.Query;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** Every query message makes the round trip through the serializer bound to it, field for field. */
class QuerySerializerTest {

  private static final ActorTestKit kit = ActorTestKit.create();
  private static final PartitionId P = new PartitionId("ledger", "payments", 3);

  @AfterAll
  static void shutdown() {
    kit.shutdownTestKit();
  }

  record BalanceOf(String merchant) implements Query<Long>, JacksonSerializable {
  }

  private static Object roundTrip(Object o) {
    Serialization serialization = SerializationExtension.get(kit.system().classicSystem());
    var serializer = serialization.findSerializerFor(o);
    assertInstanceOf(QuerySerializer.class, serializer, "bound in reference.conf");
    byte[] bytes = serialization.serialize(o).get();
    return serialization.deserialize(bytes, serializer.identifier(), Serializers.manifestFor(serializer, o)).get();
  }

  @Test
  void queriesRepliesAndStatusesSurviveTheTrip() {
    var replyTo = kit.<QueryReply>createTestProbe().ref();
    var statusTo = kit.<StatusRequest.Reply>createTestProbe().ref();
    List<Object> messages = List.of(
        new QueryRequest(P, new BalanceOf("m-1"), 42, 900, replyTo),
        new QueryReply.Answer(P, 12_500L, 4812, "inc-1", "pekko://ledger@127.0.0.1:2551"),
        new QueryReply.Answer(P, null, -1, "inc-2", "pekko://ledger@127.0.0.1:2552"),
        new QueryReply.Refusal(P, QueryReply.Kind.FAILED, 7, "java.lang.IllegalStateException", "no such thing"),
        new QueryReply.Refusal(P, QueryReply.Kind.NOT_REACHED, -1, "", ""),
        new StatusRequest(statusTo),
        new StatusRequest.Reply("pekko://ledger@127.0.0.1:2551", List.of(
            new StatusRequest.Row(P, "pekko://ledger@127.0.0.1:2551", 4812, 3, 4761, 12, 40, 2, 1, "", ""),
            new StatusRequest.Row(new PartitionId("ledger", "payments", 4), "?", Long.MIN_VALUE, Long.MIN_VALUE, 0, 0,
                0, 0, 0, "timeout", "stored offset above log end"))));
    for (Object m : messages) {
      assertEquals(m, roundTrip(m));
    }
  }
}
