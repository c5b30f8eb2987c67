package io.fencepost.kafka;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import io.fencepost.errors.SettingsException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A pipeline's topics, checked when it starts: its source topics exist and can be described with its
 * credentials, and each has a dead-letter topic that takes its largest records (created if missing
 * and allowed). Every refusal is one line naming the setting at fault and the fix.
 */
final class TopicChecks {

  private static final Logger log = LoggerFactory.getLogger(TopicChecks.class);

  private final PipelineSettings settings;
  private final Admin admin;
  private final Map<String, Object> consumerProperties;
  private final DeadLetterPublisher deadLetters;

  TopicChecks(PipelineSettings settings, Admin admin, Map<String, Object> consumerProperties,
      DeadLetterPublisher deadLetters) {
    this.settings = settings;
    this.admin = admin;
    this.consumerProperties = consumerProperties;
    this.deadLetters = deadLetters;
  }

  /** Each topic's max.message.bytes (the broker's default where the topic sets none). */
  private Map<String, Integer> maxMessageBytes(List<String> topics) {
    List<ConfigResource> resources = topics.stream()
        .map(t -> new ConfigResource(ConfigResource.Type.TOPIC, t)).toList();
    try {
      Map<ConfigResource, Config> configs = admin.describeConfigs(resources).all().get(30, TimeUnit.SECONDS);
      Map<String, Integer> out = new HashMap<>();
      configs.forEach((r, c) -> out.put(r.name(), Integer.parseInt(c.get(TopicConfig.MAX_MESSAGE_BYTES_CONFIG).value())));
      return out;
    } catch (Exception e) {
      // Not fatal: dead letters are sized for Kafka's default limit, and a larger one is published
      // without its value (logged).
      log.warn("[{}] cannot read max.message.bytes of topics {} (grant the pipeline's Kafka user DESCRIBE_CONFIGS on "
          + "them): dead letters are sized for Kafka's default of {} bytes: {}", settings.name(), topics,
          KAFKA_DEFAULT_MAX_MESSAGE_BYTES, e.toString());
      Map<String, Integer> out = new HashMap<>();
      topics.forEach(t -> out.put(t, KAFKA_DEFAULT_MAX_MESSAGE_BYTES));
      return out;
    }
  }

  private static final int KAFKA_DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;

