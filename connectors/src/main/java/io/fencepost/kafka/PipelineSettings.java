package io.fencepost.kafka;

import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValue;
import io.fencepost.PartitionActorSettings;
import io.fencepost.errors.SettingsException;
import org.apache.pekko.actor.typed.ActorSystem;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Immutable settings of one Kafka pipeline, read from {@code fencepost.pipelines.<name>} with
 * fallback to {@code fencepost.pipeline} (every key documented in the connectors' reference.conf),
 * and validated on creation: settings that would silently weaken the guarantee are refused with a
 * {@link SettingsException} naming the key and the fix.
 */
public final class PipelineSettings {

  private static final Logger log = LoggerFactory.getLogger(PipelineSettings.class);

  private final String name;
  private final String bootstrapServers;
  private final List<String> topics;
  private final String groupId;
  private final String autoOffsetReset;
  private final int maxBatchRecords;
  private final Duration maxBatchLatency;
  private final Duration askTimeout;
  private final Duration retryBackoffMin;
  private final Duration retryBackoffMax;
  private final int commitMaxBatch;
  private final Duration commitMaxInterval;
  private final Duration drainTimeout;
  private final Map<String, String> kafkaClients;
  private final PartitionActorSettings partitionActor;
  private final Duration handlerRetryInitial;
  private final Duration handlerRetryMax;
  private final double handlerRetryMultiplier;
  private final int handlerRetryMaxAttempts;
  private final String deadLetterSuffix;
  private final boolean deadLetterCreateTopic;
  private final int deadLetterMaxRecordBytes;
  private final Map<String, String> deadLetterProducer;
  private final Extra extra;
  private final Duration stallTimeout;

  /** The settings read from configuration that only the copy methods pass along unchanged. */
  private record Extra(Duration retryInitial, Duration retryMax, double retryMultiplier, int retryMaxAttempts,
      String dltSuffix, boolean dltCreate, int dltMaxBytes, Map<String, String> dltProducer, Duration stallTimeout,
      OutboxSettings outbox) {
  }

  private PipelineSettings(String name, String bootstrapServers, List<String> topics, String groupId,
      String autoOffsetReset, int maxBatchRecords, Duration maxBatchLatency, Duration askTimeout,
      Duration retryBackoffMin, Duration retryBackoffMax, int commitMaxBatch,
      Duration commitMaxInterval, Duration drainTimeout, Map<String, String> kafkaClients,
      PartitionActorSettings partitionActor, Extra extra) {
    String p = "fencepost.pipelines." + name + ".";
    this.handlerRetryInitial = positive(p + "handler-retry.initial", extra.retryInitial());
    this.handlerRetryMax = positive(p + "handler-retry.max", extra.retryMax());
    if (extra.retryMax().compareTo(extra.retryInitial()) < 0) {
      throw new SettingsException(p + "handler-retry.max", extra.retryMax(),
          "must be >= handler-retry.initial [" + extra.retryInitial() + "]");
    }
    if (!(extra.retryMultiplier() >= 1.0)) {
      throw new SettingsException(p + "handler-retry.multiplier", extra.retryMultiplier(), "must be >= 1.0");
    }
    this.handlerRetryMultiplier = extra.retryMultiplier();
    this.handlerRetryMaxAttempts = positive(p + "handler-retry.max-attempts", extra.retryMaxAttempts());
    if (extra.dltSuffix().isEmpty()) {
      throw new SettingsException(p + "dead-letter.topic-suffix", "", "must not be empty (the source topic itself)");
    }
    this.deadLetterSuffix = extra.dltSuffix();
    this.deadLetterCreateTopic = extra.dltCreate();
    this.deadLetterMaxRecordBytes = positive(p + "dead-letter.max-record-bytes", extra.dltMaxBytes());
    io.fencepost.kafka.internal.ProducerSafety.check(extra.dltProducer(), p + "dead-letter.producer-kafka-clients");
    this.deadLetterProducer = Map.copyOf(extra.dltProducer());
    this.stallTimeout = positive(p + "stall-timeout", extra.stallTimeout());
    this.extra = extra;
    this.name = name;
    this.bootstrapServers = Objects.requireNonNull(bootstrapServers, "bootstrapServers");
    for (String t : topics) {
      if (t.isBlank() || t.contains("|")) {
        throw new SettingsException(p + "topics", topics, "must hold non-empty topic names without '|'");
      }
    }
    this.topics = List.copyOf(topics);
    this.groupId = groupId.isEmpty() ? name : groupId;
    if (this.groupId.contains("|")) {
      throw new SettingsException(p + "group-id", groupId, "must not contain '|'");
    }
    String reset = autoOffsetReset.toLowerCase(Locale.ROOT);
    if (!reset.equals("earliest") && !reset.equals("latest")) {
      throw new SettingsException(p + "auto-offset-reset", autoOffsetReset, "must be earliest or latest");
    }
    this.autoOffsetReset = reset;
    this.maxBatchRecords = positive(p + "batch.max-records", maxBatchRecords);
    this.maxBatchLatency = positive(p + "batch.max-latency", maxBatchLatency);
    this.askTimeout = positive(p + "ask-timeout", askTimeout);
    if (askTimeout.compareTo(maxBatchLatency) <= 0) {
      throw new SettingsException(p + "ask-timeout", askTimeout,
          "must be longer than batch.max-latency [" + maxBatchLatency + "], or every batch times out");
    }
    this.retryBackoffMin = positive(p + "retry-backoff.min", retryBackoffMin);
    this.retryBackoffMax = positive(p + "retry-backoff.max", retryBackoffMax);
    if (retryBackoffMax.compareTo(retryBackoffMin) < 0) {
      throw new SettingsException(p + "retry-backoff.max", retryBackoffMax,
          "must be >= retry-backoff.min [" + retryBackoffMin + "]");
    }
    this.commitMaxBatch = positive(p + "commit.max-batch", commitMaxBatch);
    this.commitMaxInterval = positive(p + "commit.max-interval", commitMaxInterval);
    this.drainTimeout = positive(p + "drain-timeout", drainTimeout);
    this.kafkaClients = Map.copyOf(kafkaClients);
    String autoCommit = kafkaClients.get("enable.auto.commit");
    if (autoCommit != null && autoCommit.trim().equalsIgnoreCase("true")) {
      throw new SettingsException(p + "kafka-clients.enable.auto.commit", autoCommit,
          "must not be true: auto-commit records progress before effects are durable (at-most-once in disguise); "
              + "remove it, Fencepost commits after each journal write");
    }
    if (kafkaClients.containsKey("group.id")) {
      throw new SettingsException(p + "kafka-clients.group.id", kafkaClients.get("group.id"),
          "must not be set here; use " + p + "group-id");
    }
    this.partitionActor = Objects.requireNonNull(partitionActor, "partitionActor");
    if (partitionActor.callTimeout().compareTo(askTimeout) >= 0) {
      throw new SettingsException(p + "partition-actor.external-call.timeout", partitionActor.callTimeout(),
          "must be shorter than ask-timeout [" + askTimeout + "]: a batch waiting for its external call would "
              + "time out and be resent while the call runs");
    }
  }

  /**
   * Checks what has no default (bootstrap servers, topics); called when a pipeline is created, so
   * settings can be completed with {@code withX} first.
   */
  PipelineSettings requireComplete() {
    String p = "fencepost.pipelines." + name + ".";
    if (bootstrapServers.isBlank()) {
      throw new SettingsException(p + "bootstrap-servers", bootstrapServers,
          "must be set to host:port[,host:port] (or call withBootstrapServers)");
    }
    if (topics.isEmpty()) {
      throw new SettingsException(p + "topics", topics, "must name at least one topic (or call withTopics)");
    }
    return this;
  }

  private static int positive(String key, int v) {
    if (v <= 0) {
      throw new SettingsException(key, v, "must be > 0");
    }
    return v;
  }

  static Duration positive(String key, Duration v) {
    if (v.isZero() || v.isNegative()) {
      throw new SettingsException(key, v, "must be > 0");
    }
    return v;
  }

  /** The settings of pipeline {@code name} from the system's configuration. */
  public static PipelineSettings create(ActorSystem<?> system, String name) {
    return create(system.settings().config(), name);
  }

  /** The settings of pipeline {@code name} from a root configuration. */
  public static PipelineSettings create(Config root, String name) {
    if (name == null || !name.matches("[A-Za-z0-9][A-Za-z0-9_-]*")) {
      throw new SettingsException("pipeline name", name, "must be letters, digits, '-' or '_'");
    }
    String own = "fencepost.pipelines." + name;
    Config section = (root.hasPath("fencepost.pipelines.\"" + name + "\"")
        ? root.getConfig("fencepost.pipelines.\"" + name + "\"") : ConfigFactory.empty())
        .withFallback(root.getConfig("fencepost.pipeline"));
    String key = null;
    try {
      key = "partition-actor";
      Config actorSection = section.getConfig(key).withFallback(root.getConfig(PartitionActorSettings.CONFIG_PATH));
      PartitionActorSettings actor = PartitionActorSettings.fromSection(actorSection, own + ".partition-actor");
      key = "kafka-clients";
      Map<String, String> clients = new TreeMap<>();
      for (Map.Entry<String, ConfigValue> e : section.getConfig(key).entrySet()) {
        clients.put(e.getKey().replace("\"", ""), String.valueOf(e.getValue().unwrapped()));
      }
      key = "bootstrap-servers";
      String bootstrap = section.getString(key);
      key = "topics";
      List<String> topics = section.getStringList(key);
      key = "group-id";
      String group = section.getString(key);
      key = "auto-offset-reset";
      String reset = section.getString(key);
      key = "batch.max-records";
      int maxRecords = section.getInt(key);
      key = "batch.max-latency";
      Duration maxLatency = section.getDuration(key);
      key = "ask-timeout";
      Duration ask = section.getDuration(key);
      key = "retry-backoff.min";
      Duration min = section.getDuration(key);
      key = "retry-backoff.max";
      Duration max = section.getDuration(key);
      if (section.hasPath("shard-handoff-timeout")) {
        log.warn("{}.shard-handoff-timeout is no longer read: a partition's actor runs on the node Kafka assigned "
            + "the partition to, without a hand-off to wait for; remove the setting", own);
      }
      key = "commit.max-batch";
      int commitBatch = section.getInt(key);
      key = "commit.max-interval";
      Duration commitInterval = section.getDuration(key);
      key = "drain-timeout";
      Duration drain = section.getDuration(key);
      key = "handler-retry.initial";
      Duration retryInitial = section.getDuration(key);
      key = "handler-retry.max";
      Duration retryMax = section.getDuration(key);
      key = "handler-retry.multiplier";
      double multiplier = section.getDouble(key);
      key = "handler-retry.max-attempts";
      int attempts = section.getInt(key);
      key = "dead-letter.topic-suffix";
      String suffix = section.getString(key);
      key = "dead-letter.create-topic";
      boolean create = section.getBoolean(key);
      key = "dead-letter.max-record-bytes";
      int maxBytes = section.getInt(key);
      key = "dead-letter.producer-kafka-clients";
      Map<String, String> producer = new TreeMap<>();
      for (Map.Entry<String, ConfigValue> e : section.getConfig(key).entrySet()) {
        producer.put(e.getKey().replace("\"", ""), String.valueOf(e.getValue().unwrapped()));
      }
      key = "stall-timeout";
      Duration stall = section.getDuration(key);
      key = "outbox";
      OutboxSettings outbox = OutboxSettings.fromSection(section.getConfig(key), own + ".outbox");
      return new PipelineSettings(name, bootstrap, topics, group, reset, maxRecords, maxLatency, ask, min, max,
          commitBatch, commitInterval, drain, clients, actor,
          new Extra(retryInitial, retryMax, multiplier, attempts, suffix, create, maxBytes, producer, stall, outbox));
    } catch (ConfigException.WrongType | ConfigException.BadValue e) {
      throw new SettingsException(own + "." + key, "?", "has the wrong type or format (" + e.getMessage() + ")");
    } catch (ConfigException.Missing e) {
      throw new SettingsException(own + "." + key, "missing", "must be set (see reference.conf)");
    }
  }

  private PipelineSettings copy(String bootstrap, List<String> topics, String group, int maxRecords,
      Duration maxLatency, Map<String, String> clients, PartitionActorSettings actor) {
    return new PipelineSettings(name, bootstrap, topics, group, autoOffsetReset, maxRecords, maxLatency, askTimeout,
        retryBackoffMin, retryBackoffMax, commitMaxBatch, commitMaxInterval, drainTimeout,
        clients, actor, extra);
  }

  public PipelineSettings withBootstrapServers(String value) {
    return copy(value, topics, groupId, maxBatchRecords, maxBatchLatency, kafkaClients, partitionActor);
  }

  public PipelineSettings withTopics(List<String> value) {
    return copy(bootstrapServers, value, groupId, maxBatchRecords, maxBatchLatency, kafkaClients, partitionActor);
  }

  public PipelineSettings withGroupId(String value) {
    return copy(bootstrapServers, topics, value, maxBatchRecords, maxBatchLatency, kafkaClients, partitionActor);
  }

  public PipelineSettings withBatch(int maxRecords, Duration maxLatency) {
    return copy(bootstrapServers, topics, groupId, maxRecords, maxLatency, kafkaClients, partitionActor);
  }

  public PipelineSettings withKafkaClient(String key, String value) {
    Map<String, String> m = new TreeMap<>(kafkaClients);
    m.put(key, value);
    return copy(bootstrapServers, topics, groupId, maxBatchRecords, maxBatchLatency, m, partitionActor);
  }

  public PipelineSettings withPartitionActor(PartitionActorSettings value) {
    return copy(bootstrapServers, topics, groupId, maxBatchRecords, maxBatchLatency, kafkaClients, value);
  }

  public String name() {
    return name;
  }

  public String bootstrapServers() {
    return bootstrapServers;
  }

  public List<String> topics() {
    return topics;
  }

  public String groupId() {
    return groupId;
  }

  public String autoOffsetReset() {
    return autoOffsetReset;
  }

  public int maxBatchRecords() {
    return maxBatchRecords;
  }

  public Duration maxBatchLatency() {
    return maxBatchLatency;
  }

  public Duration askTimeout() {
    return askTimeout;
  }

  public Duration retryBackoffMin() {
    return retryBackoffMin;
  }

  public Duration retryBackoffMax() {
    return retryBackoffMax;
  }

  public int commitMaxBatch() {
    return commitMaxBatch;
  }

  public Duration commitMaxInterval() {
    return commitMaxInterval;
  }

  public Duration drainTimeout() {
    return drainTimeout;
  }

  /** Pass-through KafkaConsumer properties. */
  public Map<String, String> kafkaClients() {
    return kafkaClients;
  }

  public PartitionActorSettings partitionActor() {
    return partitionActor;
  }

  public Duration handlerRetryInitial() {
    return handlerRetryInitial;
  }

  public Duration handlerRetryMax() {
    return handlerRetryMax;
  }

  public double handlerRetryMultiplier() {
    return handlerRetryMultiplier;
  }

  /** Attempts in all (the first included) before a retriable handler failure is dead-lettered. */
  public int handlerRetryMaxAttempts() {
    return handlerRetryMaxAttempts;
  }

  /** How long an assigned partition with records to read may make no progress before the consumer restarts. */
  public Duration stallTimeout() {
    return stallTimeout;
  }

  /** The dead-letter topic of {@code topic}. */
  public String deadLetterTopic(String topic) {
    return topic + deadLetterSuffix;
  }

  public boolean deadLetterCreateTopic() {
    return deadLetterCreateTopic;
  }

  public int deadLetterMaxRecordBytes() {
    return deadLetterMaxRecordBytes;
  }

  /** Pass-through properties of the dead-letter producer (already validated). */
  public Map<String, String> deadLetterProducer() {
    return deadLetterProducer;
  }

  /** A copy with another handler-retry policy. */
  public PipelineSettings withHandlerRetry(Duration initial, Duration max, double multiplier, int maxAttempts) {
    return new PipelineSettings(name, bootstrapServers, topics, groupId, autoOffsetReset, maxBatchRecords,
        maxBatchLatency, askTimeout, retryBackoffMin, retryBackoffMax, commitMaxBatch,
        commitMaxInterval, drainTimeout, kafkaClients, partitionActor, new Extra(initial, max, multiplier,
        maxAttempts, deadLetterSuffix, deadLetterCreateTopic, deadLetterMaxRecordBytes, deadLetterProducer,
        stallTimeout, extra.outbox()));
  }

  /** A copy with another dead-letter policy. */
  public PipelineSettings withDeadLetter(String topicSuffix, boolean createTopic, int maxRecordBytes) {
    return new PipelineSettings(name, bootstrapServers, topics, groupId, autoOffsetReset, maxBatchRecords,
        maxBatchLatency, askTimeout, retryBackoffMin, retryBackoffMax, commitMaxBatch,
        commitMaxInterval, drainTimeout, kafkaClients, partitionActor, new Extra(handlerRetryInitial, handlerRetryMax,
        handlerRetryMultiplier, handlerRetryMaxAttempts, topicSuffix, createTopic, maxRecordBytes, deadLetterProducer,
        stallTimeout, extra.outbox()));
  }

  /** The outbox relay's settings. */
  public OutboxSettings outbox() {
    return extra.outbox();
  }

  /** A copy with other outbox relay settings. */
  public PipelineSettings withOutbox(OutboxSettings value) {
    Extra e = extra;
    return new PipelineSettings(name, bootstrapServers, topics, groupId, autoOffsetReset, maxBatchRecords,
        maxBatchLatency, askTimeout, retryBackoffMin, retryBackoffMax, commitMaxBatch,
        commitMaxInterval, drainTimeout, kafkaClients, partitionActor, new Extra(e.retryInitial(), e.retryMax(),
        e.retryMultiplier(), e.retryMaxAttempts(), e.dltSuffix(), e.dltCreate(), e.dltMaxBytes(), e.dltProducer(),
        e.stallTimeout(), Objects.requireNonNull(value, "outbox")));
  }

  @Override
  public String toString() {
    return "PipelineSettings(name=" + name + ", bootstrapServers=" + bootstrapServers + ", topics=" + topics
        + ", groupId=" + groupId + ", autoOffsetReset=" + autoOffsetReset + ", batch=" + maxBatchRecords + "/"
        + maxBatchLatency + ", askTimeout=" + askTimeout + ", retryBackoff=" + retryBackoffMin + ".."
        + retryBackoffMax + ", commit=" + commitMaxBatch + "/"
        + commitMaxInterval + ", drainTimeout=" + drainTimeout + ", kafkaClients=" + kafkaClients.keySet()
        + ", handlerRetry=" + handlerRetryInitial + ".." + handlerRetryMax + " x" + handlerRetryMultiplier + " /"
        + handlerRetryMaxAttempts + ", deadLetter=*" + deadLetterSuffix + (deadLetterCreateTopic ? " (create)" : "")
        + " max " + deadLetterMaxRecordBytes + " B, outbox=" + (extra.outbox().enabled() ? "on" : "off")
        + ", partitionActor=" + partitionActor + ")";
  }
}
