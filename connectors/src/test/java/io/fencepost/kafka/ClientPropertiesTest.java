package io.fencepost.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Map;
import java.util.Properties;

import com.typesafe.config.ConfigFactory;
import io.fencepost.errors.SettingsException;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.Test;

/** The framework producers' properties start from Pekko's {@code pekko.kafka.producer.kafka-clients}. */
class ClientPropertiesTest {

  private static Properties producer(String config, Map<String, String> specific) {
    ActorTestKit kit = ActorTestKit.create(ConfigFactory.parseString(config).withFallback(ConfigFactory.load()));
    try {
      PipelineSettings settings = PipelineSettings.create(kit.system(), "ledger")
          .withCommonKafkaClient("client.dns.lookup", "use_all_dns_ips");
      return ClientProperties.producer(kit.system(), settings, specific,
          "fencepost.pipelines.ledger.outbox.producer-kafka-clients");
    } finally {
      kit.shutdownTestKit();
    }
  }

  @Test
  void pekkosProducerClientsComeFirstThenTheCommonThenTheProducersOwnBlock() {
    Properties p = producer("pekko.kafka.producer.kafka-clients { linger.ms = 7, compression.type = lz4, "
        + "client.dns.lookup = default }", Map.of("compression.type", "zstd"));
    assertEquals("7", p.get("linger.ms"), "from pekko.kafka.producer.kafka-clients");
    assertEquals("zstd", p.get("compression.type"), "the producer's own block wins");
    assertEquals("use_all_dns_ips", p.get("client.dns.lookup"), "common-kafka-clients over Pekko's");
    assertEquals("true", p.get("enable.idempotence"));
    assertEquals("all", p.get("acks"));
  }

  @Test
  void anUnsafeValueInPekkosProducerClientsIsRefusedNamingThatBlock() {
    SettingsException e = assertThrows(SettingsException.class,
        () -> producer("pekko.kafka.producer.kafka-clients { acks = 1 }", Map.of()));
    assertEquals("pekko.kafka.producer.kafka-clients.acks", e.key());
  }
}
