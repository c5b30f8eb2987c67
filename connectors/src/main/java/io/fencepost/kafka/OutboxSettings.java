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
 * ({@link io.fencepost.Effects#andPublish}) from the journal to Kafka, exactly once to
 * {@code read_committed} consumers ({@link Delivery#EXACTLY_ONCE}: each round one Kafka transaction
 * with the relay's position) or at least once ({@link Delivery#AT_LEAST_ONCE}: the position in the
 * journal's durable-state store). Part of {@link PipelineSettings}, which validates it with its keys
 * named when it is set.
 */
public final class OutboxSettings {

  /** {@code outbox.delivery}: what a consumer of the outbox topics sees. */
  public enum Delivery {
    /**
     * Each relay round is one Kafka transaction holding its records and the relay's new position (a
     * record on {@code outbox.position-topic}); a relay fences earlier relays of its partition when it
     * starts (a transactional id per partition). A {@code read_committed} consumer sees each record once.
     */
    EXACTLY_ONCE,
    /** Records are published, then the position is stored: a crash or a stale relay publishes copies. */
    AT_LEAST_ONCE;

    /** The setting's value: {@code exactly-once} or {@code at-least-once}. */
    public String value() {
      return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
    }

    static Delivery parse(String value, String key) {
      for (Delivery d : values()) {
        if (d.value().equals(value.trim())) {
          return d;
        }
      }
      throw new SettingsException(key, value, "must be exactly-once or at-least-once");
    }
  }

  /** Every value; a copy is changed by one {@code withX}, then never again once settings hold it. */
  private static final class Values implements Cloneable {
    boolean enabled;
    Delivery delivery;
    String positionTopic;
    Duration transactionInterval;
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
    Objects.requireNonNull(v.delivery, "delivery");
    Objects.requireNonNull(v.positionTopic, "positionTopic");
    Objects.requireNonNull(v.transactionInterval, "transactionInterval");
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
      key = "delivery";
      Delivery delivery = Delivery.parse(outbox.getString(key), path + "." + key);
      key = "position-topic";
      String positionTopic = outbox.getString(key);
      key = "transaction-interval";
      Duration transactionInterval = outbox.getDuration(key);
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
      Map<String, String> producer = PipelineConfig.properties(outbox.getConfig(key), path + "." + key);
      Values v = new Values();
      v.enabled = enabled;
      v.delivery = delivery;
      v.positionTopic = positionTopic;
      v.transactionInterval = transactionInterval;
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
    PipelineRules.positive(path + ".transaction-interval", v.transactionInterval);
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
    if (v.delivery == Delivery.EXACTLY_ONCE) {
      try {
        org.apache.kafka.common.internals.Topic.validate(v.positionTopic);
      } catch (org.apache.kafka.common.errors.InvalidTopicException e) {
        throw new SettingsException(path + ".position-topic", v.positionTopic, "must be a valid Kafka topic name "
            + "(1 to 249 of a-z, A-Z, 0-9, '.', '_', '-'), e.g. fencepost-outbox-positions");
      }
      long delivery = millis(v.producer, "delivery.timeout.ms", 120_000);
      long block = millis(v.producer, "max.block.ms", 60_000);
      long transaction = millis(v.producer, "transaction.timeout.ms", 60_000);
      if (transaction <= delivery + block) {
        throw new SettingsException(path + ".producer-kafka-clients.transaction.timeout.ms", transaction, "must be "
            + "longer than delivery.timeout.ms + max.block.ms (" + delivery + " + " + block + " ms), which a relay "
            + "round's sends may take before it commits: the broker would abort the round's transaction first. Raise "
            + "transaction.timeout.ms (at most the brokers' transaction.max.timeout.ms) or lower the others");
      }
    }
  }

  private static long millis(Map<String, String> producer, String key, long kafkaDefault) {
    String value = producer.get(key);
    try {
      return value == null ? kafkaDefault : Long.parseLong(value.trim());
    } catch (NumberFormatException e) {
      throw new SettingsException(key, value, "must be a number of milliseconds");
    }
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

  /** {@code outbox.delivery}: exactly once to {@code read_committed} consumers, or at least once. */
  public Delivery delivery() {
    return v.delivery;
  }

  public OutboxSettings withDelivery(Delivery value) {
    return copy(c -> c.delivery = Objects.requireNonNull(value, "delivery"));
  }

  /**
   * {@code outbox.position-topic}: with {@link Delivery#EXACTLY_ONCE}, the compacted topic each relay
   * round writes the relay's position to, in the round's transaction (one key per partition); created
   * at start when missing.
   */
  public String positionTopic() {
    return v.positionTopic;
  }

  public OutboxSettings withPositionTopic(String value) {
    return copy(c -> c.positionTopic = Objects.requireNonNull(value, "positionTopic"));
  }

  /**
   * {@code outbox.transaction-interval}: with exactly-once delivery, the shortest time between the
   * starts of two transactions of one relay (records journaled meanwhile go in the next one).
   */
  public Duration transactionInterval() {
    return v.transactionInterval;
  }

  public OutboxSettings withTransactionInterval(Duration value) {
    return copy(c -> c.transactionInterval = value);
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
    return "OutboxSettings(enabled=" + v.enabled + ", delivery=" + v.delivery.value() + ", positionTopic="
        + v.positionTopic + ", transactionInterval=" + v.transactionInterval + ", pollInterval=" + v.pollInterval + ", storePositionEvery="
        + v.storePositionEvery + ", maxEntriesPerRound=" + v.maxEntriesPerRound + ", errorAfter=" + v.errorAfter
        + ", readJournalPluginId=" + v.readJournalPluginId + ", durableStatePluginId=" + v.durableStatePluginId
        + ", producer=" + v.producer.keySet() + ")";
  }
}