  /**
   * Refuses a dead-letter topic that compacts: compaction keeps only the newest dead letter of each
   * record key (the earlier ones are lost), and a dead letter published without its value is a
   * tombstone. Not checked when the topic's configuration cannot be read (logged).
   */
  private void refuseCompacted(String dlt, String key) {
    ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, dlt);
    String policy;
    try {
      policy = admin.describeConfigs(List.of(resource)).all().get(30, TimeUnit.SECONDS).get(resource)
          .get(TopicConfig.CLEANUP_POLICY_CONFIG).value();
    } catch (Exception e) {
      log.warn("[{}] cannot read cleanup.policy of dead-letter topic [{}] (grant DESCRIBE_CONFIGS on it): {}",
          settings.name(), dlt, e.toString());
      return;
    }
    if (List.of(policy.trim().split("\\s*,\\s*")).contains(TopicConfig.CLEANUP_POLICY_COMPACT)) {
      throw new SettingsException(key, settings.deadLetter().topicFor(""), "names dead-letter topic [" + dlt + "], "
          + "which has cleanup.policy=" + policy + ": compaction keeps only the newest dead letter of each key, the "
          + "others would be lost. Set cleanup.policy=delete on it (kafka-configs --alter --entity-type topics "
          + "--entity-name " + dlt + " --add-config cleanup.policy=delete) or choose another suffix");
    }
  }

  /**
   * Source topics must exist; dead-letter topics are created (same partition count) or must exist,
   * and the dead-letter publisher learns their sizes; then it starts.
   */
  void check() {
    String p = "fencepost.pipelines." + settings.name() + ".";
    Map<String, TopicDescription> sources;
    try {
      sources = admin.describeTopics(settings.topics()).allTopicNames().get(30, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof AuthenticationException) {
        // One line naming where credentials are set, never their values.
        throw new SettingsException(p + "common-kafka-clients", "security.protocol="
            + consumerProperties.getOrDefault("security.protocol", "PLAINTEXT") + ", sasl.mechanism="
            + consumerProperties.getOrDefault("sasl.mechanism", "GSSAPI"), "was refused by Kafka at "
            + settings.bootstrapServers() + " (" + e.getCause().getMessage() + "): check the user and password in "
            + "sasl.jaas.config (fencepost.kafka-clients, or this pipeline's common-kafka-clients)");
      }
      if (e.getCause() instanceof AuthorizationException) {
        throw new SettingsException(p + "topics", settings.topics(), "cannot be described by this pipeline's Kafka "
            + "user at " + settings.bootstrapServers() + " (" + e.getCause().getMessage() + "): grant it DESCRIBE and "
            + "READ on the topics and READ on group [" + settings.groupId() + "]");
      }
      throw new SettingsException(p + "topics", settings.topics(), "must name existing topics at "
          + settings.bootstrapServers() + " (" + e.getCause().getMessage() + "): create them or fix the names");
    } catch (Exception e) {
      throw new IllegalStateException("cannot reach Kafka at " + settings.bootstrapServers()
          + " to check topics " + settings.topics() + ": " + e, e);
    }
    Map<String, Integer> maxMessageBytes = maxMessageBytes(settings.topics());
    maxMessageBytes.values().forEach(deadLetters::knowLargestSourceRecord);
    for (String topic : settings.topics()) {
      String dlt = settings.deadLetter().topicFor(topic);
      int partitions = sources.get(topic).partitions().size();
      try {
        int existing = admin.describeTopics(List.of(dlt)).allTopicNames().get(30, TimeUnit.SECONDS)
            .get(dlt).partitions().size();
        refuseCompacted(dlt, p + "dead-letter.topic-suffix");
        deadLetters.knowPartitions(dlt, existing);
        int dltMax = maxMessageBytes(List.of(dlt)).get(dlt);
        int needed = DeadLetterPublisher.deadLetterTopicMaxMessageBytes(maxMessageBytes.get(topic));
        if (dltMax < needed) {
          log.warn("[{}] dead-letter topic [{}] takes records up to {} bytes (max.message.bytes), [{}] up to {}: a "
              + "dead letter larger than that is published without its value (ERROR then). Set max.message.bytes of "
              + "[{}] to {}", settings.name(), dlt, dltMax, topic, maxMessageBytes.get(topic), dlt, needed);
        }
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
          throw new IllegalStateException("cannot check dead-letter topic [" + dlt + "]: " + e.getCause(), e);
        }
        if (!settings.deadLetter().createTopic()) {
          throw new SettingsException(p + "dead-letter.create-topic", false, "is off and dead-letter topic [" + dlt
              + "] does not exist: create it with " + partitions + " partitions, or turn the setting on");
        }
        try {
          // Every record of the source fits, with the headers a dead letter adds.
          String dltMax = Integer.toString(DeadLetterPublisher.deadLetterTopicMaxMessageBytes(maxMessageBytes.get(topic)));
          admin.createTopics(List.of(new NewTopic(dlt, partitions, (short) -1)
                  .configs(Map.of(TopicConfig.MAX_MESSAGE_BYTES_CONFIG, dltMax,
                      // whatever the brokers' default log.cleanup.policy: compaction would drop dead letters
                      TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_DELETE))))
              .all().get(30, TimeUnit.SECONDS);
          log.info("[{}] created dead-letter topic [{}] with {} partitions, max.message.bytes {}", settings.name(), dlt,
              partitions, dltMax);
        } catch (ExecutionException ce) {
          if (!(ce.getCause() instanceof TopicExistsException)) {
            throw new IllegalStateException("cannot create dead-letter topic [" + dlt + "]: " + ce.getCause()
                + "; create it by hand or grant the pipeline CREATE on it", ce);
          }
        } catch (Exception ce) {
          throw new IllegalStateException("cannot create dead-letter topic [" + dlt + "]: " + ce, ce);
        }
        deadLetters.knowPartitions(dlt, partitions);
      } catch (SettingsException e) {
        throw e;   // a refused topic names its setting and the fix
      } catch (Exception e) {
        throw new IllegalStateException("cannot check dead-letter topic [" + dlt + "]: " + e, e);
      }
    }
    deadLetters.start();
  }
}
