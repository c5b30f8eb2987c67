package io.fencepost;

import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

import com.typesafe.config.Config;
import io.fencepost.errors.SettingsException;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * Immutable settings of a {@link PartitionActor}, read once from {@code fencepost.partition-actor}
 * (every key is documented in core's {@code reference.conf}) and validated on creation: an invalid
 * value fails with a {@link SettingsException} naming the key, the value and the rule.
 *
 * <p>Fencepost's settings classes share one pattern: every key has a {@code withX} returning a copy,
 * made by the one private {@code copy} method and validated as new settings, so an invalid value
 * is refused where it is set, with its key named.
 */
public final class PartitionActorSettings {

  /** The configuration section these settings are read from. */
  public static final String CONFIG_PATH = "fencepost.partition-actor";

  /**
   * In a plugin id, replaced by the index of the journal database a partition's history lives in
   * ({@code journal-databases}).
   */
  public static final String DATABASE_PLACEHOLDER = "{database}";

  /**
   * The configuration path of the journal databases' URLs as verified at start, in order
   * ({@code JournalDatabases.pekkoConfig()} sets it): a journal plugin of database {@code i} that
   * reaches another URL is refused when a pipeline starts. Empty: not checked.
   */
  public static final String VERIFIED_URLS = CONFIG_PATH + ".journal-database-urls";

  /** The most journal databases a deployment can spread its partitions' histories over. */
  public static final int MAX_JOURNAL_DATABASES = 64;

  /** The largest key window a partition can hold (its index is one array of two slots a key). */
  private static final int MAX_WINDOW_KEYS = 1 << 29;

  /** Every value; a copy is changed by one {@code withX}, then never again once settings hold it. */
  static final class Values implements Cloneable {
    DeliveryMode deliveryMode;
    int snapshotEvery;
    int keepSnapshots;
    boolean keyWindowEnabled;
    int keyWindowMaxKeys;
    Duration keyWindowMaxAge;
    String keyHeader;
    String journalPluginId;
    String snapshotPluginId;
    int journalDatabases;
    Duration backoffMin;
    Duration backoffMax;
    double backoffRandomFactor;
    boolean perKeyOrdering;
    Duration callTimeout;
    Duration atMostOnceLinger;
    /** The clocks the key window ages by (see WindowClock): the system's, or a test's. */
    LongSupplier wallMillis = System::currentTimeMillis;
    LongSupplier monotonicNanos = System::nanoTime;

    Values copy() {
      try {
        return (Values) clone();
      } catch (CloneNotSupportedException e) {
        throw new AssertionError(e);
      }
    }
  }

  private final Values v;

  private PartitionActorSettings(Values v) {
    this.v = v;
    String p = CONFIG_PATH + ".";
    Objects.requireNonNull(v.deliveryMode, "deliveryMode");
    positive(p + "snapshot-every", v.snapshotEvery);
    positive(p + "keep-snapshots", v.keepSnapshots);
    positive(p + "key-window.max-keys", v.keyWindowMaxKeys);
    if (v.keyWindowMaxKeys > MAX_WINDOW_KEYS) {
      // The window's index has two slots a key, in one array: past this it would not fit.
      throw new SettingsException(p + "key-window.max-keys", v.keyWindowMaxKeys,
          "must be <= " + MAX_WINDOW_KEYS + " (2^29; about 16 GiB of heap per partition at that size)");
    }
    positive(p + "key-window.max-age", v.keyWindowMaxAge);
    Objects.requireNonNull(v.keyHeader, "keyHeader");
    Objects.requireNonNull(v.journalPluginId, "journalPluginId");
    Objects.requireNonNull(v.snapshotPluginId, "snapshotPluginId");
    if (v.journalDatabases < 1 || v.journalDatabases > MAX_JOURNAL_DATABASES) {
      throw new SettingsException(p + "journal-databases", v.journalDatabases,
          "must be between 1 and " + MAX_JOURNAL_DATABASES);
    }
    if (v.journalDatabases > 1) {
      requirePlaceholder(p + "journal-plugin-id", v.journalPluginId);
      requirePlaceholder(p + "snapshot-plugin-id", v.snapshotPluginId);
    }
    positive(p + "failure-backoff.min", v.backoffMin);
    positive(p + "failure-backoff.max", v.backoffMax);
    if (v.backoffMax.compareTo(v.backoffMin) < 0) {
      throw new SettingsException(p + "failure-backoff.max", v.backoffMax,
          "must be >= failure-backoff.min [" + v.backoffMin + "]");
    }
    if (v.backoffRandomFactor < 0 || v.backoffRandomFactor > 1) {
      throw new SettingsException(p + "failure-backoff.random-factor", v.backoffRandomFactor,
          "must be between 0.0 and 1.0");
    }
    positive(p + "external-call.timeout", v.callTimeout);
    if (v.atMostOnceLinger.isNegative()) {
      throw new SettingsException(p + "at-most-once-linger", v.atMostOnceLinger, "must be >= 0");
    }
  }

  /**
   * With several journal databases, a plugin id must name each database's own plugin: one id would
   * put every partition's history in one database whatever the list says.
   */
  public static void requirePlaceholder(String key, String pluginId) {
    if (!pluginId.contains(DATABASE_PLACEHOLDER)) {
      throw new SettingsException(key, pluginId, "must contain " + DATABASE_PLACEHOLDER + " when journal-databases "
          + "> 1 (each database has plugins of its own: JournalDatabases.pekkoConfig() sets them)");
    }
  }

  /** {@code pluginId} with each {@value #DATABASE_PLACEHOLDER} replaced by {@code database}. */
  public static String placed(String pluginId, int database) {
    return pluginId.replace(DATABASE_PLACEHOLDER, Integer.toString(database));
  }

  private static void positive(String key, int value) {
    if (value <= 0) {
      throw new SettingsException(key, value, "must be > 0");
    }
  }

  private static void positive(String key, Duration value) {
    if (Objects.requireNonNull(value, key).isNegative() || value.isZero()) {
      throw new SettingsException(key, value, "must be > 0");
    }
  }

  /** The one copy method: {@code change} applied to a copy of the values, validated as new settings. */
  private PartitionActorSettings copy(Consumer<Values> change) {
    Values copy = v.copy();
    change.accept(copy);
    return new PartitionActorSettings(copy);
  }

  /** Settings from the actor system's configuration. */
  public static PartitionActorSettings create(ActorSystem<?> system) {
    return create(system.settings().config());
  }

  /** Settings from a root configuration containing {@value #CONFIG_PATH}. */
  public static PartitionActorSettings create(Config root) {
    return fromSection(root.getConfig(CONFIG_PATH), CONFIG_PATH);
  }

  /**
   * Settings from a section laid out like {@value #CONFIG_PATH} (missing keys fall back to it), e.g. a
   * pipeline's own {@code partition-actor} block.
   */
  public static PartitionActorSettings fromSection(Config section, String pathForErrors) {
    return PartitionActorConfig.read(section, pathForErrors);
  }

  /** Settings of {@code values} (read from configuration), validated. */
  static PartitionActorSettings of(Values values) {
    return new PartitionActorSettings(values);
  }

  /** {@code delivery-mode}. */
  public DeliveryMode deliveryMode() {
    return v.deliveryMode;
  }

  public PartitionActorSettings withDeliveryMode(DeliveryMode value) {
    return copy(c -> c.deliveryMode = value);
  }

  /** {@code snapshot-every}: journal writes between snapshots. */
  public int snapshotEvery() {
    return v.snapshotEvery;
  }

  public PartitionActorSettings withSnapshotEvery(int value) {
    return copy(c -> c.snapshotEvery = value);
  }

  /** {@code keep-snapshots}: snapshots kept per partition. */
  public int keepSnapshots() {
    return v.keepSnapshots;
  }

  public PartitionActorSettings withKeepSnapshots(int value) {
    return copy(c -> c.keepSnapshots = value);
  }

  /** {@code key-window.enabled}. */
  public boolean keyWindowEnabled() {
    return v.keyWindowEnabled;
  }

  public PartitionActorSettings withKeyWindowEnabled(boolean value) {
    return copy(c -> c.keyWindowEnabled = value);
  }

  /** {@code key-window.max-keys}. */
  public int keyWindowMaxKeys() {
    return v.keyWindowMaxKeys;
  }

  public PartitionActorSettings withKeyWindowMaxKeys(int value) {
    return copy(c -> c.keyWindowMaxKeys = value);
  }

  /** {@code key-window.max-age}. */
  public Duration keyWindowMaxAge() {
    return v.keyWindowMaxAge;
  }

  public PartitionActorSettings withKeyWindowMaxAge(Duration value) {
    return copy(c -> c.keyWindowMaxAge = value);
  }

  /** {@code key-window.enabled}, {@code max-keys} and {@code max-age} at once. */
  public PartitionActorSettings withKeyWindow(boolean enabled, int maxKeys, Duration maxAge) {
    return copy(c -> {
      c.keyWindowEnabled = enabled;
      c.keyWindowMaxKeys = maxKeys;
      c.keyWindowMaxAge = maxAge;
    });
  }

  /** {@code key-window.header}: the header holding the business key by default; empty for none. */
  public String keyHeader() {
    return v.keyHeader;
  }

  public PartitionActorSettings withKeyHeader(String value) {
    return copy(c -> c.keyHeader = value);
  }

  /** {@code journal-plugin-id}. */
  public String journalPluginId() {
    return v.journalPluginId;
  }

  public PartitionActorSettings withJournalPluginId(String value) {
    return copy(c -> c.journalPluginId = value);
  }

  /** {@code snapshot-plugin-id}. */
  public String snapshotPluginId() {
    return v.snapshotPluginId;
  }

  public PartitionActorSettings withSnapshotPluginId(String value) {
    return copy(c -> c.snapshotPluginId = value);
  }

  /**
   * {@code journal-databases}: how many databases the partitions' histories are spread over (1: all
   * in one).
   */
  public int journalDatabases() {
    return v.journalDatabases;
  }

  /**
   * Spreads the histories over {@code databases} databases, each with plugins of its own: the plugin
   * ids (both) must contain {@value #DATABASE_PLACEHOLDER} when {@code databases > 1}.
   */
  public PartitionActorSettings withJournalDatabases(int databases, String journalPluginId, String snapshotPluginId) {
    return copy(c -> {
      c.journalDatabases = databases;
      c.journalPluginId = journalPluginId;
      c.snapshotPluginId = snapshotPluginId;
    });
  }

  /** The journal plugin of database {@code database} ({@code ""}: Pekko's default journal). */
  public String journalPluginId(int database) {
    return placed(v.journalPluginId, database);
  }

  /** The snapshot plugin of database {@code database} ({@code ""}: Pekko's default snapshot store). */
  public String snapshotPluginId(int database) {
    return placed(v.snapshotPluginId, database);
  }

  /** The journal plugin that holds partition {@code id}'s history. */
  public String journalPluginId(PartitionId id) {
    return journalPluginId(id.journalDatabase(v.journalDatabases));
  }

  /** The snapshot plugin that holds partition {@code id}'s snapshots. */
  public String snapshotPluginId(PartitionId id) {
    return snapshotPluginId(id.journalDatabase(v.journalDatabases));
  }

  /** {@code failure-backoff.min}. */
  public Duration backoffMin() {
    return v.backoffMin;
  }

  /** {@code failure-backoff.max}. */
  public Duration backoffMax() {
    return v.backoffMax;
  }

  /** {@code failure-backoff.min} and {@code max}. */
  public PartitionActorSettings withFailureBackoff(Duration min, Duration max) {
    return copy(c -> {
      c.backoffMin = min;
      c.backoffMax = max;
    });
  }

  /** {@code failure-backoff.random-factor}. */
  public double backoffRandomFactor() {
    return v.backoffRandomFactor;
  }

  public PartitionActorSettings withFailureBackoffRandomFactor(double value) {
    return copy(c -> c.backoffRandomFactor = value);
  }

  /** {@code per-key-ordering}: whether later records of a dead-lettered key are parked until it is replayed. */
  public boolean perKeyOrdering() {
    return v.perKeyOrdering;
  }

  public PartitionActorSettings withPerKeyOrdering(boolean value) {
    return copy(c -> c.perKeyOrdering = value);
  }

  /** {@code external-call.timeout}: how long an external call ({@code Effects.call}) may take before it fails as retriable. */
  public Duration callTimeout() {
    return v.callTimeout;
  }

  public PartitionActorSettings withCallTimeout(Duration value) {
    return copy(c -> c.callTimeout = value);
  }

  /**
   * {@code at-most-once-linger}: how long the effects of a batch wait for the next batch's offset
   * write to carry them before they are written alone; zero writes them at once.
   */
  public Duration atMostOnceLinger() {
    return v.atMostOnceLinger;
  }

  public PartitionActorSettings withAtMostOnceLinger(Duration value) {
    return copy(c -> c.atMostOnceLinger = value);
  }

  /** The key window's clocks: only this package's tests replace them (a node whose clock runs ahead). */
  PartitionActorSettings withClocks(LongSupplier wallMillis, LongSupplier monotonicNanos) {
    return copy(c -> {
      c.wallMillis = wallMillis;
      c.monotonicNanos = monotonicNanos;
    });
  }

  LongSupplier wallMillis() {
    return v.wallMillis;
  }

  LongSupplier monotonicNanos() {
    return v.monotonicNanos;
  }

  @Override
  public String toString() {
    return "PartitionActorSettings(deliveryMode=" + v.deliveryMode.configValue() + ", snapshotEvery="
        + v.snapshotEvery + ", keepSnapshots=" + v.keepSnapshots + ", keyWindow=" + (v.keyWindowEnabled
        ? v.keyWindowMaxKeys + " keys/" + v.keyWindowMaxAge : "off") + ", keyHeader=" + v.keyHeader
        + ", journalPluginId=" + v.journalPluginId + ", snapshotPluginId=" + v.snapshotPluginId + ", journalDatabases=" + v.journalDatabases
        + ", failureBackoff="
        + v.backoffMin + ".." + v.backoffMax + " x" + v.backoffRandomFactor + ", perKeyOrdering=" + v.perKeyOrdering
        + ", callTimeout=" + v.callTimeout + ", atMostOnceLinger=" + v.atMostOnceLinger + ")";
  }
}
