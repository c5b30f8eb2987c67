package io.fencepost.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;

import com.fasterxml.jackson.annotation.JsonIdentityInfo;
import com.fasterxml.jackson.annotation.ObjectIdGenerators;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.annotation.JsonSerialize;
import com.typesafe.config.ConfigFactory;
import io.fencepost.JacksonSerializable;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.junit.jupiter.api.Test;

/**
 * The events of a batch bound to Pekko's Jackson serializers are encoded once per frame
 * ({@link JacksonEvents}); every event's payload in the frame must still be exactly what its
 * serializer's {@code toBinary} writes, whatever the binding's settings, so that Pekko's own read
 * path (migrations, decompression, allow-list) reads it.
 */
class BatchFrameEncodingTest {

  record Credited(String merchant, long cents) implements JacksonSerializable {
  }

  record Refunded(String merchant, long cents, String reason) implements JacksonSerializable {
  }

  /** Written once per event, its id in place of a repeat within one value only. */
  @JsonIdentityInfo(
      generator = ObjectIdGenerators.PropertyGenerator.class, property = "id")
  record Merchant(String id, String name) {
  }

  /** Numbered per value: the first object of each event is 1. */
  @JsonIdentityInfo(
      generator = ObjectIdGenerators.IntSequenceGenerator.class)
  record Shop(String name) {
  }

  record Paid(Merchant merchant, Shop shop, long cents) implements JacksonSerializable {
  }

  /** A faulty custom serializer: opens an array and, for a text starting with "open", leaves it open. */
  static final class LeavesArrayOpen extends JsonSerializer<Leaky> {
    @Override
    public void serialize(Leaky value, JsonGenerator gen,
        SerializerProvider serializers) throws IOException {
      gen.writeStartArray();
      gen.writeString(value.text());
      if (!value.text().startsWith("open")) {
        gen.writeEndArray();
      }
    }
  }

  @JsonSerialize(using = LeavesArrayOpen.class)
  record Leaky(String text) implements JacksonSerializable {
  }

  /** Bound to jackson-json in these tests. */
  record Noted(String text, int n) {
  }

