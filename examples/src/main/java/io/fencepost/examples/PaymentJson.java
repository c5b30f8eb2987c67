package io.fencepost.examples;

import java.util.Map;

import io.fencepost.kafka.serde.JsonDeserializer;
import io.fencepost.kafka.serde.JsonSerializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serializer;

/**
 * The ledger's wire format: {@code {"paymentId": "...", "merchantId": "...", "amountCents": 1234}},
 * read and written with Fencepost's {@link JsonDeserializer} and {@link JsonSerializer}. A value that
 * is not such a payment (not JSON, a field missing, null or of the wrong type) fails with a
 * {@code SerializationException} naming the field, and the pipeline dead-letters it.
 */
public final class PaymentJson implements Deserializer<Payment>, Serializer<Payment> {

  // snippet: json-deserializer
  private final Deserializer<Payment> reader = JsonDeserializer.of(Payment.class);
  // end-snippet: json-deserializer
  private final Serializer<Payment> writer = JsonSerializer.create();

  @Override
  public Payment deserialize(String topic, byte[] data) {
    return reader.deserialize(topic, data);
  }

  @Override
  public void configure(Map<String, ?> configs, boolean isKey) {
  }

  @Override
  public void close() {
  }

  @Override
  public byte[] serialize(String topic, Payment p) {
    return writer.serialize(topic, p);
  }
}
