package io.fencepost.kafka.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Properties;

import io.fencepost.errors.SettingsException;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

class ProducerSafetyTest {

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "enable.idempotence | false | without idempotence a retried send is stored twice",
      "acks | 1 | must be all",
      "acks | 0 | must be all",
      "max.in.flight.requests.per.connection | 6 | more than 5 disables",
      "max.in.flight.requests.per.connection | many | integer between 1 and 5",
      "retries | 0 | must not be 0",
      "transactional.id | tx-1 | not transactional"})
  void unsafeProducerSettingsAreRefusedNamingTheKey(String key, String value, String rule) {
    SettingsException e = assertThrows(SettingsException.class,
        () -> ProducerSafety.safeProperties("k:9092", Map.of(key, value), "fencepost.pipelines.ledger.dead-letter.producer-kafka-clients"));
    assertEquals("fencepost.pipelines.ledger.dead-letter.producer-kafka-clients." + key, e.key());
    assertTrue(e.getMessage().contains(rule), e.getMessage());
  }

  @Test
  void safeSettingsAreSetExplicitlyAndHarmlessOverridesPassThrough() {
    Properties p = ProducerSafety.safeProperties("k:9092", Map.of("linger.ms", "7", "acks", "-1",
        "max.in.flight.requests.per.connection", "2"), "x");
    assertEquals("true", p.get("enable.idempotence"));
    assertEquals("all", p.get("acks"));
    assertEquals("2", p.get("max.in.flight.requests.per.connection"));
    assertEquals("7", p.get("linger.ms"));
    assertEquals("k:9092", p.get("bootstrap.servers"));
    assertEquals("5", ProducerSafety.safeProperties("k:9092", Map.of(), "x").get("max.in.flight.requests.per.connection"));
  }
}
