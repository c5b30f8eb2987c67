package io.fencepost.kafka;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import io.fencepost.errors.SettingsException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What an exactly-once outbox relay needs of the Kafka cluster, checked when the pipeline starts:
 * brokers that can run transactions, and a compacted position topic (created when missing). Each
 * refusal is one line naming the setting at fault and the fix.
 */
final class TransactionChecks {

  private static final Logger log = LoggerFactory.getLogger(TransactionChecks.class);
  /**
   * Partitions of a position topic the pipeline creates (as Kafka Connect's offsets topic), and the
   * fewest a position topic may have: relays key their positions over this many.
   */
  static final int POSITION_TOPIC_PARTITIONS = 25;

  private final PipelineSettings settings;
  private final Admin admin;

  TransactionChecks(PipelineSettings settings, Admin admin) {
    this.settings = settings;
    this.admin = admin;
  }

  /** Refuses a cluster the relay could not run transactions on; creates the position topic when missing. */
  void check() {
    if (!settings.outbox().enabled() || settings.outbox().delivery() != OutboxSettings.Delivery.EXACTLY_ONCE) {
      return;
    }
    checkTransactionLog();
    ensurePositionTopic();
  }

  private void checkTransactionLog() {
    Collection<Node> brokers;
    Config config;
    try {
      brokers = admin.describeCluster().nodes().get(30, TimeUnit.SECONDS);
      ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER,
          Integer.toString(brokers.iterator().next().id()));
      config = admin.describeConfigs(List.of(broker)).all().get(30, TimeUnit.SECONDS).get(broker);
    } catch (Exception e) {
      // Not fatal: without DESCRIBE_CONFIGS on the cluster the relay reports it when it starts its producer.
      log.warn("[{}] cannot read the brokers' transaction settings ({}); an exactly-once outbox relay that cannot "
          + "start a transaction says so when it starts", settings.name(), e.toString());
      return;
    }
    int replicas = intValue(config, "transaction.state.log.replication.factor");
    int minIsr = intValue(config, "transaction.state.log.min.isr");
    String p = "fencepost.pipelines." + settings.name() + ".outbox.delivery";
    if (replicas > brokers.size()) {
      throw new SettingsException(p, "exactly-once", "needs Kafka transactions, which these brokers cannot run: "
          + "their transaction.state.log.replication.factor is " + replicas + " but the cluster has " + brokers.size()
          + " broker(s), so the transaction log is never created. Set transaction.state.log.replication.factor (and "
          + "transaction.state.log.min.isr) to at most " + brokers.size() + " on the brokers, or use at-least-once");
    }
    if (minIsr > brokers.size()) {
      throw new SettingsException(p, "exactly-once", "needs Kafka transactions, which these brokers cannot run: "
          + "their transaction.state.log.min.isr is " + minIsr + " but the cluster has " + brokers.size()
          + " broker(s). Set it to at most " + brokers.size() + " on the brokers, or use at-least-once");
    }
  }

  private static int intValue(Config config, String name) {
    ConfigEntry entry = config == null ? null : config.get(name);
    return entry == null || entry.value() == null ? 1 : Integer.parseInt(entry.value());
  }

  private void ensurePositionTopic() {
    String topic = settings.outbox().positionTopic();
    String key = "fencepost.pipelines." + settings.name() + ".outbox.position-topic";
    ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
    try {
      Config config = admin.describeConfigs(List.of(resource)).all().get(30, TimeUnit.SECONDS).get(resource);
      String policy = config.get(TopicConfig.CLEANUP_POLICY_CONFIG).value();
      List<String> policies = List.of(policy.trim().split("\\s*,\\s*"));
      if (!policies.contains(TopicConfig.CLEANUP_POLICY_COMPACT) || policies.contains(TopicConfig.CLEANUP_POLICY_DELETE)) {
        throw new SettingsException(key, topic, "has cleanup.policy=" + policy + ": the relays' positions would "
            + "expire, and a relay would then publish again what it published. Set cleanup.policy=compact on it "
            + "(kafka-configs --alter --entity-type topics --entity-name " + topic + " --add-config "
            + "cleanup.policy=compact) or name another topic");
      }
      int partitions = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic)
          .partitions().size();
      if (partitions < POSITION_TOPIC_PARTITIONS) {
        throw new SettingsException(key, topic, "has " + partitions + " partition(s): it needs at least "
            + POSITION_TOPIC_PARTITIONS + ", since each relay keeps its position in the partition its key hashes to "
            + "over " + POSITION_TOPIC_PARTITIONS + ". Add partitions (kafka-topics --alter --topic " + topic
            + " --partitions " + POSITION_TOPIC_PARTITIONS + ") or name another topic");
      }
      return;
    } catch (ExecutionException e) {
      if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
        throw new IllegalStateException("[" + settings.name() + "] cannot describe the outbox position topic [" + topic
            + "] (" + key + "): " + e.getCause() + "; grant the pipeline's Kafka user DESCRIBE and DESCRIBE_CONFIGS on "
            + "it", e);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    } catch (java.util.concurrent.TimeoutException e) {
      throw new IllegalStateException("[" + settings.name() + "] cannot describe the outbox position topic [" + topic
          + "] within 30 s", e);
    }
    try {
      // As durable as the transaction log: a position rolled back by losing a replica publishes again.
      int brokers = admin.describeCluster().nodes().get(30, TimeUnit.SECONDS).size();
      short replicas = (short) Math.min(3, brokers);
      admin.createTopics(List.of(new NewTopic(topic, POSITION_TOPIC_PARTITIONS, replicas).configs(Map.of(
          TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_COMPACT,
          TopicConfig.SEGMENT_MS_CONFIG, "3600000",
          TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG, Integer.toString(Math.min(2, replicas)),
          TopicConfig.UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG, "false"))))
          .all().get(30, TimeUnit.SECONDS);
      log.info("[{}] created the outbox position topic [{}] ({} partitions, replication factor {}, "
          + "cleanup.policy=compact)", settings.name(), topic, POSITION_TOPIC_PARTITIONS, replicas);
    } catch (ExecutionException e) {
      if (!(e.getCause() instanceof TopicExistsException)) {
        throw new IllegalStateException("[" + settings.name() + "] cannot create the outbox position topic [" + topic
            + "] (" + key + "): " + e.getCause() + "; create it (cleanup.policy=compact) or grant the pipeline's "
            + "Kafka user CREATE on it", e);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    } catch (java.util.concurrent.TimeoutException e) {
      throw new IllegalStateException("[" + settings.name() + "] cannot create the outbox position topic [" + topic
          + "] within 30 s", e);
    }
  }
}
