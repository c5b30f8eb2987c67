package io.fencepost.kafka;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.function.Consumer;

import com.typesafe.config.Config;
import io.fencepost.PartitionActorSettings;
import io.fencepost.errors.SettingsException;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * Immutable settings of one Kafka pipeline, read from {@code fencepost.pipelines.<name>} with
 * fallback to {@code fencepost.pipeline} (every key documented in the connectors module's reference.conf),
 * and validated on creation: settings that would silently weaken the guarantee are refused with a
 * {@link SettingsException} naming the key and the fix.
 *
 * <p>Every key has a {@code withX} that returns a copy, made by the one private {@code copy} method
 * and validated as new settings ({@link PipelineRules}). The blocks of the configuration
 * ({@code batch}, {@code retry-backoff}, {@code commit}, {@code query}, {@code handler-retry}, {@code dead-letter},
 * {@code outbox}, {@code partition-actor}) are settings of their own, changed the same way:
 *
 * <pre>{@code
 * PipelineSettings settings = PipelineSettings.create(system, "ledger")
 *     .withTopics(List.of("payments"))
 *     .withBatch(500, Duration.ofMillis(10));
 * settings = settings.withHandlerRetry(settings.handlerRetry().withMaxAttempts(3));
 * }</pre>
 */
public final class PipelineSettings {

  /** Every value; a copy is changed by one {@code withX}, then never again once settings hold it. */
  static final class Values implements Cloneable {
    String name;
    String bootstrapServers;
    List<String> topics;
    String groupId;
    AutoOffsetReset autoOffsetReset;
    BatchSettings batch;
    Duration askTimeout;
    RetryBackoffSettings retryBackoff;
    Duration stallTimeout;
    Duration deadAfter;
    CommitSettings commit;
    QuerySettings query;
    Duration drainTimeout;
    Duration progressInterval;
    HandlerRetrySettings handlerRetry;
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
    PipelineRules.check(values);
    this.v = values;
  }

  /**
   * Checks what has no default (bootstrap servers, topics); called when a pipeline is created, so
   * settings can be completed with {@code withX} first.
   */
  PipelineSettings requireComplete() {
    PipelineRules.complete(v);
    return this;
  }

  /** The settings of pipeline {@code name} from the system's configuration. */
  public static PipelineSettings create(ActorSystem<?> system, String name) {
    return create(system.settings().config(), name);
  }

  /** The settings of pipeline {@code name} from a root configuration. */
  public static PipelineSettings create(Config root, String name) {
    return PipelineConfig.read(root, name);
  }

  /** Settings of {@code values} (read from configuration), validated. */
  static PipelineSettings of(Values values) {
    return new PipelineSettings(values);
  }

  /** The one copy method: {@code change} applied to a copy of the values, validated as new settings. */
  private PipelineSettings copy(Consumer<Values> change) {
    Values copy = v.copy();
    change.accept(copy);
    return new PipelineSettings(copy);
  }

  /** {@code bootstrap-servers}: host:port[,host:port...]. */
  public PipelineSettings withBootstrapServers(String value) {
    return copy(c -> c.bootstrapServers = value);
  }

  /** {@code topics}. */
  public PipelineSettings withTopics(List<String> value) {
    return copy(c -> c.topics = value);
  }

  /** {@code group-id}; empty: the pipeline's name. */
  public PipelineSettings withGroupId(String value) {
    return copy(c -> c.groupId = value);
  }

  /** {@code auto-offset-reset}. */
  public PipelineSettings withAutoOffsetReset(AutoOffsetReset value) {
    return copy(c -> c.autoOffsetReset = value);
  }

  /** {@code batch}. */
  public PipelineSettings withBatch(BatchSettings value) {
    return copy(c -> c.batch = Objects.requireNonNull(value, "batch"));
  }

  /** {@code batch.max-records} and {@code batch.max-latency}. */
  public PipelineSettings withBatch(int maxRecords, Duration maxLatency) {
    return withBatch(v.batch.withMaxRecords(maxRecords).withMaxLatency(maxLatency));
  }

  /** {@code ask-timeout}. */
  public PipelineSettings withAskTimeout(Duration value) {
    return copy(c -> c.askTimeout = Objects.requireNonNull(value, "askTimeout"));
  }

  /** {@code retry-backoff}. */
  public PipelineSettings withRetryBackoff(RetryBackoffSettings value) {
    return copy(c -> c.retryBackoff = Objects.requireNonNull(value, "retryBackoff"));
  }

  /** {@code stall-timeout}. */
  public PipelineSettings withStallTimeout(Duration value) {
    return copy(c -> c.stallTimeout = Objects.requireNonNull(value, "stallTimeout"));
  }

  /** {@code dead-after}. */
  public PipelineSettings withDeadAfter(Duration value) {
    return copy(c -> c.deadAfter = Objects.requireNonNull(value, "deadAfter"));
  }

  /** {@code query}. */
  public PipelineSettings withQuery(QuerySettings value) {
    return copy(c -> c.query = Objects.requireNonNull(value, "query"));
  }

  /** {@code commit}. */
  public PipelineSettings withCommit(CommitSettings value) {
    return copy(c -> c.commit = Objects.requireNonNull(value, "commit"));
  }

  /** {@code drain-timeout}. */
  public PipelineSettings withDrainTimeout(Duration value) {
    return copy(c -> c.drainTimeout = Objects.requireNonNull(value, "drainTimeout"));
  }

  /** {@code progress-interval}; zero: no progress line. */
  public PipelineSettings withProgressInterval(Duration value) {
    return copy(c -> c.progressInterval = Objects.requireNonNull(value, "progressInterval"));
  }

  /** {@code handler-retry}. */
  public PipelineSettings withHandlerRetry(HandlerRetrySettings value) {
    return copy(c -> c.handlerRetry = Objects.requireNonNull(value, "handlerRetry"));
  }

  /** {@code dead-letter}. */
  public PipelineSettings withDeadLetter(DeadLetterSettings value) {
    return copy(c -> c.deadLetter = Objects.requireNonNull(value, "deadLetter"));
  }

  /** {@code outbox}. */
  public PipelineSettings withOutbox(OutboxSettings value) {
    return copy(c -> c.outbox = Objects.requireNonNull(value, "outbox"));
  }

  /** One {@code kafka-clients} property (added or replaced). */
  public PipelineSettings withKafkaClient(String key, String value) {
    Map<String, String> m = new TreeMap<>(v.kafkaClients);
    m.put(key, value);
    return withKafkaClients(m);
  }

  /** {@code kafka-clients}: every pass-through consumer property. */
  public PipelineSettings withKafkaClients(Map<String, String> value) {
    return copy(c -> c.kafkaClients = Objects.requireNonNull(value, "kafkaClients"));
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
    return copy(c -> c.commonKafkaClients = Objects.requireNonNull(value, "commonKafkaClients"));
  }

  /** {@code partition-actor}. */
  public PipelineSettings withPartitionActor(PartitionActorSettings value) {
    return copy(c -> c.partitionActor = Objects.requireNonNull(value, "partitionActor"));
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

  public AutoOffsetReset autoOffsetReset() {
    return v.autoOffsetReset;
  }

  public BatchSettings batch() {
    return v.batch;
  }

  public Duration askTimeout() {
    return v.askTimeout;
  }

  public RetryBackoffSettings retryBackoff() {
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

  public CommitSettings commit() {
    return v.commit;
  }

  /** How long queries through {@link Pipeline#query} may take. */
  public QuerySettings query() {
    return v.query;
  }

  public Duration drainTimeout() {
    return v.drainTimeout;
  }

  /** How often the pipeline logs its progress line at INFO; zero: never. */
  public Duration progressInterval() {
    return v.progressInterval;
  }

  public HandlerRetrySettings handlerRetry() {
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
        + ", groupId=" + v.groupId + ", autoOffsetReset=" + v.autoOffsetReset.configValue() + ", " + v.batch
        + ", askTimeout=" + v.askTimeout + ", " + v.retryBackoff + ", stallTimeout=" + v.stallTimeout + ", deadAfter="
        + v.deadAfter + ", " + v.commit + ", " + v.query + ", drainTimeout=" + v.drainTimeout + ", progressInterval="
        + v.progressInterval + ", kafkaClients=" + v.kafkaClients.keySet() + ", commonKafkaClients="
        + v.commonKafkaClients.keySet() + ", " + v.handlerRetry + ", " + v.deadLetter + ", outbox="
        + (v.outbox.enabled() ? "on" : "off") + ", partitionActor=" + v.partitionActor + ")";
  }
}
