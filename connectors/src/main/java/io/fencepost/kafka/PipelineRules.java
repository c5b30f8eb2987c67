package io.fencepost.kafka;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import io.fencepost.PartitionActorSettings;
import io.fencepost.errors.SettingsException;
import io.fencepost.kafka.internal.ProducerSafety;

/**
 * The rules a pipeline's settings must keep, checked on every copy ({@link PipelineSettings}): each
 * refusal is a {@link SettingsException} naming the key under {@code fencepost.pipelines.<name>}, the
 * value and the fix. Normalises what it checks (lists and maps copied, an empty group id made the
 * pipeline's name).
 */
final class PipelineRules {

  private PipelineRules() {
  }

  /** Refuses values that would silently weaken the guarantee or cannot run, naming the key and the fix. */
  static void check(PipelineSettings.Values v) {
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
    Objects.requireNonNull(v.autoOffsetReset, "autoOffsetReset");
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
    positive(p + "query.timeout", v.query.timeout());
    positive(p + "query.attempt-timeout", v.query.attemptTimeout());
    if (v.progressInterval.isNegative()) {
      throw new SettingsException(p + "progress-interval", v.progressInterval, "must be >= 0 (0s: no progress line)");
    }
    HandlerRetrySettings r = v.handlerRetry;
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
    Objects.requireNonNull(v.deadLetter, "deadLetter");
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
    if (v.partitionActor.journalDatabases() > 1) {
      // The relay's journal and its stored position live beside the partition's history.
      PartitionActorSettings.requirePlaceholder(p + "outbox.read-journal-plugin-id", v.outbox.readJournalPluginId());
      PartitionActorSettings.requirePlaceholder(p + "outbox.durable-state-plugin-id", v.outbox.durableStatePluginId());
    }
    if (v.partitionActor.callTimeout().compareTo(v.askTimeout) >= 0) {
      throw new SettingsException(p + "partition-actor.external-call.timeout", v.partitionActor.callTimeout(),
          "must be shorter than ask-timeout [" + v.askTimeout + "]: a batch waiting for its external call would "
              + "time out and be resent while the call runs");
    }
  }

  private static void positive(String key, int value) {
    if (value <= 0) {
      throw new SettingsException(key, value, "must be > 0");
    }
  }

  /**
   * Checks what has no default (bootstrap servers, topics); called when a pipeline is created, so
   * settings can be completed with {@code withX} first.
   */
  static void complete(PipelineSettings.Values v) {
    String p = "fencepost.pipelines." + v.name + ".";
    if (v.bootstrapServers.isBlank()) {
      throw new SettingsException(p + "bootstrap-servers", v.bootstrapServers,
          "must be set to host:port[,host:port] (or call withBootstrapServers)");
    }
    if (v.topics.isEmpty()) {
      throw new SettingsException(p + "topics", v.topics, "must name at least one topic (or call withTopics)");
    }
  }

  static Duration positive(String key, Duration value) {
    if (value.isZero() || value.isNegative()) {
      throw new SettingsException(key, value, "must be > 0");
    }
    return value;
  }
}
