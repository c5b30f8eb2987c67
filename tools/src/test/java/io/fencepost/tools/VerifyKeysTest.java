package io.fencepost.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.function.Function;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

/** {@code fencepost verify --business-key}'s json: and class: forms, over raw records. */
class VerifyKeysTest {

  private static ConsumerRecord<byte[], byte[]> record(String value) {
    return new ConsumerRecord<>("orders", 0, 7, "k".getBytes(StandardCharsets.UTF_8),
        value == null ? null : value.getBytes(StandardCharsets.UTF_8));
  }

  /** A service's own key function: the text after "id=". */
  public static final class AfterId implements Function<ConsumerRecord<byte[], byte[]>, Optional<String>> {
    @Override
    public Optional<String> apply(ConsumerRecord<byte[], byte[]> r) {
      String v = new String(r.value(), StandardCharsets.UTF_8);
      return v.startsWith("id=") ? Optional.of(v.substring(3)) : Optional.empty();
    }
  }

  /** One that returns the key as a string (null: none). */
  public static final class PlainText implements Function<ConsumerRecord<byte[], byte[]>, String> {
    @Override
    public String apply(ConsumerRecord<byte[], byte[]> r) {
      return r.offset() == 7 ? "seven" : null;
    }
  }

  @Test
  void aJsonPointerTakesTheFieldsTextAndNoKeyWhenItIsNotThere() {
    Function<ConsumerRecord<byte[], byte[]>, Optional<String>> keys = VerifyCommand.keys("json:/orderId");
    assertEquals(Optional.of("o-1"), keys.apply(record("{\"orderId\":\"o-1\",\"sku\":\"A7\"}")));
    assertEquals(Optional.of("42"), keys.apply(record("{\"orderId\":42}")), "a number as written");
    assertEquals(Optional.empty(), keys.apply(record("{\"sku\":\"A7\"}")), "absent");
    assertEquals(Optional.empty(), keys.apply(record("{\"orderId\":null}")), "null");
    assertEquals(Optional.empty(), keys.apply(record("{\"orderId\":\"\"}")), "empty, as for the actors");
    assertEquals(Optional.empty(), keys.apply(record("{\"orderId\":{\"a\":1}}")), "an object is no key");
    assertEquals(Optional.empty(), keys.apply(record("not json")), "not JSON");
    assertEquals(Optional.empty(), keys.apply(record(null)), "a tombstone");
    assertEquals(Optional.of("n-3"), VerifyCommand.keys("json:/order/ids/1")
        .apply(record("{\"order\":{\"ids\":[\"n-2\",\"n-3\"]}}")), "nested, into an array");
  }

  @Test
  void aBadPointerIsAUsageErrorNamingTheForm() {
    Flags.UsageError notAPointer = assertThrows(Flags.UsageError.class, () -> VerifyCommand.keys("json:orderId"));
    assertEquals("verify: --business-key json:orderId: not a JSON pointer (RFC 6901: /field, /nested/field, "
        + "/array/0): Invalid input: JSON Pointer expression must start with '/': \"orderId\"", notAPointer.getMessage());
    Flags.UsageError whole = assertThrows(Flags.UsageError.class, () -> VerifyCommand.keys("json:"));
    assertEquals("verify: --business-key json: names the whole value; name a field, e.g. json:/orderId",
        whole.getMessage());
  }

  @Test
  void aClassOfTheServicesOwnIsLoadedAndItsOptionalOrTextIsTheKey() {
    assertEquals(Optional.of("o-9"), VerifyCommand.keys("class:" + AfterId.class.getName()).apply(record("id=o-9")));
    assertEquals(Optional.empty(), VerifyCommand.keys("class:" + AfterId.class.getName()).apply(record("x")));
    assertEquals(Optional.of("seven"), VerifyCommand.keys("class:" + PlainText.class.getName()).apply(record("x")));
  }

  @Test
  void aClassThatIsMissingOrNoFunctionIsAUsageError() {
    assertEquals("verify: --business-key class:com.example.Nope: no such class on the classpath (put the service's "
        + "jar on --classpath)", assertThrows(Flags.UsageError.class,
            () -> VerifyCommand.keys("class:com.example.Nope")).getMessage());
    assertEquals("verify: --business-key class:java.lang.Object must implement java.util.function.Function"
        + "<ConsumerRecord<byte[], byte[]>, Optional<String>>, is a java.lang.Object", assertThrows(
            Flags.UsageError.class, () -> VerifyCommand.keys("class:java.lang.Object")).getMessage());
  }
}
