package io.fencepost.internal;

import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.ser.DefaultSerializerProvider;
import com.typesafe.config.Config;
import org.apache.pekko.serialization.Serializer;
import org.apache.pekko.serialization.jackson.JacksonObjectMapperProvider;
import org.apache.pekko.serialization.jackson.JacksonSerializer;

/**
 * A batch's events whose class is bound to Pekko's own Jackson serializers ({@code jackson-cbor},
 * {@code jackson-json}), encoded once per frame: one generator per binding and one root serializer
 * lookup per class, instead of a whole Pekko serialization call (a generator, an I/O context, a
 * buffer and a lookup) per event. Each event still gets a serializer provider of its own: the
 * provider holds per-call state (object ids written, per-call attributes) that must not leak from
 * one event into the next. Each event's bytes are exactly
 * what that serializer's {@code toBinary} writes (compressed as it would compress them), so the
 * events are read back by Pekko's own read path: migrations, decompression, allow-list.
 *
 * <p>That the bytes are the same is checked, not assumed: a class's first event written at the
 * start of a generator and its first written after another value are compared with
 * {@code toBinary}; a class whose bytes differ (a custom mapper feature, a type header) is written
 * through {@code toBinary} from then on. A value that leaves the generator inside an open
 * structure (a faulty custom serializer) is written through {@code toBinary}, its class too from
 * then on, and the generator replaced. A custom serializer that reads its position in the output
 * (the root value index) sees the event's index in the frame, not 0. Thread-safe; a {@link Frame} is
 * used by one thread.
 */
final class JacksonEvents {

  private static final Set<String> PEKKO_JACKSON = Set.of(
      "org.apache.pekko.serialization.jackson.JacksonCborSerializer",
      "org.apache.pekko.serialization.jackson.JacksonJsonSerializer");

  /** A class's standing: checked at neither, one or both positions; or written through toBinary. */
  private enum Check { NONE, FIRST, LATER, BOTH, FALLBACK }

  private final Config config;
  private final Map<Class<?>, Check> checks = new ConcurrentHashMap<>();
  private final Map<Serializer, Compression> compressions = new ConcurrentHashMap<>();

  JacksonEvents(Config config) {
    this.config = config;
  }

  /** How a binding compresses a payload: above {@code largerThan} bytes, unless off. */
  private record Compression(boolean off, long largerThan) {
  }

  private Compression compression(JacksonSerializer serializer) {
    return compressions.computeIfAbsent(serializer, s -> {
      Config c = JacksonObjectMapperProvider.configForBinding(serializer.bindingName(), config);
      String algorithm = c.getString("compression.algorithm");
      return new Compression("off".equalsIgnoreCase(algorithm), algorithm.equalsIgnoreCase("off") ? Long.MAX_VALUE
          : c.getBytes("compression.compress-larger-than"));
    });
  }

  /** The encoding of one frame's events; close it when the frame's events are written. */
  Frame frame(int sizeHint) {
    return new Frame(sizeHint);
  }

  final class Frame implements AutoCloseable {

    private final FrameOutput out;
    /** One generator and provider per binding (a frame rarely holds more than one). */
    private JacksonSerializer[] bindings = new JacksonSerializer[0];
    private JsonGenerator[] generators = new JsonGenerator[0];
    /** Per class in this frame: its root serializer and type. */
    private final Map<Class<?>, Root> roots = new HashMap<>(4);
    private int start;
    private int length;
    private byte[] compressed;

    private Frame(int sizeHint) {
      this.out = new FrameOutput(sizeHint);
    }

    private record Root(int binding, JavaType type, JsonSerializer<Object> serializer, Compression compression) {
    }

