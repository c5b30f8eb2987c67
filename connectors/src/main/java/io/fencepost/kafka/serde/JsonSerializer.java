package io.fencepost.kafka.serde;

import java.util.Objects;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectWriter;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Serializer;

/** A Kafka {@link Serializer} of {@code T} as JSON with Jackson: the other half of {@link JsonDeserializer}. */
public final class JsonSerializer<T> implements Serializer<T> {

  private final ObjectWriter writer;

  private JsonSerializer(ObjectMapper mapper) {
    this.writer = mapper.writer();
  }

  /** Writes with {@link JsonDeserializer#defaultMapper()}. */
  public static <T> JsonSerializer<T> create() {
    return new JsonSerializer<>(JsonDeserializer.defaultMapper());
  }

  /** Writes with {@code mapper}. */
  public static <T> JsonSerializer<T> create(ObjectMapper mapper) {
    return new JsonSerializer<>(Objects.requireNonNull(mapper, "mapper"));
  }

  @Override
  public byte[] serialize(String topic, T value) {
    if (value == null) {
      return null;
    }
    try {
      return writer.writeValueAsBytes(value);
    } catch (JsonProcessingException e) {
      throw new SerializationException("cannot write " + value.getClass().getSimpleName() + " as JSON for topic ["
          + topic + "]: " + e.getOriginalMessage(), e);
    }
  }
}
