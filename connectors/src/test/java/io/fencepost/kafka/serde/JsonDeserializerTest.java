package io.fencepost.kafka.serde;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;

import com.fasterxml.jackson.databind.DeserializationFeature;
import org.apache.kafka.common.errors.SerializationException;
import org.junit.jupiter.api.Test;

/** JSON in, a value or a dead letter whose message names the field and the error. */
class JsonDeserializerTest {

  record Order(String orderId, String sku, long quantity, Optional<String> note, Instant at) {
  }

  private static final JsonDeserializer<Order> ORDERS = JsonDeserializer.of(Order.class);

  private static byte[] json(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static String refusal(String value) {
    return assertThrows(SerializationException.class, () -> ORDERS.deserialize("orders", json(value))).getMessage();
  }

  @Test
  void aValidRecordIsReadAndUnknownFieldsAreIgnored() {
    Order o = ORDERS.deserialize("orders", json("{\"orderId\":\"o-1\",\"sku\":\"A7\",\"quantity\":3,"
        + "\"at\":\"2026-12-03T10:00:00Z\",\"addedLater\":true}"));
    assertEquals(new Order("o-1", "A7", 3, Optional.empty(), Instant.parse("2026-12-03T10:00:00Z")), o);
    JsonSerializer<Order> out = JsonSerializer.create();
    assertEquals(o, ORDERS.deserialize("orders", out.serialize("orders", o)), "round trip");
  }

  @Test
  void aRecordThatDoesNotFitNamesTheFieldAndTheError() {
    assertEquals("not valid JSON for Order on topic [orders] at /quantity: Cannot deserialize value of type `long` "
            + "from String \"three\": not a valid `long` value (line 1, column 40)",
        refusal("{\"orderId\":\"o-1\",\"sku\":\"A7\",\"quantity\":\"three\",\"at\":\"2026-12-03T10:00:00Z\"}"));
    assertEquals("not valid JSON for Order on topic [orders] at /quantity: Cannot map `null` into type `long` (set "
            + "DeserializationConfig.DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES to 'false' to allow) (line 1, "
            + "column 56)",
        refusal("{\"orderId\":\"o-1\",\"sku\":\"A7\",\"at\":\"2026-12-03T10:00:00Z\"}"));
    assertEquals("not valid JSON for Order on topic [orders] at /sku: Null value for creator property 'sku' (index 1); "
            + "`DeserializationFeature.FAIL_ON_NULL_CREATOR_PROPERTIES` enabled (line 1, column 69)",
        refusal("{\"orderId\":\"o-1\",\"sku\":null,\"quantity\":3,\"at\":\"2026-12-03T10:00:00Z\"}"));
  }

  @Test
  void notJsonAnEmptyValueAndJsonNullAreRefusedToo() {
    String garbage = refusal("garbage");
    assertEquals("not valid JSON for Order on topic [orders]: Unrecognized token 'garbage': was expecting (JSON "
        + "String, Number, Array, Object or token 'null', 'true' or 'false') (line 1, column 1)", garbage);
    assertEquals("no JSON for Order on topic [orders]: the value (or key) is empty",
        assertThrows(SerializationException.class, () -> ORDERS.deserialize("orders", new byte[0])).getMessage());
    assertEquals("no JSON for Order on topic [orders]: the record has no value (or key)",
        assertThrows(SerializationException.class, () -> ORDERS.deserialize("orders", null)).getMessage());
    assertEquals("JSON null for Order on topic [orders]", refusal("null"));
    assertEquals("not valid JSON for Order on topic [orders]: Trailing token (of type START_OBJECT) found after value "
        + "(bound as `io.fencepost.kafka.serde.JsonDeserializerTest$Order`): not allowed as per "
        + "`DeserializationFeature.FAIL_ON_TRAILING_TOKENS` (line 1, column 70)",
        refusal("{\"orderId\":\"o-1\",\"sku\":\"A7\",\"quantity\":3,\"at\":\"2026-12-03T10:00:00Z\"}{}"));
  }

  /** Configured as a pipeline or consumer configures it, a refusal names the part it reads. */
  @Test
  void aConfiguredDeserializerSaysWhetherTheKeyOrTheValueWasRefused() {
    JsonDeserializer<Order> keys = JsonDeserializer.of(Order.class);
    keys.configure(Map.of(), true);
    assertEquals("not valid JSON for Order (the record's key) on topic [orders] at /quantity: Cannot deserialize value "
        + "of type `long` from String \"three\": not a valid `long` value (line 1, column 40)",
        assertThrows(SerializationException.class, () -> keys.deserialize("orders",
            json("{\"orderId\":\"o-1\",\"sku\":\"A7\",\"quantity\":\"three\",\"at\":\"2026-12-03T10:00:00Z\"}")))
            .getMessage());
    assertEquals("no JSON for Order (the record's key) on topic [orders]: the record has no key",
        assertThrows(SerializationException.class, () -> keys.deserialize("orders", null)).getMessage());
    JsonDeserializer<Order> values = JsonDeserializer.of(Order.class);
    values.configure(Map.of(), false);
    assertEquals("no JSON for Order on topic [orders]: the value is empty",
        assertThrows(SerializationException.class, () -> values.deserialize("orders", new byte[0])).getMessage());
  }

  @Test
  void anApplicationsOwnMapperIsUsedAsItIs() {
    JsonDeserializer<Order> lenient = JsonDeserializer.of(Order.class, JsonDeserializer.defaultMapper()
        .disable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES));
    assertEquals(0, lenient.deserialize("orders", json("{\"orderId\":\"o-1\",\"sku\":\"A7\",\"at\":\"2026-12-03T10:00:00Z\"}"))
        .quantity(), "a missing primitive is 0 when the application's mapper allows it");
    assertArrayEquals(json("{\"k\":1}"), JsonSerializer.create().serialize("t", Map.of("k", 1)));
  }
}