    /**
     * Encodes {@code event} when its encoding is a Pekko Jackson binding's: true, and the bytes are
     * {@link #array()} from {@link #start()} for {@link #length()} (or {@link #compressed()} when
     * not null). False: the caller writes it through the serializer's {@code toBinary}.
     */
    boolean write(NestedSerialization.Encoding encoding, Object event) {
      compressed = null;
      Class<?> type = event.getClass();
      if (!encoding.byClass() || !PEKKO_JACKSON.contains(encoding.serializer().getClass().getName())) {
        return false;
      }
      Check check = checks.getOrDefault(type, Check.NONE);
      if (check == Check.FALLBACK) {
        return false;
      }
      JacksonSerializer serializer = (JacksonSerializer) encoding.serializer();
      ObjectMapper mapper = serializer.objectMapper();
      if (event instanceof Closeable && mapper.isEnabled(SerializationFeature.CLOSE_CLOSEABLE)) {
        return false;   // toBinary closes it after writing
      }
      try {
        Root root = roots.get(type);
        if (root == null) {
          root = root(serializer, type);
          roots.put(type, root);
        }
        JsonGenerator generator = generators[root.binding()];
        boolean first = generator.getOutputContext().getEntryCount() == 0;
        start = out.size();
        ((DefaultSerializerProvider) mapper.getSerializerProviderInstance())
            .serializeValue(generator, event, root.type(), root.serializer());
        generator.flush();
        length = out.size() - start;
        if (!generator.getOutputContext().inRoot()) {
          // Left inside an open structure: the next value would land in it. This one goes through
          // toBinary, and so does its class from now on; the generator is replaced.
          checks.put(type, Check.FALLBACK);
          generators[root.binding()] = newGenerator(mapper);
          return false;
        }
        Compression c = root.compression();
        if (!c.off() && length > c.largerThan()) {
          compressed = serializer.compress(Arrays.copyOfRange(out.array(), start, start + length));
        }
        if (check != Check.BOTH) {
          verify(serializer, type, event, first, check);
        }
        return checks.get(type) != Check.FALLBACK;
      } catch (IOException e) {
        throw new UncheckedIOException("cannot serialize the event " + type.getName() + " with Jackson", e);
      }
    }

    /** Compares this event's bytes with toBinary's, at its position (first of a generator, or later). */
    private void verify(JacksonSerializer serializer, Class<?> type, Object event, boolean first, Check check) {
      if (first ? check == Check.FIRST : check == Check.LATER) {
        return;
      }
      byte[] expected = serializer.toBinary(event);
      byte[] written = compressed != null ? compressed : Arrays.copyOfRange(out.array(), start, start + length);
      boolean same = Arrays.equals(expected, written);
      checks.compute(type, (k, was) -> {
        if (!same || was == Check.FALLBACK) {
          return Check.FALLBACK;
        }
        Check here = first ? Check.FIRST : Check.LATER;
        return was == null || was == Check.NONE || was == here ? here : Check.BOTH;
      });
    }

    private Root root(JacksonSerializer serializer, Class<?> type) throws IOException {
      int binding = -1;
      for (int i = 0; i < bindings.length; i++) {
        if (bindings[i] == serializer) {
          binding = i;
        }
      }
      ObjectMapper mapper = serializer.objectMapper();
      if (binding < 0) {
        binding = bindings.length;
        bindings = Arrays.copyOf(bindings, binding + 1);
        generators = Arrays.copyOf(generators, binding + 1);
        bindings[binding] = serializer;
        generators[binding] = newGenerator(mapper);
      }
      JavaType javaType = mapper.constructType(type);
      return new Root(binding, javaType, mapper.getSerializerProviderInstance()
          .findTypedValueSerializer(javaType, true, null), compression(serializer));
    }

    private JsonGenerator newGenerator(ObjectMapper mapper) throws IOException {
      JsonGenerator generator = mapper.createGenerator(out.stream());
      try {
        generator.setRootValueSeparator(null);   // JSON writes a space between root values by default
      } catch (UnsupportedOperationException binaryFormat) {
        // CBOR has no separator to turn off
      }
      return generator;
    }

    int start() {
      return start;
    }

    int length() {
      return length;
    }

    byte[] array() {
      return out.array();
    }

    byte[] compressed() {
      return compressed;
    }

    @Override
    public void close() {
      for (JsonGenerator generator : generators) {
        try {
          generator.close();
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }
    }
  }
}
