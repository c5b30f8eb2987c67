package io.fencepost.examples;

import java.io.IOException;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serializer;

/** The ledger's wire format: {@code {"paymentId": "...", "merchantId": "...", "amountCents": 1234}}. */
public final class PaymentJson implements Deserializer<Payment>, Serializer<Payment> {

  private static final ObjectMapper MAPPER = new ObjectMapper();

  @Override
  public Payment deserialize(String topic, byte[] data) {
    if (data == null || data.length == 0) {
      throw new SerializationException("payment value is empty");
    }
    try {
      JsonNode n = MAPPER.readTree(data);
      JsonNode id = n.get("paymentId");
      JsonNode merchant = n.get("merchantId");
      JsonNode amount = n.get("amountCents");
      if (id == null || !id.isTextual() || merchant == null || !merchant.isTextual() || amount == null
          || !amount.canConvertToLong()) {
        throw new SerializationException("payment must have text paymentId and merchantId and an integer amountCents");
      }
      return new Payment(id.asText(), merchant.asText(), amount.asLong());
    } catch (IOException e) {
      throw new SerializationException("payment value is not JSON: " + e.getMessage(), e);
    }
  }

  @Override
  public void configure(java.util.Map<String, ?> configs, boolean isKey) {
  }

  @Override
  public void close() {
  }

  @Override
  public byte[] serialize(String topic, Payment p) {
    try {
      return MAPPER.writeValueAsBytes(p);
    } catch (IOException e) {
      throw new SerializationException(e);
    }
  }
}
