package io.fencepost.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.NotSerializableException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.dataformat.cbor.CBORFactory;
import com.typesafe.config.ConfigFactory;
import io.fencepost.JacksonSerializable;
import io.fencepost.OutboxRecord;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.SerializerWithStringManifest;
import org.apache.pekko.serialization.Serializers;
import org.apache.pekko.serialization.jackson.JacksonObjectMapperProvider;
import org.apache.pekko.serialization.jackson.JacksonSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

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

  /** A batch with one event class, a dead letter, an unparked key, two outbox records and a call outcome. */
  private static BatchEvent sampleBatch() {
    return new BatchEvent("inc-1", 10, 13, 1234L, List.of(new Credited("m1", 5), new Credited("m2", 7)),
        new long[] {1, 2, 3, 4}, 2, 1, List.of(new DeadLetterEntry(12, "k", "java.lang.X", "boom", 3, false, true)),
        List.of("k7"), List.of(new OutboxRecord("out", Optional.of("m1"), new byte[] {1, 2}),
            new OutboxRecord("out", Optional.empty(), new byte[0])),
        List.of(new CallOutcome(14, "pay-9", "{\"charge\":\"ch_1\"}")), new long[0]);
  }

  /**
   * The batch the committed fixture batch-v1.bin holds (format version 1): two event classes
   * interleaved, a replayed dead letter, two outbox topics.
   */
  private static BatchEvent sampleBatchWithReplays() {
    return new BatchEvent("inc-6", 10, 13, 1234L,
        List.of(new Credited("m1", 5), new Refunded("m1", 2), new Credited("m2", 7)),
        new long[] {1, 2, 3, 4}, 2, 1, List.of(new DeadLetterEntry(12, "k", "java.lang.X", "boom", 3, false, true, 4)),
        List.of("k7"), List.of(new OutboxRecord("out", Optional.of("m1"), new byte[] {1, 2}),
            new OutboxRecord("audit", Optional.empty(), new byte[0]),
            new OutboxRecord("out", Optional.of("m2"), new byte[] {3})),
        List.of(new CallOutcome(14, "pay-9", "{\"charge\":\"ch_1\"}")), new long[] {4, 9});
  }

  /**
   * Writes the golden fixtures of format version 1 into the directory named by the system property
   * ({@code -Dfencepost.write-serializer-fixtures=core/src/test/resources/journal-fixtures}). Once a
   * version of Fencepost is released, a committed fixture is never rewritten: a format change adds
   * version 2 and new fixtures beside.
   */
  @Test
  @EnabledIfSystemProperty(named = "fencepost.write-serializer-fixtures", matches = ".+")
  void writeTheFixtures() throws Exception {
    Path dir = Path.of(System.getProperty("fencepost.write-serializer-fixtures"));
    Serialization s = SerializationExtension.get(kit.system());
    Files.write(dir.resolve("batch-v1.bin"), s.findSerializerFor(sampleBatchWithReplays())
        .toBinary(sampleBatchWithReplays()));
    Files.write(dir.resolve("state-v2.bin"), s.findSerializerFor(sampleState()).toBinary(sampleState()));
    Files.write(dir.resolve("segment-v1.bin"), s.findSerializerFor(sampleSegment())
        .toBinary(sampleSegment()));
  }

  private static byte[] fixtureBytes(String name) throws IOException {
    try (var in = FencepostSerializerTest.class.getResourceAsStream("/journal-fixtures/" + name)) {
      return in.readAllBytes();
    }
  }

  private static Object fixture(String name, String manifest) throws IOException {
    return SerializationExtension.get(kit.system()).deserialize(fixtureBytes(name), FencepostSerializer.IDENTIFIER,
        manifest).get();
  }

  @Test
  void theVersion1BatchIsReadAndWrittenByteForByteAsTheCommittedFixture() throws Exception {
    assertSameBatch(sampleBatchWithReplays(), (BatchEvent) fixture("batch-v1.bin", "B"));
    BatchEvent e = sampleBatchWithReplays();
    assertEquals("B", Serializers.manifestFor(SerializationExtension.get(kit.system()).findSerializerFor(e), e));
    assertArrayEquals(fixtureBytes("batch-v1.bin"),
        SerializationExtension.get(kit.system()).findSerializerFor(e).toBinary(e));
  }

  @Test
  @SuppressWarnings("unchecked")
  void theVersion2SnapshotIsReadAndWrittenByteForByteAsTheCommittedFixture() throws Exception {
    PartitionState<Credited> back = (PartitionState<Credited>) fixture("state-v2.bin", "S");
    assertSameState(sampleState(), back);
    assertEquals(List.of(50L, 61L), List.copyOf(back.replays().replayableOffsets()));
    PartitionState<Credited> state = sampleState();
    assertEquals("S", Serializers.manifestFor(SerializationExtension.get(kit.system()).findSerializerFor(state),
        state));
    assertArrayEquals(fixtureBytes("state-v2.bin"),
        SerializationExtension.get(kit.system()).findSerializerFor(state).toBinary(state));
  }

  @Test
  void theVersion1WindowSegmentIsReadAndWrittenByteForByteAsTheCommittedFixture() throws Exception {
    WindowSegment back = (WindowSegment) fixture("segment-v1.bin", "W");
    assertEquals(sampleSegment(), back);
    assertEquals(sampleSegment().ref(), back.ref());
    assertEquals(sampleState().windowImage().refs(), List.of(back.ref()));
    assertArrayEquals(fixtureBytes("segment-v1.bin"),
        SerializationExtension.get(kit.system()).findSerializerFor(back).toBinary(back));
  }

  @Test
  void aSnapshotWhoseWindowDoesNotAddUpIsRefusedAsCorrupt() throws Exception {
    byte[] bytes = fixtureBytes("state-v2.bin");
    // from the end: 20 inline keys and their count, the tail's first ordinal, one segment reference,
    // the reference count, then the window's size: made one key more than its parts hold
    int sizeAt = bytes.length - (3 * 20 * 8 + 4) - 8 - (8 + 8 + 4 + 8) - 4 - 4;
    assertEquals(50, ByteBuffer.wrap(bytes, sizeAt, 4).getInt());
    ByteBuffer.wrap(bytes, sizeAt, 4).putInt(51);
    Throwable e = Assertions.assertThrows(UncheckedIOException.class,
        () -> SerializationExtension.get(kit.system()).deserialize(bytes, FencepostSerializer.IDENTIFIER, "S").get());
    assertTrue(String.valueOf(e.getCause().getMessage()).contains("the snapshot's key window does not add up"),
        String.valueOf(e.getCause()));
  }

  @Test
  void anUnknownManifestOrFormatVersionIsRefusedNamingIt() throws Exception {
    Serialization s = SerializationExtension.get(kit.system());
    byte[] batch = fixtureBytes("batch-v1.bin");
    Throwable oldBuild = Assertions.assertThrows(NotSerializableException.class,
        () -> s.deserialize(batch, FencepostSerializer.IDENTIFIER, "B7").get());
    assertTrue(oldBuild.getMessage().startsWith("unknown Fencepost journal manifest [B7]: written by another build "
        + "of Fencepost (a newer one, or a pre-release snapshot build, whose journals are not read)"),
        oldBuild.getMessage());
    for (String manifest : List.of("B", "S", "W")) {
      int version = manifest.equals("S") ? 2 : 1;
      byte[] newer = fixtureBytes(manifest.equals("B") ? "batch-v1.bin" : manifest.equals("S") ? "state-v2.bin"
          : "segment-v1.bin");
      newer[0] = (byte) (version + 1);
      Throwable e = Assertions.assertThrows(NotSerializableException.class,
          () -> s.deserialize(newer, FencepostSerializer.IDENTIFIER, manifest).get());
      assertEquals("Fencepost journal payload of manifest [" + manifest + "] has format version " + (version + 1)
          + "; this version of Fencepost reads version " + version + " only: it was written by a newer Fencepost. "
          + "Upgrade every node, or roll back the one that wrote it.", e.getMessage());
    }
    // A snapshot of a pre-release build held the whole window in another layout: refused, never misread.
    byte[] older = fixtureBytes("state-v2.bin");
    older[0] = 1;
    Throwable pre = Assertions.assertThrows(NotSerializableException.class,
        () -> s.deserialize(older, FencepostSerializer.IDENTIFIER, "S").get());
    assertEquals("Fencepost journal payload of manifest [S] has format version 1; this version of Fencepost reads "
        + "version 2 only: it was written by a pre-release snapshot build of Fencepost, whose snapshots are not read. "
        + "See \"Journal formats\" in docs/deployment.md.", pre.getMessage());
    Throwable empty = Assertions.assertThrows(NotSerializableException.class,
        () -> s.deserialize(new byte[0], FencepostSerializer.IDENTIFIER, "S").get());
    assertEquals("empty Fencepost journal payload, manifest [S]", empty.getMessage());
  }

  @Test
  void anEventWhoseClassIsNotOnTheClasspathIsNamedNotCalledCorrupt() {
    Serialization s = SerializationExtension.get(kit.system());
    var serializer = s.findSerializerFor(sampleBatch());
    byte[] bytes = serializer.toBinary(sampleBatch());
    String present = Credited.class.getName();
    String absent = present.substring(0, present.length() - 1) + "x";   // same length: the frame stays valid
    byte[] renamed = new String(bytes, StandardCharsets.ISO_8859_1).replace(present, absent)
        .getBytes(StandardCharsets.ISO_8859_1);
    Throwable e = Assertions.assertThrows(Throwable.class, () -> s.deserialize(renamed,
        serializer.identifier(), Serializers.manifestFor(serializer, sampleBatch())).get());
    assertTrue(e.getMessage().startsWith("class [" + absent + "] of a journaled object is not on the classpath"),
        e.getMessage());
  }

  @Test
  void batchEventRoundTripsWithUserEventsThroughTheirOwnSerializer() {
    assertSameBatch(sampleBatch(), (BatchEvent) roundTrip(sampleBatch()));
  }

  @Test
  void aBatchIsOneFrameWithEachEventClassNamedOnce() {
    BatchEvent e = sampleBatchWithReplays();
    Serialization s = SerializationExtension.get(kit.system());
    var serializer = s.findSerializerFor(e);
    assertEquals("B", Serializers.manifestFor(serializer, e));
    byte[] bytes = serializer.toBinary(e);
    String text = new String(bytes, StandardCharsets.ISO_8859_1);
    assertEquals(1, occurrences(text, Credited.class.getName()), "two Credited events, one class table entry");
    assertEquals(1, occurrences(text, Refunded.class.getName()));
    assertEquals(1, occurrences(text, "audit"));
    assertEquals(1, occurrences(text, "out"), "two records to topic out, one topic table entry");
    assertSameBatch(e, (BatchEvent) s.deserialize(bytes, serializer.identifier(), "B").get());
    assertEquals(List.of(new Credited("m1", 5), new Refunded("m1", 2), new Credited("m2", 7)),
        ((BatchEvent) s.deserialize(bytes, serializer.identifier(), "B").get()).events(), "in their order");
  }

  @Test
  void edgeValuesRoundTripExactlyInTheFrame() {
    String lone = "lone \ud800 high, \udc00 low, NUL \u0000, \ud83d\udcb8 pair, caf\u00e9";
    String longMessage = "m".repeat(3999) + "\ud83d\udcb8" + "tail";   // the 4000-char cut splits the pair
    BatchEvent e = new BatchEvent(lone, Long.MIN_VALUE, Long.MAX_VALUE, Long.MIN_VALUE,
        List.of(new Credited("caf\u00e9 \ud83d\udcb8", -1)),
        new long[] {Long.MIN_VALUE, Long.MAX_VALUE, 0, -1}, 0, Integer.MAX_VALUE,
        List.of(new DeadLetterEntry(Long.MAX_VALUE, lone, lone, longMessage, 0, true, true, Long.MIN_VALUE),
            new DeadLetterEntry(0, "", "", "", Integer.MAX_VALUE, false, false, -1)),
        List.of(lone, ""), List.of(new OutboxRecord(lone, Optional.of(""), new byte[0]),
            new OutboxRecord("t\u00e9", Optional.of(lone), new byte[] {0, -1})),
        List.of(new CallOutcome(-1, lone, "")), new long[] {Long.MIN_VALUE, -1, Long.MAX_VALUE});
    BatchEvent back = (BatchEvent) roundTrip(e);
    assertEquals(lone, back.incarnation());
    assertEquals(List.of(Long.MIN_VALUE, Long.MAX_VALUE, Long.MIN_VALUE, 0L, (long) Integer.MAX_VALUE),
        List.of(back.fromOffset(), back.nextOffset(), back.atMillis(), (long) back.applied(), (long) back.droppedByKey()));
    assertArrayEquals(e.keyDigests(), back.keyDigests());
    assertEquals(e.events(), back.events());
    assertEquals(List.of(e.deadLetters().get(0).withMessage(longMessage.substring(0, 4000) + "..."),
        e.deadLetters().get(1)), back.deadLetters(), "the message cut at 4000 chars, the half pair kept");
    assertEquals(e.unparked(), back.unparked());
    assertEquals(e.outbox(), back.outbox());
    assertEquals(e.calls(), back.calls());
    assertArrayEquals(e.replayed(), back.replayed());
  }

  @Test
  void everyCharReadsBackExactly() {
    StringBuilder all = new StringBuilder(65_536);
    for (int c = 0; c <= 0xFFFF; c++) {
      all.append((char) c);
    }
    String every = all.toString();
    BatchEvent e = new BatchEvent(every, 0, 1, 1L, List.of(), new long[0], 0, 0, List.of(), List.of(every, "", "a"),
        List.of(new OutboxRecord(every, Optional.of(every), new byte[] {1})), List.of(),
        new long[0]);
    BatchEvent back = (BatchEvent) roundTrip(e);
    assertEquals(every, back.incarnation());
    assertEquals(e.unparked(), back.unparked());
    assertEquals(e.outbox(), back.outbox());
  }

  @Test
  void framesWrittenConcurrentlyOfVerySizesReadBackExactly() throws Exception {
    Serialization s = SerializationExtension.get(kit.system());
    var serializer = s.findSerializerFor(sampleBatch());
    var pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        int thread = t;
        done.add(pool.submit(() -> {
          for (int i = 0; i < 200; i++) {
            int n = (i * 7919 + thread * 31) % 300;   // from empty to 300 events, shuffled
            List<Object> events = new ArrayList<>();
            for (int k = 0; k < n; k++) {
              events.add(k % 3 == 0 ? new Refunded("r" + thread, k) : new Credited("m" + i, k));
            }
            BatchEvent e = new BatchEvent("t" + thread, i, i + n, i, events, new long[2 * (n % 5)], n, 0);
            BatchEvent back = (BatchEvent) s.deserialize(serializer.toBinary(e), serializer.identifier(), "B").get();
            assertEquals(events, back.events());
            assertEquals(List.of(e.incarnation(), e.nextOffset()), List.of(back.incarnation(), back.nextOffset()));
          }
          return null;
        }));
      }
      for (var f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void jacksonEventsAreLookedUpByClassAndOthersByObject() {
    NestedSerialization nested = new NestedSerialization((ExtendedActorSystem)
        Adapter.toClassic(kit.system()));
    assertTrue(nested.encodingOf(new Credited("m", 1)).byClass(), "Pekko's Jackson serializer: the class name");
    assertTrue(nested.encodingOf("a string").byClass(), "a serializer without a string manifest");
    assertTrue(!nested.encodingOf(sampleBatch()).byClass(), "a string manifest Fencepost cannot vouch for");
  }

  /** A user's subclass of Pekko's Jackson serializer that gives each object its own manifest. */
  public static final class PerObjectJackson extends JacksonSerializer {
    public PerObjectJackson(ExtendedActorSystem system) {
      super(system, "per-object", JacksonObjectMapperProvider.get(system)
          .getOrCreate("per-object", Optional.of(new CBORFactory())));
    }

    @Override
    public String manifest(Object o) {
      return super.manifest(o) + "#" + ((Refunded) o).cents();
    }
  }

  @Test
  void aJacksonSubclassThatOverridesTheManifestIsAskedForEachEvent() {
    ActorTestKit custom = ActorTestKit.create("per-object-jackson", ConfigFactory.parseString(
        "pekko.actor.serializers.per-object = \"" + PerObjectJackson.class.getName() + "\"\n"
            + "pekko.actor.serialization-identifiers { per-object = 741198 }\n"
            + "pekko.actor.serialization-bindings { \"" + Refunded.class.getName() + "\" = per-object }")
        .withFallback(ConfigFactory.load()));
    try {
      NestedSerialization nested = new NestedSerialization((ExtendedActorSystem)
          Adapter.toClassic(custom.system()));
      NestedSerialization.Encoding encoding = nested.encodingOf(new Refunded("m", 2));
      assertEquals(PerObjectJackson.class, encoding.serializer().getClass());
      assertTrue(!encoding.byClass(), "its own manifest method: asked per event");
      assertTrue(nested.encodingOf(new Credited("m", 1)).byClass(), "Pekko's own Jackson serializer: per class");
    } finally {
      custom.shutdownTestKit();
    }
  }

  @Test
  void talliesLargerThanTheFrameRoundTrip() {
    BatchEvent e = new BatchEvent("i", 5_000_000_000L, 5_000_000_000L, 1L, List.of(), new long[0], 1_000_000, 70_000,
        List.of(new DeadLetterEntry(-1, "", "X", "", 200_000, true, false, -1)), List.of(), List.of(), List.of(),
        new long[0]);
    BatchEvent back = (BatchEvent) roundTrip(e);
    assertEquals(List.of(1_000_000, 70_000, 5_000_000_000L), List.of(back.applied(), back.droppedByKey(), back.nextOffset()));
    assertEquals(e.deadLetters(), back.deadLetters());
  }

  private static int occurrences(String text, String part) {
    int n = 0;
    for (int i = text.indexOf(part); i >= 0; i = text.indexOf(part, i + 1)) {
      n++;
    }
    return n;
  }

  @Test
  void aSerializerWhoseManifestDependsOnTheObjectIsAskedForEachEvent() {
    ActorTestKit tagged = ActorTestKit.create("tagged", ConfigFactory.parseString(
        "pekko.actor.serializers.tagged = \"" + TaggedSerializer.class.getName() + "\"\n"
            + "pekko.actor.serialization-bindings { \"" + Tagged.class.getName() + "\" = tagged }")
        .withFallback(ConfigFactory.load()));
    try {
      List<Object> events = List.of(new Tagged("a", "1"), new Tagged("b", "2"), new Tagged("a", "3"),
          new Credited("m", 1), new Tagged("c", "4"));
      BatchEvent e = new BatchEvent("inc", 0, 5, 1L, events, new long[0], 5, 0);
      Serialization s = SerializationExtension.get(tagged.system());
      var serializer = s.findSerializerFor(e);
      byte[] bytes = serializer.toBinary(e);
      String text = new String(bytes, StandardCharsets.ISO_8859_1);
      assertEquals(1, occurrences(text, "tag:a"), "one table entry per distinct manifest");
      assertEquals(events, ((BatchEvent) s.deserialize(bytes, serializer.identifier(), "B").get()).events());
    } finally {
      tagged.shutdownTestKit();
    }
  }

  /** An event whose serializer's manifest is its tag: one class, several manifests. */
  record Tagged(String tag, String value) {
  }

  /** Writes a {@link Tagged}'s value; its tag travels in the manifest. */
  public static final class TaggedSerializer extends SerializerWithStringManifest {
    @Override
    public int identifier() {
      return 741_199;
    }

    @Override
    public String manifest(Object o) {
      return "tag:" + ((Tagged) o).tag();
    }

    @Override
    public byte[] toBinary(Object o) {
      return ((Tagged) o).value().getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public Object fromBinary(byte[] bytes, String manifest) {
      return new Tagged(manifest.substring(4), new String(bytes, StandardCharsets.UTF_8));
    }
  }

  @Test
  void aTruncatedOrPaddedFrameIsReportedCorruptWithItsSize() {
    Serialization s = SerializationExtension.get(kit.system());
    byte[] bytes = s.findSerializerFor(sampleBatch()).toBinary(sampleBatch());
    for (byte[] broken : List.of(Arrays.copyOf(bytes, bytes.length - 3),
        Arrays.copyOf(bytes, bytes.length + 1))) {
      Throwable e = Assertions.assertThrows(Throwable.class,
          () -> s.deserialize(broken, FencepostSerializer.IDENTIFIER, "B").get());
      assertTrue(e.getMessage().startsWith("corrupt Fencepost journal payload of " + broken.length
          + " bytes, manifest [B]"), e.getMessage());
    }
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
  void recordKeysLongerThan64KiBRoundTripInDeadLettersAndParkedKeys() {
    String longKey = "k".repeat(70_000) + "\u00e9";
    BatchEvent e = new BatchEvent("inc", 0, 2, 1L, List.of(), new long[0], 0, 0,
        List.of(new DeadLetterEntry(1, longKey, "java.lang.X", "boom", 1, false, true)), List.of(longKey), List.of(),
        List.of(), new long[0]);
    BatchEvent back = (BatchEvent) roundTrip(e);
    assertEquals(longKey, back.deadLetters().get(0).key());
    assertEquals(List.of(longKey), back.unparked());
    PartitionState<Credited> state = new PartitionState<>(new Credited("m", 1), 2, null, "inc", 0, 0, 1, 1, 1,
        Map.of(longKey, 1L), List.of());
    @SuppressWarnings("unchecked")
    PartitionState<Credited> stateBack = (PartitionState<Credited>) roundTrip(state);
    assertEquals(Map.of(longKey, 1L), stateBack.parkedKeys());
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
    assertArrayEquals(e.replayed(), back.replayed());
  }

  /** The window of the fixtures: 50 keys, the first 30 of them in a segment cut at sequence number 5. */
  private static KeyWindow sampleWindow(int keys) {
    KeyWindow w = new KeyWindow(100, 10_000);
    for (int i = 0; i < keys; i++) {
      w.add(i, -i, 1000 + i);
    }
    return w;
  }

  /** The segment the committed fixture segment-v1.bin holds: the window's first 30 keys. */
  private static WindowSegment sampleSegment() {
    return new WindowSegment(WindowSegment.rowKey(5, 0), 0, WindowImage.triplesFrom(sampleWindow(30), 0));
  }

  /**
   * The state the committed fixture state-v2.bin holds: a window of 50 keys (30 in the segment at
   * sequence number 5, 20 inline), two replayable dead letters.
   */
  private static PartitionState<Credited> sampleState() {
    WindowSegments segments = new WindowSegments(30);
    segments.image(sampleWindow(30), 5);
    segments.stored(WindowSegment.rowKey(5, 0));
    WindowImage image = segments.image(sampleWindow(50), 9);
    PartitionState<Credited> state = new PartitionState<>(new Credited("m", 1), 77, null, "inc", 40, 3, 9, 1049, 6,
        Map.of("k9", 12L), List.of(new CallOutcome(80, "pay-3", "ok")));
    state.replays().restore(List.of(50L, 61L));
    return state.withWindowImage(image);
  }

  @Test
  @SuppressWarnings("unchecked")
  void stateRoundTripsWithItsWindowInInsertionOrder() {
    assertSameState(sampleState(), (PartitionState<Credited>) roundTrip(sampleState()));
  }

  private static void assertSameState(PartitionState<Credited> state, PartitionState<Credited> back) {
    assertEquals(state.user(), back.user());
    assertEquals(77, back.nextOffset());
    assertEquals("inc", back.lastIncarnation());
    assertEquals(40, back.appliedRecords());
    assertEquals(3, back.droppedByKey());
    assertEquals(9, back.batches());
    assertEquals(6, back.deadLettered());
    assertEquals(1049, back.lastWriteMillis());
    assertEquals(Map.of("k9", 12L), back.parkedKeys());
    assertEquals(Map.of("pay-3", new CallOutcome(80, "pay-3", "ok")), back.callOutcomes());
    assertEquals(state.windowImage(), back.windowImage());
    assertEquals(List.of(), back.windowImage().toWrite());
    KeyWindow restored = back.windowImage().restore(List.of(sampleSegment()));
    List<long[]> before = new ArrayList<>();
    sampleWindow(50).forEach((hi, lo, at) -> before.add(new long[] {hi, lo, at}));
    List<long[]> after = new ArrayList<>();
    restored.forEach((hi, lo, at) -> after.add(new long[] {hi, lo, at}));
    assertEquals(before.size(), after.size());
    for (int i = 0; i < before.size(); i++) {
      assertArrayEquals(before.get(i), after.get(i));
    }
    assertTrue(restored.contains(49, -49));
    assertEquals(50, restored.inserted());
  }
}