  private static List<Object> events(int n) {
    List<Object> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(i % 3 == 2 ? new Refunded("m" + i, i, "r".repeat(i % 7)) : new Credited("m" + (i % 5), i * 100L));
      if (i % 4 == 0) {
        out.add(new Noted("note " + i + " " + "x".repeat(i), i));
      }
    }
    return out;
  }

  /** Each event's payload in the frame, in order. */
  private static List<byte[]> payloads(byte[] frame) throws IOException {
    FrameInput in = new FrameInput(frame);
    assertEquals(BinarySerializer.FORMAT_VERSION, in.readByte());
    in.readString();
    in.readSignedVarLong();
    in.readSignedVarLong();
    in.readLong();
    in.readVarInt();
    in.readVarInt();
    int entries = in.readCount();
    for (int i = 0; i < entries; i++) {
      in.readInt();
      in.readString();
    }
    int n = in.readCount();
    List<byte[]> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      in.readVarInt();
      out.add(in.readBytes());
    }
    return out;
  }

  private static void assertEachPayloadIsToBinary(String config) throws IOException {
    assertEachPayloadIsToBinary(config, BatchFrameEncodingTest::events);
  }

  private static void assertEachPayloadIsToBinary(String config,
      IntFunction<List<Object>> eventsOfSize) throws IOException {
    ActorTestKit kit = ActorTestKit.create("frame-encoding", ConfigFactory.parseString(
        "pekko.actor.serialization-bindings { \"" + Noted.class.getName() + "\" = jackson-json }\n" + config)
        .withFallback(ConfigFactory.load()));
    try {
      Serialization s = SerializationExtension.get(kit.system());
      // Frames of several sizes, one serializer instance: the first checks, the later ones trust the check.
      for (int size : new int[] {1, 2, 40, 3, 200}) {
        List<Object> events = eventsOfSize.apply(size);
        BatchEvent batch = new BatchEvent("inc", 0, size, 1L, events, new long[0], size, 0);
        byte[] frame = s.findSerializerFor(batch).toBinary(batch);
        List<byte[]> payloads = payloads(frame);
        assertEquals(events.size(), payloads.size());
        for (int i = 0; i < events.size(); i++) {
          Object e = events.get(i);
          assertArrayEquals(s.findSerializerFor(e).toBinary(e), payloads.get(i),
              "event " + i + " of " + events.size() + " (" + e + ")");
        }
        if (events.stream().noneMatch(e -> e instanceof Leaky)) {   // Leaky has no deserializer
          assertEquals(events, ((BatchEvent) s.deserialize(frame, FencepostSerializer.IDENTIFIER, "B").get())
              .events());
        }
      }
    } finally {
      kit.shutdownTestKit();
    }
  }

  @Test
  void eachEventOfAFrameIsWhatItsSerializerWritesForItAlone() throws IOException {
    assertEachPayloadIsToBinary("");
  }

  @Test
  void jsonEventsCompressedAboveTheBindingsThresholdAreCompressedAsItCompressesThem() throws IOException {
    assertEachPayloadIsToBinary("pekko.serialization.jackson.jackson-json.compression {\n"
        + "  algorithm = gzip\n  compress-larger-than = 40 b\n}");
  }

  @Test
  void aMapperThatWritesSomethingBetweenRootValuesFallsBackToOneEventAtATime() throws IOException {
    // INDENT_OUTPUT: the pretty printer writes a separator between root values of one generator.
    assertEachPayloadIsToBinary("pekko.serialization.jackson.jackson-json.serialization-features {\n"
        + "  INDENT_OUTPUT = on\n}");
  }

  @Test
  void objectIdsOfOneEventDoNotLeakIntoTheNextOfTheFrame() throws IOException {
    Merchant m1 = new Merchant("m1", "one");
    Shop shop = new Shop("s");
    assertEachPayloadIsToBinary("", size -> {
      List<Object> events = new ArrayList<>();
      for (int i = 0; i < size; i++) {
        // The first frames (1 and 2 events) hold other merchants each and no shop, so the class passes
        // its check; the later ones the same objects in every other event: each payload must write them
        // out in full and number its own shop 1, as toBinary does, not refer to an earlier event's.
        boolean shared = size > 2 && i % 2 == 0;
        events.add(new Paid(shared ? m1 : new Merchant("m" + i, "other"), size <= 2 ? null : shared ? shop
            : new Shop("s" + i), i));
      }
      return events;
    });
  }

  @Test
  void aValueLeftInsideAnOpenStructureIsWrittenAloneAndSpoilsNoOtherEvent() throws IOException {
    assertEachPayloadIsToBinary("", size -> {
      List<Object> events = new ArrayList<>();
      for (int i = 0; i < size; i++) {
        events.add(new Credited("m", i));
        if (i % 2 == 1) {
          // Well-formed in the first frames, so the class passes its check; then left open now and then.
          events.add(new Leaky((size > 2 && i % 3 == 0 ? "open " : "closed ") + i));
        }
      }
      return events;
    });
  }

  @Test
  void aFrameOfOneClassNamesItsSerializerOnce() {
    ActorTestKit kit = ActorTestKit.create("frame-one-class");
    try {
      Serialization s = SerializationExtension.get(kit.system());
      List<Object> events = new ArrayList<>();
      for (int i = 0; i < 100; i++) {
        events.add(new Credited("m", i));
      }
      BatchEvent batch = new BatchEvent("inc", 0, 100, 1L, events, new long[0], 100, 0);
      byte[] frame = s.findSerializerFor(batch).toBinary(batch);
      String text = new String(frame, StandardCharsets.ISO_8859_1);
      assertTrue(text.contains(Credited.class.getName()));
      assertEquals(text.indexOf(Credited.class.getName()), text.lastIndexOf(Credited.class.getName()));
    } finally {
      kit.shutdownTestKit();
    }
  }
}
