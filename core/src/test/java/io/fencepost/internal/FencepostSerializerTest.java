package io.fencepost.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import io.fencepost.JacksonSerializable;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

class FencepostSerializerTest {

  record Credited(String merchant, long cents) implements JacksonSerializable {
  }

  private static final ActorTestKit kit = ActorTestKit.create();

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  private static Object roundTrip(Object o) {
    Serialization s = SerializationExtension.get(kit.system());
    var serializer = s.findSerializerFor(o);
    assertEquals(FencepostSerializer.IDENTIFIER, serializer.identifier());
    byte[] bytes = serializer.toBinary(o);
    return s.deserialize(bytes, serializer.identifier(), Serializers.manifestFor(serializer, o)).get();
  }

  @Test
  void batchEventRoundTripsWithUserEventsThroughTheirOwnSerializer() {
    BatchEvent e = new BatchEvent("inc-1", 10, 13, 1234L, List.of(new Credited("m1", 5), new Credited("m2", 7)),
        new long[] {1, 2, 3, 4}, 2, 1, List.of(new DeadLetterEntry(12, "k", "java.lang.X", "boom", 3, false, true)),
        List.of("k7"), List.of(new io.fencepost.OutboxRecord("out", java.util.Optional.of("m1"), new byte[] {1, 2}),
            new io.fencepost.OutboxRecord("out", java.util.Optional.empty(), new byte[0])),
        List.of(new CallOutcome(14, "pay-9", "{\"charge\":\"ch_1\"}")));
    BatchEvent back = (BatchEvent) roundTrip(e);
    assertEquals(e.incarnation(), back.incarnation());
    assertEquals(10, back.fromOffset());
    assertEquals(13, back.nextOffset());
    assertEquals(1234L, back.atMillis());
    assertEquals(e.events(), back.events());
    assertArrayEquals(e.keyDigests(), back.keyDigests());
    assertEquals(2, back.applied());
    assertEquals(1, back.droppedByKey());
    assertEquals(e.deadLetters(), back.deadLetters());
    assertEquals(List.of("k7"), back.unparked());
    assertEquals(e.outbox(), back.outbox());
    assertEquals(e.calls(), back.calls());
  }

  @Test
  void stateRoundTripsWithItsWindowInInsertionOrder() {
    KeyWindow w = new KeyWindow(100, 10_000);
    for (int i = 0; i < 50; i++) {
      w.add(i, -i, 1000 + i);
    }
    PartitionState<Credited> state = new PartitionState<>(new Credited("m", 1), 77, w, "inc", 40, 3, 9, 1049, 6,
        java.util.Map.of("k9", 12L), List.of(new CallOutcome(80, "pay-3", "ok")));
    @SuppressWarnings("unchecked")
    PartitionState<Credited> back = (PartitionState<Credited>) roundTrip(state);
    assertEquals(state.user(), back.user());
    assertEquals(77, back.nextOffset());
    assertEquals("inc", back.lastIncarnation());
    assertEquals(40, back.appliedRecords());
    assertEquals(3, back.droppedByKey());
    assertEquals(9, back.batches());
    assertEquals(6, back.deadLettered());
    assertEquals(java.util.Map.of("k9", 12L), back.parkedKeys());
    assertEquals(java.util.Map.of("pay-3", new CallOutcome(80, "pay-3", "ok")), back.callOutcomes());
    List<long[]> before = new ArrayList<>();
    w.forEach((hi, lo, at) -> before.add(new long[] {hi, lo, at}));
    List<long[]> after = new ArrayList<>();
    back.window().forEach((hi, lo, at) -> after.add(new long[] {hi, lo, at}));
    assertEquals(before.size(), after.size());
    for (int i = 0; i < before.size(); i++) {
      assertArrayEquals(before.get(i), after.get(i));
    }
    assertTrue(back.window().contains(49, -49));
  }
}
