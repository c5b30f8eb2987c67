package io.fencepost.kafka;

import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import io.fencepost.kafka.internal.ProducerSafety;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.kafka.ConsumerSettings;
import org.apache.pekko.kafka.ProducerSettings;

/**
 * A pipeline's Kafka client properties, built once when it starts: the consumer's (over Pekko's
 * {@code ConsumerSettings}), and from them those of the admin client and the log probe, which connect
 * as the consumer does; and its producers' (over Pekko's {@code ProducerSettings}).
 */
final class ClientProperties {

  private static final AtomicLong PROBES = new AtomicLong();

  private final Map<String, Object> consumer;
  private final PipelineSettings settings;

  ClientProperties(ActorSystem<?> system, PipelineSettings settings) {
    this.settings = settings;
    this.consumer = consumer(system, settings);
  }

  /**
   * The consumer's properties: Pekko's {@code pekko.kafka.consumer.kafka-clients}, then the
   * pipeline's {@code common-kafka-clients}, then its {@code kafka-clients}; offsets never
   * auto-committed; cooperative rebalancing unless an assignor is configured.
   */
  static Map<String, Object> consumer(ActorSystem<?> system, PipelineSettings settings) {
    Map<String, Object> props = new HashMap<>(
        ConsumerSettings.create(system, new ByteArrayDeserializer(), new ByteArrayDeserializer()).getProperties());
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, CooperativeStickyAssignor.class.getName());
    // New partitions and recreated topics are seen within 30 s (Kafka's default is 5 minutes).
    props.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "30000");
    props.putAll(settings.commonKafkaClients());
    props.putAll(settings.kafkaClients());
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, settings.bootstrapServers());
    props.put(ConsumerConfig.GROUP_ID_CONFIG, settings.groupId());
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, settings.autoOffsetReset().configValue());
    return props;
  }

  /** The consumer's properties (security settings included). */
  Map<String, Object> consumer() {
    return consumer;
  }

  /**
   * The log probe's, a consumer of its own that reads ranges of a partition: the consumer's security,
   * isolation and DNS settings, no group, no commits.
   */
  Map<String, Object> probe() {
    Map<String, Object> props = new HashMap<>();
    consumer.forEach((k, v) -> {
      if (isSecuritySetting(k) || k.equals(ConsumerConfig.ISOLATION_LEVEL_CONFIG)
          || k.equals(ConsumerConfig.CLIENT_DNS_LOOKUP_CONFIG)) {
        props.put(k, String.valueOf(v));
      }
    });
    props.putIfAbsent(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, settings.bootstrapServers());
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    props.remove(ConsumerConfig.GROUP_ID_CONFIG);
    props.put(ConsumerConfig.CLIENT_ID_CONFIG, "fencepost-log-probe-" + settings.name() + "-" + PROBES.incrementAndGet());
    return props;
  }

  /** The admin client's: the common client properties and the consumer's security settings. */
  Map<String, Object> admin() {
    Map<String, Object> props = new HashMap<>(settings.commonKafkaClients());
    consumer.forEach((k, v) -> {
      if (isSecuritySetting(k)) {
        props.put(k, String.valueOf(v));
      }
    });
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, settings.bootstrapServers());
    return props;
  }

  /**
   * A framework producer's properties (dead letters, outbox relays), from the most general to the
   * most specific: Pekko's {@code pekko.kafka.producer.kafka-clients} (the producers' configuration
   * Pekko users know), the pipeline's {@code common-kafka-clients}, then {@code specific} (the
   * producer's own block, named {@code key} in errors); validated so that none of them switches off
   * idempotence or weakens acknowledgements.
   */
  static Properties producer(ActorSystem<?> system, PipelineSettings settings, Map<String, String> specific,
      String key) {
    Map<String, String> pekko = new TreeMap<>();
    ProducerSettings.create(system, new ByteArraySerializer(), new ByteArraySerializer()).getProperties()
        .forEach((k, v) -> pekko.put(k, String.valueOf(v)));
    ProducerSafety.check(pekko, "pekko.kafka.producer.kafka-clients");
    Map<String, String> merged = new TreeMap<>(pekko);
    merged.putAll(settings.producerClients(specific));
    return ProducerSafety.safeProperties(settings.bootstrapServers(), merged, key);
  }

  /** Whether a client property is part of how a client connects securely ({@code security.*}, {@code sasl.*}, {@code ssl.*}). */
  static boolean isSecuritySetting(String key) {
    return key.startsWith("security.") || key.startsWith("sasl.") || key.startsWith("ssl.");
  }
}
