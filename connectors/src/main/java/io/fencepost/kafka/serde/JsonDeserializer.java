package io.fencepost.kafka.serde;

import java.io.IOException;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Collectors;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.fasterxml.jackson.datatype.jdk8.Jdk8Module;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import com.fasterxml.jackson.core.JsonProcessingException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * A Kafka {@link Deserializer} of JSON into {@code T} with Jackson, for a pipeline's values or keys.
 * A record that is not JSON, or does not fit {@code T}, fails with a {@link SerializationException}
 * that names the field and the error ({@code at /amountCents: Cannot deserialize value of type `long`
 * from String "abc" ...}); the pipeline dead-letters it with that message in
 * {@code fencepost.error.message} and goes on.
 *
 * <pre>{@code
 * KafkaPipeline.create(system, LedgerActor::new, JsonDeserializer.of(Payment.class), settings).start();
 * }</pre>
 *
 * <p>{@link #of(Class)} reads with a mapper (Java 8 types and java.time registered) that refuses
 * what would otherwise slip through as a default: a constructor property (a record's component)
 * missing or null, an {@code Optional} excepted (empty), and a primitive missing or null. Unknown
 * properties are ignored: a field a producer adds before every consumer knows it is <b>dropped</b>
 * from what this version journals and publishes, for good.
 *
 * <p>{@link #strict(Class)} refuses unknown properties too: a value with a field this version does not
 * know is dead-lettered with the field named ({@code at /channel: Unrecognized field "channel"}), and
 * {@code fencepost dlq replay} brings it in, content intact, once every node runs the version that
 * knows the field. Use it where a field's content matters more than the record's timeliness (money,
 * audit); with {@link #of(Class)}, roll every consumer before a producer writes the new field. A class
 * annotated {@code @JsonIgnoreProperties(ignoreUnknown = true)} or with a {@code @JsonAnySetter}
 * keeps ignoring unknown fields even here (its annotation wins), and a producer that serializes
 * derived getters ({@code getTotal()}) writes fields the record does not have: strict refuses those.
 * {@link #of(Class, ObjectMapper)} takes the application's own mapper as it is.
 */
public final class JsonDeserializer<T> implements Deserializer<T> {

  private final ObjectReader reader;
  private final JavaType type;
  /** "value" or "key" once configured (a pipeline or consumer configures it), null before. */
  private volatile String part;

  private JsonDeserializer(ObjectMapper mapper, Class<T> type) {
    this.type = mapper.getTypeFactory().constructType(Objects.requireNonNull(type, "type"));
    this.reader = mapper.readerFor(this.type);
  }

  /** Reads {@code type} with Fencepost's strict default mapper (see the class comment). */
  public static <T> JsonDeserializer<T> of(Class<T> type) {
    return new JsonDeserializer<>(defaultMapper(), type);
  }

  /**
   * Reads {@code type} with Fencepost's default mapper refusing unknown properties as well: a value
   * with a field {@code type} does not have is refused naming the field (see the class comment).
   */
  public static <T> JsonDeserializer<T> strict(Class<T> type) {
    return new JsonDeserializer<>(defaultMapper().enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES), type);
  }

  /** Reads {@code type} with {@code mapper}, configured as the application wants it. */
  public static <T> JsonDeserializer<T> of(Class<T> type, ObjectMapper mapper) {
    return new JsonDeserializer<>(Objects.requireNonNull(mapper, "mapper"), type);
  }

  /** The mapper {@link #of(Class)} uses, a new one each call (to start an application's own from). */
  public static ObjectMapper defaultMapper() {
    return new ObjectMapper().registerModule(new Jdk8Module()).registerModule(new JavaTimeModule())
        .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
        .enable(DeserializationFeature.FAIL_ON_NULL_CREATOR_PROPERTIES)
        .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
        .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
  }

  /** Remembers whether it reads keys, so that a refusal of a key says so. */
  @Override
  public void configure(Map<String, ?> configs, boolean isKey) {
    part = isKey ? "key" : "value";
  }

  @Override
  public T deserialize(String topic, byte[] data) {
    String of = type.getRawClass().getSimpleName() + ("key".equals(part) ? " (the record's key)" : "") + " on topic ["
        + topic + "]";
    String which = part == null ? "value (or key)" : part;
    if (data == null || data.length == 0) {
      throw new SerializationException("no JSON for " + of + ": the "
          + (data == null ? "record has no " + which : which + " is empty"));
    }
    try {
      T value = reader.readValue(data);
      if (value == null) {
        throw new SerializationException("JSON null for " + of);
      }
      return value;
    } catch (JsonProcessingException e) {
      throw new SerializationException(describe(of, e), e);
    } catch (IOException e) {
      throw new SerializationException("cannot read JSON for " + of + ": " + e.getMessage(), e);
    }
  }

  /** The field (as a JSON pointer) and Jackson's first message line, without its source excerpt. */
  private static String describe(String of, JsonProcessingException e) {
    String where = "";
    if (e instanceof JsonMappingException m && !m.getPath().isEmpty()) {
      where = " at " + m.getPath().stream()
          .map(r -> r.getFieldName() != null ? "/" + r.getFieldName() : "/" + r.getIndex())
          .collect(Collectors.joining());
    }
    String message = e.getOriginalMessage();
    int cut = message.indexOf('\n');
    String advice = e instanceof UnrecognizedPropertyException
        ? "; this version does not know that field (strict): replay the dead letter once every node runs one that "
            + "does, or fix the producer"
        : "";
    return "not valid JSON for " + of + where + ": "
        + (cut < 0 ? message : message.substring(0, cut)) + location(e) + advice;
  }

  private static String location(JsonProcessingException e) {
    return e.getLocation() == null ? "" : " (line " + e.getLocation().getLineNr() + ", column "
        + e.getLocation().getColumnNr() + ")";
  }
}
