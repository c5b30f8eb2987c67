package io.fencepost.kafka;

import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.function.Consumer;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValue;
import io.fencepost.PartitionActorSettings;
import io.fencepost.errors.SettingsException;
import io.fencepost.kafka.internal.ProducerSafety;
import org.apache.pekko.actor.typed.ActorSystem;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Immutable settings of one Kafka pipeline, read from {@code fencepost.pipelines.<name>} with
 * fallback to {@code fencepost.pipeline} (every key documented in the kafka module's reference.conf),
 * and validated on creation: settings that would silently weaken the guarantee are refused with a
 * {@link SettingsException} naming the key and the fix.
 *
 * <p>Every key has a {@code withX} that returns a validated copy; the blocks of the configuration
 * ({@code batch}, {@code retry-backoff}, {@code commit}, {@code handler-retry}, {@code dead-letter},
 * {@code outbox}, {@code partition-actor}) are settings of their own:
 *
 * <pre>{@code
 * PipelineSettings settings = PipelineSettings.create(system, "ledger")
 *     .withTopics(List.of("payments"))
 *     .withBatch(new PipelineSettings.Batch(500, Duration.ofMillis(10)));
 * settings = settings.withHandlerRetry(settings.handlerRetry().withMaxAttempts(3));
 * }</pre>
 */
public final class PipelineSettings {

  private static final Logger log = LoggerFactory.getLogger(PipelineSettings.class);

  /**
   * {@code batch}: how records are grouped into one journal write.
   *
   * @param maxRecords most records per journal write
   * @param maxLatency longest a record waits for its batch to fill
   */
  public record Batch(int maxRecords, Duration maxLatency) {
    public Batch {
      Objects.requireNonNull(maxLatency, "maxLatency");
    }

    public Batch withMaxRecords(int value) {
      return new Batch(value, maxLatency);
    }

    public Batch withMaxLatency(Duration value) {
      return new Batch(maxRecords, value);
    }
  }

  /**
   * {@code retry-backoff}: the backoff between resends of a batch its actor rejected or did not
   * answer within {@code ask-timeout}.
   */
  public record RetryBackoff(Duration min, Duration max) {
    public RetryBackoff {
      Objects.requireNonNull(min, "min");
      Objects.requireNonNull(max, "max");
    }

    public RetryBackoff withMin(Duration value) {
      return new RetryBackoff(value, max);
    }

    public RetryBackoff withMax(Duration value) {
      return new RetryBackoff(min, value);
    }
  }

  /**
   * {@code commit}: how often applied offsets are committed to Kafka (for lag monitoring only).
   *
   * @param maxBatch commit once this many records were applied since the last commit
   * @param maxInterval commit at least this often while records are applied
   */
  public record Commit(int maxBatch, Duration maxInterval) {
    public Commit {
      Objects.requireNonNull(maxInterval, "maxInterval");
    }

    public Commit withMaxBatch(int value) {
      return new Commit(value, maxInterval);
    }

    public Commit withMaxInterval(Duration value) {
      return new Commit(maxBatch, value);
    }
  }

  /**
   * {@code handler-retry}: the exponential backoff of a handler that throws a
   * {@link io.fencepost.errors.RetriableException}.
   *
   * @param maxAttempts attempts in all, the first included, before the record is dead-lettered
   */
  public record HandlerRetry(Duration initial, Duration max, double multiplier, int maxAttempts) {
    public HandlerRetry {
      Objects.requireNonNull(initial, "initial");
      Objects.requireNonNull(max, "max");
    }

    public HandlerRetry withInitial(Duration value) {
      return new HandlerRetry(value, max, multiplier, maxAttempts);
    }

    public HandlerRetry withMax(Duration value) {
      return new HandlerRetry(initial, value, multiplier, maxAttempts);
    }

    public HandlerRetry withMultiplier(double value) {
      return new HandlerRetry(initial, max, value, maxAttempts);
    }

    public HandlerRetry withMaxAttempts(int value) {
      return new HandlerRetry(initial, max, multiplier, value);
    }
  }

  /**
   * {@code dead-letter}: where records that cannot be applied go.
   *
   * @param topicSuffix the dead-letter topic of topic T is T plus this suffix
   * @param createTopic create a missing dead-letter topic at start (off: a missing one fails the start)
   * @param maxRecordBytes values larger than this are dead-lettered without being decoded
   * @param producer pass-through properties of the dead-letter producer (validated: idempotence
   *     cannot be switched off)
   */
  public record DeadLetterSettings(String topicSuffix, boolean createTopic, int maxRecordBytes, Map<String, String> producer) {
    public DeadLetterSettings {
      Objects.requireNonNull(topicSuffix, "topicSuffix");
      producer = Map.copyOf(producer);
    }

    /** The dead-letter topic of {@code topic}. */
    public String topicFor(String topic) {
      return topic + topicSuffix;
    }

    public DeadLetterSettings withTopicSuffix(String value) {
      return new DeadLetterSettings(value, createTopic, maxRecordBytes, producer);
    }

    /** Pass-through properties of the dead-letter producer (replacing them all). */
    public DeadLetterSettings withProducer(Map<String, String> value) {
      return new DeadLetterSettings(topicSuffix, createTopic, maxRecordBytes, value);
    }

    /** Shows the producer's property names only (their values may hold credentials). */
    @Override
    public String toString() {
      return "DeadLetterSettings(topicSuffix=" + topicSuffix + ", createTopic=" + createTopic + ", maxRecordBytes="
          + maxRecordBytes + ", producer=" + producer.keySet() + ")";
    }

    public DeadLetterSettings withCreateTopic(boolean value) {
      return new DeadLetterSettings(topicSuffix, value, maxRecordBytes, producer);
    }

    public DeadLetterSettings withMaxRecordBytes(int value) {
      return new DeadLetterSettings(topicSuffix, createTopic, value, producer);
    }
  }

  /** Every value, copied before a {@code withX} changes one; never changed once settings hold it. */
  private static final class Values implements Cloneable {
    String name;
    String bootstrapServers;
    List<String> topics;
    String groupId;
    String autoOffsetReset;
    Batch batch;
    Duration askTimeout;
    RetryBackoff retryBackoff;
    Duration stallTimeout;
    Duration deadAfter;
    Commit commit;
    Duration drainTimeout;
    Duration progressInterval;
    HandlerRetry handlerRetry;
    DeadLetterSettings deadLetter;
    OutboxSettings outbox;
    Map<String, String> kafkaClients;
    Map<String, String> commonKafkaClients;
    PartitionActorSettings partitionActor;

    Values copy() {
      try {
        return (Values) clone();
      } catch (CloneNotSupportedException e) {
        throw new AssertionError(e);
      }
    }
  }

  private final Values v;

  private PipelineSettings(Values values) {
    this.v = values;
    String p = "fencepost.pipelines." + v.name + ".";
    Objects.requireNonNull(v.bootstrapServers, "bootstrapServers");
    for (String t : v.topics) {
      if (t.isBlank() || t.contains("|")) {
        throw new SettingsException(p + "topics", v.topics, "must hold non-empty topic names without '|'");
      }
    }
    v.topics = List.copyOf(v.topics);
    if (v.groupId.isEmpty()) {
      v.groupId = v.name;
    }
    if (v.groupId.contains("|")) {
      throw new SettingsException(p + "group-id", v.groupId, "must not contain '|'");
    }
    String reset = v.autoOffsetReset.toLowerCase(Locale.ROOT);
    if (!reset.equals("earliest") && !reset.equals("latest")) {
      throw new SettingsException(p + "auto-offset-reset", v.autoOffsetReset, "must be earliest or latest");
    }
    v.autoOffsetReset = reset;
    positive(p + "batch.max-records", v.batch.maxRecords());
    positive(p + "batch.max-latency", v.batch.maxLatency());
    positive(p + "ask-timeout", v.askTimeout);
    if (v.askTimeout.compareTo(v.batch.maxLatency()) <= 0) {
      throw new SettingsException(p + "ask-timeout", v.askTimeout,
          "must be longer than batch.max-latency [" + v.batch.maxLatency() + "], or every batch times out");
    }
    positive(p + "retry-backoff.min", v.retryBackoff.min());
    positive(p + "retry-backoff.max", v.retryBackoff.max());
    if (v.retryBackoff.max().compareTo(v.retryBackoff.min()) < 0) {
      throw new SettingsException(p + "retry-backoff.max", v.retryBackoff.max(),
          "must be >= retry-backoff.min [" + v.retryBackoff.min() + "]");
    }
    positive(p + "stall-timeout", v.stallTimeout);
    positive(p + "dead-after", v.deadAfter);
    positive(p + "commit.max-batch", v.commit.maxBatch());
    positive(p + "commit.max-interval", v.commit.maxInterval());
    positive(p + "drain-timeout", v.drainTimeout);
    if (v.progressInterval.isNegative()) {
      throw new SettingsException(p + "progress-interval", v.progressInterval, "must be >= 0 (0s: no progress line)");
    }
    HandlerRetry r = v.handlerRetry;
    positive(p + "handler-retry.initial", r.initial());
    positive(p + "handler-retry.max", r.max());
    if (r.max().compareTo(r.initial()) < 0) {
      throw new SettingsException(p + "handler-retry.max", r.max(),
          "must be >= handler-retry.initial [" + r.initial() + "]");
    }
    if (!(r.multiplier() >= 1.0)) {
      throw new SettingsException(p + "handler-retry.multiplier", r.multiplier(), "must be >= 1.0");
    }
    positive(p + "handler-retry.max-attempts", r.maxAttempts());
    if (v.deadLetter.topicSuffix().isEmpty()) {
      throw new SettingsException(p + "dead-letter.topic-suffix", "", "must not be empty (the source topic itself)");
    }
    positive(p + "dead-letter.max-record-bytes", v.deadLetter.maxRecordBytes());
    ProducerSafety.check(v.deadLetter.producer(), p + "dead-letter.producer-kafka-clients");
    Objects.requireNonNull(v.outbox, "outbox").validate(p + "outbox");
    v.kafkaClients = Map.copyOf(v.kafkaClients);
    String autoCommit = v.kafkaClients.get("enable.auto.commit");
    if (autoCommit != null && autoCommit.trim().equalsIgnoreCase("true")) {
      throw new SettingsException(p + "kafka-clients.enable.auto.commit", autoCommit,
          "must not be true: auto-commit records progress before effects are durable (at-most-once in disguise); "
              + "remove it, Fencepost commits after each journal write");
    }
    if (v.kafkaClients.containsKey("group.id")) {
      throw new SettingsException(p + "kafka-clients.group.id", v.kafkaClients.get("group.id"),
          "must not be set here; use " + p + "group-id");
    }
    v.commonKafkaClients = Map.copyOf(v.commonKafkaClients);
    for (String key : List.of("enable.auto.commit", "group.id", "bootstrap.servers")) {
      if (v.commonKafkaClients.containsKey(key)) {
        throw new SettingsException(p + "common-kafka-clients." + key, v.commonKafkaClients.get(key),
            "must not be set in the properties every client shares; set " + (key.equals("bootstrap.servers")
                ? p + "bootstrap-servers" : key.equals("group.id") ? p + "group-id" : "nothing (refused)"));
      }
    }
    ProducerSafety.check(v.commonKafkaClients, p + "common-kafka-clients");
    Objects.requireNonNull(v.partitionActor, "partitionActor");
    if (v.partitionActor.callTimeout().compareTo(v.askTimeout) >= 0) {
      throw new SettingsException(p + "partition-actor.external-call.timeout", v.partitionActor.callTimeout(),
          "must be shorter than ask-timeout [" + v.askTimeout + "]: a batch waiting for its external call would "
              + "time out and be resent while the call runs");
    }
  }

  /**
   * Checks what has no default (bootstrap servers, topics); called when a pipeline is created, so
   * settings can be completed with {@code withX} first.
   */
  PipelineSettings requireComplete() {
    String p = "fencepost.pipelines." + v.name + ".";
    if (v.bootstrapServers.isBlank()) {
      throw new SettingsException(p + "bootstrap-servers", v.bootstrapServers,
          "must be set to host:port[,host:port] (or call withBootstrapServers)");
    }
    if (v.topics.isEmpty()) {
      throw new SettingsException(p + "topics", v.topics, "must name at least one topic (or call withTopics)");
    }
    return this;
  }

  private static void positive(String key, int value) {
    if (value <= 0) {
      throw new SettingsException(key, value, "must be > 0");
    }
  }

  static Duration positive(String key, Duration value) {
    if (value.isZero() || value.isNegative()) {
      throw new SettingsException(key, value, "must be > 0");
    }
    return value;
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
    if (section.hasPath("shard-handoff-timeout")) {
      log.warn("{}.shard-handoff-timeout is no longer read: a partition's actor runs on the node Kafka assigned "
          + "the partition to, without a hand-off to wait for; remove the setting", own);
    }
    Values v = new Values();
    v.name = name;
    String key = null;
    try {
      key = "partition-actor";
      Config actorSection = section.getConfig(key).withFallback(root.getConfig(PartitionActorSettings.CONFIG_PATH));
      v.partitionActor = PartitionActorSettings.fromSection(actorSection, own + ".partition-actor");
      key = "kafka-clients";
      v.kafkaClients = properties(section.getConfig(key));
      key = "common-kafka-clients";
      v.commonKafkaClients = properties(section.getConfig(key));
      key = "bootstrap-servers";
      v.bootstrapServers = section.getString(key);
      key = "topics";
      v.topics = section.getStringList(key);
      key = "group-id";
      v.groupId = section.getString(key);
      key = "auto-offset-reset";
      v.autoOffsetReset = section.getString(key);
      key = "batch.max-records";
      int maxRecords = section.getInt(key);
      key = "batch.max-latency";
      v.batch = new Batch(maxRecords, section.getDuration(key));
      key = "ask-timeout";
      v.askTimeout = section.getDuration(key);
      key = "retry-backoff.min";
      Duration min = section.getDuration(key);
      key = "retry-backoff.max";
      v.retryBackoff = new RetryBackoff(min, section.getDuration(key));
      key = "commit.max-batch";
      int commitBatch = section.getInt(key);
      key = "commit.max-interval";
      v.commit = new Commit(commitBatch, section.getDuration(key));
      key = "drain-timeout";
      v.drainTimeout = section.getDuration(key);
      key = "progress-interval";
      v.progressInterval = section.getDuration(key);
      key = "handler-retry.initial";
      Duration retryInitial = section.getDuration(key);
      key = "handler-retry.max";
      Duration retryMax = section.getDuration(key);
      key = "handler-retry.multiplier";
      double multiplier = section.getDouble(key);
      key = "handler-retry.max-attempts";
      v.handlerRetry = new HandlerRetry(retryInitial, retryMax, multiplier, section.getInt(key));
      key = "dead-letter.topic-suffix";
      String suffix = section.getString(key);
      key = "dead-letter.create-topic";
      boolean create = section.getBoolean(key);
      key = "dead-letter.max-record-bytes";
      int maxBytes = section.getInt(key);
      key = "dead-letter.producer-kafka-clients";
      v.deadLetter = new DeadLetterSettings(suffix, create, maxBytes, properties(section.getConfig(key)));
      key = "stall-timeout";
      v.stallTimeout = section.getDuration(key);
      key = "dead-after";
      v.deadAfter = section.getDuration(key);
      key = "outbox";
      v.outbox = OutboxSettings.fromSection(section.getConfig(key), own + ".outbox");
    } catch (ConfigException.WrongType | ConfigException.BadValue e) {
      throw new SettingsException(own + "." + key, "?", "has the wrong type or format (" + e.getMessage() + ")");
    } catch (ConfigException.Missing e) {
      throw new SettingsException(own + "." + key, "missing", "must be set (see reference.conf)");
    }
    return new PipelineSettings(v);
  }

  /** A block of pass-through client properties (quoted dotted keys unquoted). */
  static Map<String, String> properties(Config block) {
    Map<String, String> out = new TreeMap<>();
    for (Map.Entry<String, ConfigValue> e : block.entrySet()) {
      out.put(e.getKey().replace("\"", ""), String.valueOf(e.getValue().unwrapped()));
    }
    return out;
  }

  private PipelineSettings with(Consumer<Values> change) {
    Values copy = v.copy();
    change.accept(copy);
    return new PipelineSettings(copy);
  }

  /** {@code bootstrap-servers}: host:port[,host:port...]. */
  public PipelineSettings withBootstrapServers(String value) {
    return with(c -> c.bootstrapServers = value);
  }

  /** {@code topics}. */
  public PipelineSettings withTopics(List<String> value) {
    return with(c -> c.topics = value);
  }

  /** {@code group-id}; empty: the pipeline's name. */
  public PipelineSettings withGroupId(String value) {
    return with(c -> c.groupId = value);
  }

  /** {@code auto-offset-reset}: earliest or latest. */
  public PipelineSettings withAutoOffsetReset(String value) {
    return with(c -> c.autoOffsetReset = value);
  }

  /** {@code batch}. */
  public PipelineSettings withBatch(Batch value) {
    return with(c -> c.batch = Objects.requireNonNull(value, "batch"));
  }

  /** {@code batch.max-records} and {@code batch.max-latency}. */
  public PipelineSettings withBatch(int maxRecords, Duration maxLatency) {
    return withBatch(new Batch(maxRecords, maxLatency));
  }

  /** {@code ask-timeout}. */
  public PipelineSettings withAskTimeout(Duration value) {
    return with(c -> c.askTimeout = Objects.requireNonNull(value, "askTimeout"));
  }

  /** {@code retry-backoff}. */
  public PipelineSettings withRetryBackoff(RetryBackoff value) {
    return with(c -> c.retryBackoff = Objects.requireNonNull(value, "retryBackoff"));
  }

  /** {@code stall-timeout}. */
  public PipelineSettings withStallTimeout(Duration value) {
    return with(c -> c.stallTimeout = Objects.requireNonNull(value, "stallTimeout"));
  }

  /** {@code dead-after}. */
  public PipelineSettings withDeadAfter(Duration value) {
    return with(c -> c.deadAfter = Objects.requireNonNull(value, "deadAfter"));
  }

  /** {@code commit}. */
  public PipelineSettings withCommit(Commit value) {
    return with(c -> c.commit = Objects.requireNonNull(value, "commit"));
  }

  /** {@code drain-timeout}. */
  public PipelineSettings withDrainTimeout(Duration value) {
    return with(c -> c.drainTimeout = Objects.requireNonNull(value, "drainTimeout"));
  }

  /** {@code progress-interval}; zero: no progress line. */
  public PipelineSettings withProgressInterval(Duration value) {
    return with(c -> c.progressInterval = Objects.requireNonNull(value, "progressInterval"));
  }

  /** {@code handler-retry}. */
  public PipelineSettings withHandlerRetry(HandlerRetry value) {
    return with(c -> c.handlerRetry = Objects.requireNonNull(value, "handlerRetry"));
  }

  /** {@code dead-letter}. */
  public PipelineSettings withDeadLetter(DeadLetterSettings value) {
    return with(c -> c.deadLetter = Objects.requireNonNull(value, "deadLetter"));
  }

  /** {@code outbox}. */
  public PipelineSettings withOutbox(OutboxSettings value) {
    return with(c -> c.outbox = Objects.requireNonNull(value, "outbox"));
  }

  /** One {@code kafka-clients} property (added or replaced). */
  public PipelineSettings withKafkaClient(String key, String value) {
    Map<String, String> m = new TreeMap<>(v.kafkaClients);
    m.put(key, value);
    return withKafkaClients(m);
  }

  /** {@code kafka-clients}: every pass-through consumer property. */
  public PipelineSettings withKafkaClients(Map<String, String> value) {
    return with(c -> c.kafkaClients = Objects.requireNonNull(value, "kafkaClients"));
  }

  /** One {@code common-kafka-clients} property (added or replaced). */
  public PipelineSettings withCommonKafkaClient(String key, String value) {
    Map<String, String> m = new TreeMap<>(v.commonKafkaClients);
    m.put(key, value);
    return withCommonKafkaClients(m);
  }

  /**
   * {@code common-kafka-clients}: properties every Kafka client of the pipeline gets (consumer,
   * admin, log probe, dead-letter and outbox producers), e.g. security settings.
   */
  public PipelineSettings withCommonKafkaClients(Map<String, String> value) {
    return with(c -> c.commonKafkaClients = Objects.requireNonNull(value, "commonKafkaClients"));
  }

  /** {@code partition-actor}. */
  public PipelineSettings withPartitionActor(PartitionActorSettings value) {
    return with(c -> c.partitionActor = value);
  }

  public String name() {
    return v.name;
  }

  public String bootstrapServers() {
    return v.bootstrapServers;
  }

  public List<String> topics() {
    return v.topics;
  }

  public String groupId() {
    return v.groupId;
  }

  public String autoOffsetReset() {
    return v.autoOffsetReset;
  }

  public Batch batch() {
    return v.batch;
  }

  public Duration askTimeout() {
    return v.askTimeout;
  }

  public RetryBackoff retryBackoff() {
    return v.retryBackoff;
  }

  /** How long an assigned partition with records to read may make no progress before it is seeked again. */
  public Duration stallTimeout() {
    return v.stallTimeout;
  }

  /**
   * How long the journal or snapshot plugin actor may be missing before the node is no longer live
   * ({@link PipelineHealth#live()}): Pekko never starts a stopped plugin again, so only a restart
   * brings it back.
   */
  public Duration deadAfter() {
    return v.deadAfter;
  }

  public Commit commit() {
    return v.commit;
  }

  public Duration drainTimeout() {
    return v.drainTimeout;
  }

  /** How often the pipeline logs its progress line at INFO; zero: never. */
  public Duration progressInterval() {
    return v.progressInterval;
  }

  public HandlerRetry handlerRetry() {
    return v.handlerRetry;
  }

  public DeadLetterSettings deadLetter() {
    return v.deadLetter;
  }

  /** The outbox relay's settings. */
  public OutboxSettings outbox() {
    return v.outbox;
  }

  /** Pass-through KafkaConsumer properties (over {@link #commonKafkaClients()}). */
  public Map<String, String> kafkaClients() {
    return v.kafkaClients;
  }

  /**
   * Properties every Kafka client of the pipeline gets, under the more specific blocks (default
   * {@code fencepost.kafka-clients}): where security settings go.
   */
  public Map<String, String> commonKafkaClients() {
    return v.commonKafkaClients;
  }

  /** A producer's properties: the common ones, then {@code specific} (which win). */
  Map<String, String> producerClients(Map<String, String> specific) {
    Map<String, String> m = new TreeMap<>(v.commonKafkaClients);
    m.putAll(specific);
    return m;
  }

  public PartitionActorSettings partitionActor() {
    return v.partitionActor;
  }

  @Override
  public String toString() {
    return "PipelineSettings(name=" + v.name + ", bootstrapServers=" + v.bootstrapServers + ", topics=" + v.topics
        + ", groupId=" + v.groupId + ", autoOffsetReset=" + v.autoOffsetReset + ", " + v.batch + ", askTimeout="
        + v.askTimeout + ", " + v.retryBackoff + ", stallTimeout=" + v.stallTimeout + ", deadAfter=" + v.deadAfter + ", " + v.commit
        + ", drainTimeout=" + v.drainTimeout + ", progressInterval=" + v.progressInterval
        + ", kafkaClients=" + v.kafkaClients.keySet() + ", commonKafkaClients=" + v.commonKafkaClients.keySet() + ", " + v.handlerRetry + ", deadLetter=*"
        + v.deadLetter.topicSuffix() + (v.deadLetter.createTopic() ? " (create)" : "") + " max "
        + v.deadLetter.maxRecordBytes() + " B, outbox=" + (v.outbox.enabled() ? "on" : "off")
        + ", partitionActor=" + v.partitionActor + ")";
  }
}
