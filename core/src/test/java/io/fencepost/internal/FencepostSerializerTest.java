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

  record Refunded(String merchant, long cents) implements JacksonSerializable {
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

  /** The batch the committed fixture batch-B4.bin holds (written by the B4 format, before B5). */
  private static BatchEvent sampleBatch() {
    return new BatchEvent("inc-1", 10, 13, 1234L, List.of(new Credited("m1", 5), new Credited("m2", 7)),
        new long[] {1, 2, 3, 4}, 2, 1, List.of(new DeadLetterEntry(12, "k", "java.lang.X", "boom", 3, false, true)),
        List.of("k7"), List.of(new io.fencepost.OutboxRecord("out", java.util.Optional.of("m1"), new byte[] {1, 2}),
            new io.fencepost.OutboxRecord("out", java.util.Optional.empty(), new byte[0])),
        List.of(new CallOutcome(14, "pay-9", "{\"charge\":\"ch_1\"}")), new long[0]);
  }

  /**
   * The batch the committed fixture batch-B6.bin holds (written by the B6 format, the last before
   * the batch frame): two event classes interleaved, a replayed dead letter, two outbox topics.
   */
  private static BatchEvent sampleBatchWithReplays() {
    return new BatchEvent("inc-6", 10, 13, 1234L,
        List.of(new Credited("m1", 5), new Refunded("m1", 2), new Credited("m2", 7)),
        new long[] {1, 2, 3, 4}, 2, 1, List.of(new DeadLetterEntry(12, "k", "java.lang.X", "boom", 3, false, true, 4)),
        List.of("k7"), List.of(new io.fencepost.OutboxRecord("out", java.util.Optional.of("m1"), new byte[] {1, 2}),
            new io.fencepost.OutboxRecord("audit", java.util.Optional.empty(), new byte[0]),
            new io.fencepost.OutboxRecord("out", java.util.Optional.of("m2"), new byte[] {3})),
        List.of(new CallOutcome(14, "pay-9", "{\"charge\":\"ch_1\"}")), new long[] {4, 9});
  }

  /**
   * Writes the fixtures of the current formats into the directory named by the system property:
   * run on the code of a format before replacing it, and commit the files.
   */
  @Test
  @org.junit.jupiter.api.condition.EnabledIfSystemProperty(named = "fencepost.write-serializer-fixtures", matches = ".+")
  void writeTheFixtures() throws Exception {
    java.nio.file.Path dir = java.nio.file.Path.of(System.getProperty("fencepost.write-serializer-fixtures"));
    Serialization s = SerializationExtension.get(kit.system());
    for (Object o : List.of(sampleBatchWithReplays(), sampleState())) {
      var serializer = s.findSerializerFor(o);
      java.nio.file.Files.write(dir.resolve((o instanceof BatchEvent ? "batch-" : "state-")
          + Serializers.manifestFor(serializer, o) + ".bin"), serializer.toBinary(o));
    }
  }

  private static Object fixture(String name, String manifest) throws java.io.IOException {
    try (var in = FencepostSerializerTest.class.getResourceAsStream("/journal-fixtures/" + name)) {
      byte[] bytes = in.readAllBytes();
      return SerializationExtension.get(kit.system()).deserialize(bytes, FencepostSerializer.IDENTIFIER, manifest).get();
    }
  }

  @Test
  void anEventWhoseClassIsNotOnTheClasspathIsNamedNotCalledCorrupt() {
    Serialization s = SerializationExtension.get(kit.system());
    var serializer = s.findSerializerFor(sampleBatch());
    byte[] bytes = serializer.toBinary(sampleBatch());
    String present = Credited.class.getName();
    String absent = present.substring(0, present.length() - 1) + "x";   // same length: the frame stays valid
    byte[] renamed = new String(bytes, java.nio.charset.StandardCharsets.ISO_8859_1).replace(present, absent)
        .getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
    Throwable e = org.junit.jupiter.api.Assertions.assertThrows(Throwable.class, () -> s.deserialize(renamed,
        serializer.identifier(), Serializers.manifestFor(serializer, sampleBatch())).get());
    assertTrue(e.getMessage().startsWith("class [" + absent + "] of a journaled object is not on the classpath"),
        e.getMessage());
  }

  @Test
  void batchEventRoundTripsWithUserEventsThroughTheirOwnSerializer() {
    assertSameBatch(sampleBatch(), (BatchEvent) roundTrip(sampleBatch()));
  }

  @Test
  void aBatchWrittenByTheB4FormatIsStillReadExactly() throws Exception {
    assertSameBatch(sampleBatch(), (BatchEvent) fixture("batch-B4.bin", "B4"));
  }

  @Test
  void replaysAndTheDeadLetterAReplayReplacesRoundTrip() {
    BatchEvent e = new BatchEvent("inc", 0, 9, 1L, List.of(), new long[0], 1, 0,
        List.of(new DeadLetterEntry(8, "k", "java.lang.X", "again", 1, false, false, 3)), List.of(), List.of(),
        List.of(), new long[] {5, 6});
    BatchEvent back = (BatchEvent) roundTrip(e);
    assertEquals(3, back.deadLetters().get(0).replayOf());
    assertArrayEquals(new long[] {5, 6}, back.replayed());
  }

  @Test
  @SuppressWarnings("unchecked")
  void theReplayLedgerRoundTripsAndAStateBeforeItAcceptsEachReplayBelowItOnce() throws Exception {
    PartitionState<Credited> state = sampleState();
    state.replays().restore(40, List.of(50L, 61L), List.of(7L));
    PartitionState<Credited> back = (PartitionState<Credited>) roundTrip(state);
    assertEquals(List.of(50L, 61L), List.copyOf(back.replays().replayableOffsets()));
    assertEquals(List.of(7L), List.copyOf(back.replays().legacyReplayedOffsets()));
    assertEquals(40, back.replays().legacyBelow());
    assertTrue(back.replays().replayable(61) && back.replays().replayable(39));
    assertTrue(!back.replays().replayable(7) && !back.replays().replayable(55) && !back.replays().replayable(40));

    PartitionState<Credited> old = (PartitionState<Credited>) fixture("state-S4.bin", "S4");
    assertEquals(77, old.replays().legacyBelow(), "an S4 snapshot does not tell which of its offsets were dead letters");
    assertTrue(old.replays().replayable(76) && !old.replays().replayable(77));
  }

  @Test
  void recordKeysLongerThan64KiBRoundTripInDeadLettersAndParkedKeys() {
    String longKey = "k".repeat(70_000) + "\u00e9";
    BatchEvent e = new BatchEvent("inc", 0, 2, 1L, List.of(), new long[0], 0, 0,
        List.of(new DeadLetterEntry(1, longKey, "java.lang.X", "boom", 1, false, true)), List.of(longKey), List.of(),
        List.of(), new long[0]);
    BatchEvent back = (BatchEvent) roundTrip(e);
    assertEquals(longKey, back.deadLetters().get(0).key());
    assertEquals(List.of(longKey), back.unparked());
    PartitionState<Credited> state = new PartitionState<>(new Credited("m", 1), 2, null, "inc", 0, 0, 1, 1, 1,
        java.util.Map.of(longKey, 1L), List.of());
    @SuppressWarnings("unchecked")
    PartitionState<Credited> stateBack = (PartitionState<Credited>) roundTrip(state);
    assertEquals(java.util.Map.of(longKey, 1L), stateBack.parkedKeys());
  }

  private static void assertSameBatch(BatchEvent e, BatchEvent back) {
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

  /** The state the committed fixture state-S4.bin holds. */
  private static PartitionState<Credited> sampleState() {
    KeyWindow w = new KeyWindow(100, 10_000);
    for (int i = 0; i < 50; i++) {
      w.add(i, -i, 1000 + i);
    }
    return new PartitionState<>(new Credited("m", 1), 77, w, "inc", 40, 3, 9, 1049, 6,
        java.util.Map.of("k9", 12L), List.of(new CallOutcome(80, "pay-3", "ok")));
  }

  @Test
  @SuppressWarnings("unchecked")
  void stateRoundTripsWithItsWindowInInsertionOrder() {
    assertSameState(sampleState(), (PartitionState<Credited>) roundTrip(sampleState()));
  }

  @Test
  @SuppressWarnings("unchecked")
  void aStateWrittenByTheS4FormatIsStillReadExactly() throws Exception {
    assertSameState(sampleState(), (PartitionState<Credited>) fixture("state-S4.bin", "S4"));
  }

  private static void assertSameState(PartitionState<Credited> state, PartitionState<Credited> back) {
    KeyWindow w = state.window();
    assertEquals(state.user(), back.user());
    assertEquals(77, back.nextOffset());
    assertEquals("inc", back.lastIncarnation());
    assertEquals(40, back.appliedRecords());
    assertEquals(3, back.droppedByKey());
    assertEquals(9, back.batches());
    assertEquals(6, back.deadLettered());
    assertEquals(1049, back.lastWriteMillis());
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
