package io.fencepost.kafka;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import io.fencepost.errors.SettingsException;
import io.fencepost.kafka.internal.ProducerSafety;

/**
 * The outbox relay of one pipeline ({@code fencepost.pipelines.<name>.outbox}, falling back to
 * {@code fencepost.pipeline.outbox}): it publishes the records handlers wrote to the outbox
 * ({@link io.fencepost.Effects#andPublish}) from the journal to Kafka, at least once, and stores how
 * far it got in the journal's durable-state store.
 *
 * @param enabled whether this pipeline runs a relay for each partition it owns
 * @param pollInterval how often an idle relay looks for new outbox records (a batch that wrote some
 *     wakes it at once)
 * @param storePositionEvery the longest time between two stores of the relay's position; records
 *     published since the last store are published again after a crash (downstream drops them by
 *     their {@link io.fencepost.OutboxRecord#ID_HEADER})
 * @param maxEntriesPerRound journal entries read per round
 * @param errorAfter how long publishing may keep failing before the relay says so at ERROR (and on
 *     the gauge {@code fencepost.outbox.relay.failing}); shorter failures are logged at WARN
 * @param readJournalPluginId the Pekko persistence query plugin that reads the journal
 * @param durableStatePluginId where positions are stored; empty: {@code pekko.persistence.state.plugin}
 * @param producer pass-through properties of the relay's producer (validated like every framework
 *     producer: idempotence cannot be switched off)
 */
public record OutboxSettings(boolean enabled, Duration pollInterval, Duration storePositionEvery,
    int maxEntriesPerRound, Duration errorAfter, String readJournalPluginId, String durableStatePluginId, Map<String, String> producer) {

  public OutboxSettings {
    Objects.requireNonNull(readJournalPluginId, "readJournalPluginId");
    Objects.requireNonNull(durableStatePluginId, "durableStatePluginId");
    producer = Map.copyOf(producer);
  }

  /** Reads and validates the {@code outbox} block of a pipeline section; {@code path} names it in errors. */
  static OutboxSettings fromSection(Config outbox, String path) {
    String key = null;
    try {
      key = "enabled";
      boolean enabled = outbox.getBoolean(key);
      key = "poll-interval";
      Duration poll = outbox.getDuration(key);
      key = "store-position-every";
      Duration store = outbox.getDuration(key);
      key = "max-entries-per-round";
      int max = outbox.getInt(key);
      key = "error-after";
      Duration errorAfter = outbox.getDuration(key);
      key = "read-journal-plugin-id";
      String readJournal = outbox.getString(key);
      key = "durable-state-plugin-id";
      String state = outbox.getString(key);
      key = "producer-kafka-clients";
      Map<String, String> producer = PipelineSettings.properties(outbox.getConfig(key));
      OutboxSettings settings = new OutboxSettings(enabled, poll, store, max, errorAfter, readJournal, state, producer);
      settings.validate(path);
      return settings;
    } catch (ConfigException.WrongType | ConfigException.BadValue e) {
      throw new SettingsException(path + "." + key, "?", "has the wrong type or format (" + e.getMessage() + ")");
    } catch (ConfigException.Missing e) {
      throw new SettingsException(path + "." + key, "missing", "must be set (see reference.conf)");
    }
  }

  /**
   * Refuses what the relay cannot run with, naming the key under {@code path} (checked again by the
   * pipeline's settings for a value built in code).
   */
  void validate(String path) {
    PipelineSettings.positive(path + ".poll-interval", pollInterval);
    PipelineSettings.positive(path + ".store-position-every", storePositionEvery);
    PipelineSettings.positive(path + ".error-after", errorAfter);
    if (maxEntriesPerRound <= 0) {
      throw new SettingsException(path + ".max-entries-per-round", maxEntriesPerRound, "must be > 0");
    }
    if (readJournalPluginId.isBlank()) {
      throw new SettingsException(path + ".read-journal-plugin-id", readJournalPluginId,
          "must name a Pekko persistence query plugin, e.g. jdbc-read-journal");
    }
    ProducerSafety.check(producer, path + ".producer-kafka-clients");
  }

  /** Shows the producer's property names only (their values may hold credentials). */
  @Override
  public String toString() {
    return "OutboxSettings(enabled=" + enabled + ", pollInterval=" + pollInterval + ", storePositionEvery="
        + storePositionEvery + ", maxEntriesPerRound=" + maxEntriesPerRound + ", errorAfter=" + errorAfter
        + ", readJournalPluginId="
        + readJournalPluginId + ", durableStatePluginId=" + durableStatePluginId + ", producer="
        + producer.keySet() + ")";
  }

  /** A copy with the relay switched on or off. */
  public OutboxSettings withEnabled(boolean value) {
    return new OutboxSettings(value, pollInterval, storePositionEvery, maxEntriesPerRound, errorAfter,
        readJournalPluginId, durableStatePluginId, producer);
  }

  /** A copy storing the relay's position at most this often. */
  public OutboxSettings withStorePositionEvery(Duration value) {
    return new OutboxSettings(enabled, pollInterval, value,
        maxEntriesPerRound, errorAfter, readJournalPluginId, durableStatePluginId, producer);
  }

  /** A copy whose relay reports a failure at ERROR once it lasted this long. */
  public OutboxSettings withErrorAfter(Duration value) {
    return new OutboxSettings(enabled, pollInterval, storePositionEvery, maxEntriesPerRound, value,
        readJournalPluginId, durableStatePluginId, producer);
  }

  /** A copy with these pass-through properties for the relay's producer. */
  public OutboxSettings withProducer(Map<String, String> value) {
    return new OutboxSettings(enabled, pollInterval, storePositionEvery, maxEntriesPerRound, errorAfter,
        readJournalPluginId, durableStatePluginId, value);
  }
}
