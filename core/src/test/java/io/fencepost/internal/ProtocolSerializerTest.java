package io.fencepost.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

import io.fencepost.BatchOutcome;
import io.fencepost.DeadLetter;
import io.fencepost.Inbound;
import io.fencepost.JacksonSerializable;
import io.fencepost.PartitionCommand;
import io.fencepost.PartitionId;
import io.fencepost.PartitionStatus;
import io.fencepost.errors.HandlerFailedException;
import io.fencepost.errors.OffsetGapException;
import io.fencepost.errors.PartitionFencedException;
import io.fencepost.errors.RecordsParkedException;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** Commands and replies survive the trip between cluster nodes. */
class ProtocolSerializerTest {

  record Payment(String id, long cents) implements JacksonSerializable {
  }

  private static final ActorTestKit kit = ActorTestKit.create();
  private static final PartitionId P = new PartitionId("g", "t", 3);

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  private static Object roundTrip(Object o) {
    Serialization s = SerializationExtension.get(kit.system());
    var serializer = s.findSerializerFor(o);
    assertEquals(ProtocolSerializer.IDENTIFIER, serializer.identifier());
    return s.deserialize(serializer.toBinary(o), serializer.identifier(), Serializers.manifestFor(serializer, o)).get();
  }

  @Test
  void applyBatchKeepsRecordsHeadersValuesAndDeadLetters() {
    TestProbe<BatchOutcome> probe = kit.createTestProbe();
    Inbound<Payment> in = new Inbound<>(P, 42, Optional.of("k"), new Payment("p1", 5),
        List.of(new Inbound.Header("h", new byte[] {1, 2}), new Inbound.Header("g", null),
            new Inbound.Header("h", new byte[] {3})), Instant.ofEpochMilli(1234));
    DeadLetter dead = new DeadLetter(P, 43, Optional.empty(), "X", "boom", 2, true);
    PartitionCommand.ApplyBatch back = (PartitionCommand.ApplyBatch) roundTrip(
        new PartitionCommand.ApplyBatch(List.of(in), List.of(dead), 40, probe.ref()));
    assertEquals(40, back.coveredFrom(), "the sender's promise of the offsets it covers travels with the batch");
    Inbound<?> r = back.records().get(0);
    assertEquals(P, r.partition());
    assertEquals(42, r.offset());
    assertEquals(Optional.of("k"), r.key());
    assertEquals(new Payment("p1", 5), r.value());
    assertEquals(List.of("h", "g", "h"), r.headers().stream().map(Inbound.Header::name).toList(),
        "every header, in order, repeats included");
    assertArrayEquals(new byte[] {1, 2}, r.headerValues("h").get(0));
    assertArrayEquals(new byte[] {3}, r.headerValues("h").get(1));
    assertEquals(Optional.of("\u0003"), r.header("h"), "header(name) is the last value");
    assertEquals(Instant.ofEpochMilli(1234), r.timestamp());
    assertEquals(List.of(dead), back.deadLetters());
    assertEquals(probe.ref(), back.replyTo());
  }

  @Test
  void outcomesAndErrorsKeepTheirKindAndData() {
    BatchOutcome.Applied applied = new BatchOutcome.Applied(P, 10, 3, 2, 1, true, 4, 6);
    assertEquals(applied, roundTrip(applied));

    var fenced = (BatchOutcome.Rejected) roundTrip(new BatchOutcome.Rejected(P, new PartitionFencedException("g|t|3", 5, 9)));
    PartitionFencedException f = assertInstanceOf(PartitionFencedException.class, fenced.error());
    assertEquals(5, f.expectedNextOffset());
    assertEquals(9, f.storedNextOffset());

    var failed = (BatchOutcome.Rejected) roundTrip(new BatchOutcome.Rejected(P,
        new HandlerFailedException("g|t|3", 7, true, "java.io.IOException", "busy", null)));
    HandlerFailedException h = assertInstanceOf(HandlerFailedException.class, failed.error());
    assertEquals(7, h.offset());
    assertEquals(true, h.isRetriable());
    assertEquals("java.io.IOException", h.causeClass());

    var parked = (BatchOutcome.Rejected) roundTrip(new BatchOutcome.Rejected(P, new RecordsParkedException("g|t|3", List.of(4L, 6L))));
    assertEquals(List.of(4L, 6L), assertInstanceOf(RecordsParkedException.class, parked.error()).offsets());

    var gap = (BatchOutcome.Rejected) roundTrip(new BatchOutcome.Rejected(P, new OffsetGapException("g|t|3", 100, 120, 250)));
    OffsetGapException g = assertInstanceOf(OffsetGapException.class, gap.error());
    assertEquals(100, g.storedNextOffset());
    assertEquals(120, g.firstMissing());
    assertEquals(250, g.nextPresent());
  }

  @Test
  void statusRoundTrips() {
    PartitionStatus s = new PartitionStatus(P, OptionalLong.of(77), 70, 3, 2, 10, "inc", "pekko://x@h:1", 4);
    assertEquals(s, roundTrip(s));
    PartitionStatus empty = new PartitionStatus(P, OptionalLong.empty(), 0, 0, 0, 0, "inc", "n", 0);
    assertEquals(empty, roundTrip(empty));
  }
}
