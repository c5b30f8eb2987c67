package io.fencepost.kafka;

import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValue;
import io.fencepost.PartitionActorSettings;
import io.fencepost.errors.SettingsException;

/**
 * Reads a pipeline's settings from {@code fencepost.pipelines.<name>}, falling back to
 * {@code fencepost.pipeline}; a key that is missing or of the wrong type is refused naming it.
 */
final class PipelineConfig {

  private PipelineConfig() {
  }

  /** The settings of pipeline {@code name} from a root configuration. */
  static PipelineSettings read(Config root, String name) {
    if (name == null || !name.matches("[A-Za-z0-9][A-Za-z0-9_-]*")) {
      throw new SettingsException("pipeline name", name, "must be letters, digits, '-' or '_'");
    }
    String own = "fencepost.pipelines." + name;
    Config section = (root.hasPath("fencepost.pipelines.\"" + name + "\"")
        ? root.getConfig("fencepost.pipelines.\"" + name + "\"") : ConfigFactory.empty())
        .withFallback(root.getConfig("fencepost.pipeline"));
    PipelineSettings.Values v = new PipelineSettings.Values();
    v.name = name;
    String key = null;
    try {
      key = "partition-actor";
      Config actorSection = section.getConfig(key).withFallback(root.getConfig(PartitionActorSettings.CONFIG_PATH));
      v.partitionActor = PartitionActorSettings.fromSection(actorSection, own + ".partition-actor");
      key = "kafka-clients";
      v.kafkaClients = properties(section.getConfig(key), own + "." + key);
      key = "common-kafka-clients";
      v.commonKafkaClients = properties(section.getConfig(key), own + "." + key);
      key = "bootstrap-servers";
      v.bootstrapServers = section.getString(key);
      key = "topics";
      v.topics = section.getStringList(key);
      key = "group-id";
      v.groupId = section.getString(key);
      key = "auto-offset-reset";
      v.autoOffsetReset = AutoOffsetReset.fromConfig(own + "." + key, section.getString(key));
      key = "batch.max-records";
      int maxRecords = section.getInt(key);
      key = "batch.max-latency";
      v.batch = BatchSettings.of(maxRecords, section.getDuration(key));
      key = "ask-timeout";
      v.askTimeout = section.getDuration(key);
      key = "retry-backoff.min";
      Duration min = section.getDuration(key);
      key = "retry-backoff.max";
      v.retryBackoff = RetryBackoffSettings.of(min, section.getDuration(key));
      key = "commit.max-batch";
      int commitBatch = section.getInt(key);
      key = "commit.max-interval";
      v.commit = CommitSettings.of(commitBatch, section.getDuration(key));
      key = "query.timeout";
      Duration queryTimeout = section.getDuration(key);
      key = "query.attempt-timeout";
      v.query = QuerySettings.of(queryTimeout, section.getDuration(key));
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
      v.handlerRetry = HandlerRetrySettings.of(retryInitial, retryMax, multiplier, section.getInt(key));
      key = "dead-letter.topic-suffix";
      String suffix = section.getString(key);
      key = "dead-letter.create-topic";
      boolean create = section.getBoolean(key);
      key = "dead-letter.max-record-bytes";
      int maxBytes = section.getInt(key);
      key = "dead-letter.producer-kafka-clients";
      v.deadLetter = DeadLetterSettings.of(suffix, create, maxBytes,
          properties(section.getConfig(key), own + "." + key));
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
    return PipelineSettings.of(v);
  }

  /**
   * A block of pass-through client properties (quoted dotted keys unquoted); {@code path} names it in
   * errors. A property set both as a path ({@code delivery.timeout.ms = 5000}, as reference.conf sets
   * defaults) and as a quoted key ({@code "delivery.timeout.ms" = 5000}) is refused: HOCON keeps both,
   * and only one of them would apply.
   */
  static Map<String, String> properties(Config block, String path) {
    Map<String, String> out = new TreeMap<>();
    Map<String, String> spelling = new TreeMap<>();
    for (Map.Entry<String, ConfigValue> e : block.entrySet()) {
      String property = e.getKey().replace("\"", "");
      String earlier = spelling.put(property, e.getKey());
      if (earlier != null) {
        throw new SettingsException(path + "." + property, e.getValue().unwrapped() + "\" and \"" + out.get(property),
            "is set twice, as [" + (earlier.contains("\"") ? earlier : e.getKey()) + "] (a quoted key) and as ["
            + property + "] (a path, as reference.conf sets defaults and -D system properties always are), and only "
            + "one would apply: write it unquoted, " + property + " = <value>");
      }
      out.put(property, String.valueOf(e.getValue().unwrapped()));
    }
    return out;
  }
}
