package io.fencepost.kafka;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import io.fencepost.PartitionActorSettings;
import io.fencepost.errors.SettingsException;
import io.fencepost.kafka.internal.ProducerSafety;

/**
 * The outbox relay of one pipeline ({@code fencepost.pipelines.<name>.outbox}, falling back to
 * {@code fencepost.pipeline.outbox}): it publishes the records handlers wrote to the outbox
 * ({@link io.fencepost.Effects#andPublish}) from the journal to Kafka, at least once, and stores how
 * far it got in the journal's durable-state store. Part of {@link PipelineSettings}, which validates
 * it with its keys named when it is set.
 */
public final class OutboxSettings {

  /** Every value; a copy is changed by one {@code withX}, then never again once settings hold it. */
  private static final class Values implements Cloneable {
    boolean enabled;
    Duration pollInterval;
    Duration storePositionEvery;
    int maxEntriesPerRound;
    Duration errorAfter;
    String readJournalPluginId;
    String durableStatePluginId;
    Map<String, String> producer;

    Values copy() {
      try {
        return (Values) clone();
      } catch (CloneNotSupportedException e) {
        throw new AssertionError(e);
      }
    }
  }

  private final Values v;

  private OutboxSettings(Values v) {
    Objects.requireNonNull(v.pollInterval, "pollInterval");
    Objects.requireNonNull(v.storePositionEvery, "storePositionEvery");
    Objects.requireNonNull(v.errorAfter, "errorAfter");
    Objects.requireNonNull(v.readJournalPluginId, "readJournalPluginId");
    Objects.requireNonNull(v.durableStatePluginId, "durableStatePluginId");
    v.producer = Map.copyOf(Objects.requireNonNull(v.producer, "producer"));
    this.v = v;
  }

  /** The one copy method: {@code change} applied to a copy of the values. */
  private OutboxSettings copy(Consumer<Values> change) {
    Values copy = v.copy();
    change.accept(copy);
    return new OutboxSettings(copy);
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
      Map<String, String> producer = PipelineConfig.properties(outbox.getConfig(key));
      Values v = new Values();
      v.enabled = enabled;
      v.pollInterval = poll;
      v.storePositionEvery = store;
      v.maxEntriesPerRound = max;
      v.errorAfter = errorAfter;
      v.readJournalPluginId = readJournal;
      v.durableStatePluginId = state;
      v.producer = producer;
      OutboxSettings settings = new OutboxSettings(v);
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
    PipelineRules.positive(path + ".poll-interval", v.pollInterval);
    PipelineRules.positive(path + ".store-position-every", v.storePositionEvery);
    PipelineRules.positive(path + ".error-after", v.errorAfter);
    if (v.maxEntriesPerRound <= 0) {
      throw new SettingsException(path + ".max-entries-per-round", v.maxEntriesPerRound, "must be > 0");
    }
    if (v.readJournalPluginId.isBlank()) {
      throw new SettingsException(path + ".read-journal-plugin-id", v.readJournalPluginId,
          "must name a Pekko persistence query plugin, e.g. jdbc-read-journal");
    }
    ProducerSafety.check(v.producer, path + ".producer-kafka-clients");
  }

  /**
   * The plugins of journal database {@code database}: each {@code {database}} in the plugin ids
   * replaced by its index.
   */
  OutboxSettings placed(int database) {
    return copy(c -> {
      c.readJournalPluginId = PartitionActorSettings.placed(c.readJournalPluginId, database);
      c.durableStatePluginId = PartitionActorSettings.placed(c.durableStatePluginId, database);
    });
  }

  /** {@code outbox.enabled}: whether this pipeline runs a relay for each partition it owns. */
  public boolean enabled() {
    return v.enabled;
  }

  public OutboxSettings withEnabled(boolean value) {
    return copy(c -> c.enabled = value);
  }

  /**
   * {@code outbox.poll-interval}: how often an idle relay looks for new outbox records (a batch
   * that wrote some wakes it at once).
   */
  public Duration pollInterval() {
    return v.pollInterval;
  }

  public OutboxSettings withPollInterval(Duration value) {
    return copy(c -> c.pollInterval = value);
  }

  /**
   * {@code outbox.store-position-every}: the longest time between two stores of the relay's
   * position; records published since the last store are published again after a crash (downstream
   * drops them by their {@link io.fencepost.OutboxRecord#ID_HEADER}).
   */
  public Duration storePositionEvery() {
    return v.storePositionEvery;
  }

  public OutboxSettings withStorePositionEvery(Duration value) {
    return copy(c -> c.storePositionEvery = value);
  }

  /** {@code outbox.max-entries-per-round}: journal entries read per round. */
  public int maxEntriesPerRound() {
    return v.maxEntriesPerRound;
  }

  public OutboxSettings withMaxEntriesPerRound(int value) {
    return copy(c -> c.maxEntriesPerRound = value);
  }

  /**
   * {@code outbox.error-after}: how long publishing may keep failing before the relay says so at
   * ERROR (and on the gauge {@code fencepost.outbox.relay.failing}); shorter failures are logged
   * at WARN.
   */
  public Duration errorAfter() {
    return v.errorAfter;
  }

  public OutboxSettings withErrorAfter(Duration value) {
    return copy(c -> c.errorAfter = value);
  }

  /**
   * {@code outbox.read-journal-plugin-id}: the Pekko persistence query plugin that reads the
   * journal.
   */
  public String readJournalPluginId() {
    return v.readJournalPluginId;
  }

  public OutboxSettings withReadJournalPluginId(String value) {
    return copy(c -> c.readJournalPluginId = value);
  }

  /**
   * {@code outbox.durable-state-plugin-id}: where positions are stored; empty: {@code
   * pekko.persistence.state.plugin}.
   */
  public String durableStatePluginId() {
    return v.durableStatePluginId;
  }

  public OutboxSettings withDurableStatePluginId(String value) {
    return copy(c -> c.durableStatePluginId = value);
  }

  /**
   * {@code outbox.producer-kafka-clients}: pass-through properties of the relay's producer
   * (validated like every framework producer: idempotence cannot be switched off).
   */
  public Map<String, String> producer() {
    return v.producer;
  }

  public OutboxSettings withProducer(Map<String, String> value) {
    return copy(c -> c.producer = value);
  }

  /** Shows the producer's property names only (their values may hold credentials). */
  @Override
  public String toString() {
    return "OutboxSettings(enabled=" + v.enabled + ", pollInterval=" + v.pollInterval + ", storePositionEvery="
        + v.storePositionEvery + ", maxEntriesPerRound=" + v.maxEntriesPerRound + ", errorAfter=" + v.errorAfter
        + ", readJournalPluginId=" + v.readJournalPluginId + ", durableStatePluginId=" + v.durableStatePluginId
        + ", producer=" + v.producer.keySet() + ")";
  }
}
