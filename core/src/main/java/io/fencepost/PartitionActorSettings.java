package io.fencepost;

import java.time.Duration;
import java.util.Objects;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import io.fencepost.errors.SettingsException;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * Immutable settings of a {@link PartitionActor}, read once from {@code fencepost.partition-actor}
 * (every key is documented in core's {@code reference.conf}) and validated on creation: an invalid
 * value fails with a {@link SettingsException} naming the key, the value and the rule.
 */
public final class PartitionActorSettings {

  /** The configuration section these settings are read from. */
  public static final String CONFIG_PATH = "fencepost.partition-actor";

  private final DeliveryMode deliveryMode;
  private final int snapshotEvery;
  private final int keepSnapshots;
  private final boolean keyWindowEnabled;
  private final int keyWindowMaxKeys;
  private final Duration keyWindowMaxAge;
  private final String keyHeader;
  private final String journalPluginId;
  private final String snapshotPluginId;
  private final Duration backoffMin;
  private final Duration backoffMax;
  private final double backoffRandomFactor;
  private final boolean perKeyOrdering;
  private final Duration callTimeout;
  private final Duration atMostOnceLinger;

  private PartitionActorSettings(DeliveryMode deliveryMode, int snapshotEvery, int keepSnapshots,
      boolean keyWindowEnabled, int keyWindowMaxKeys, Duration keyWindowMaxAge, String keyHeader,
      String journalPluginId, String snapshotPluginId, Duration backoffMin, Duration backoffMax,
      double backoffRandomFactor, boolean perKeyOrdering, Duration callTimeout, Duration atMostOnceLinger) {
    this.perKeyOrdering = perKeyOrdering;
    if (atMostOnceLinger.isNegative()) {
      throw new SettingsException(CONFIG_PATH + ".at-most-once-linger", atMostOnceLinger, "must be >= 0");
    }
    this.atMostOnceLinger = atMostOnceLinger;
    this.callTimeout = requirePositive(CONFIG_PATH + ".external-call.timeout", callTimeout);
    this.deliveryMode = Objects.requireNonNull(deliveryMode, "deliveryMode");
    this.snapshotEvery = requirePositive(CONFIG_PATH + "." + "snapshot-every", snapshotEvery);
    this.keepSnapshots = requirePositive(CONFIG_PATH + "." + "keep-snapshots", keepSnapshots);
    this.keyWindowEnabled = keyWindowEnabled;
    this.keyWindowMaxKeys = requirePositive(CONFIG_PATH + "." + "key-window.max-keys", keyWindowMaxKeys);
    if (keyWindowMaxKeys > MAX_WINDOW_KEYS) {
      // The window's index has two slots a key, in one array: past this it would not fit.
      throw new SettingsException(CONFIG_PATH + ".key-window.max-keys", keyWindowMaxKeys,
          "must be <= " + MAX_WINDOW_KEYS + " (2^29; about 16 GiB of heap per partition at that size)");
    }
    this.keyWindowMaxAge = requirePositive(CONFIG_PATH + "." + "key-window.max-age", keyWindowMaxAge);
    this.keyHeader = Objects.requireNonNull(keyHeader, "keyHeader");
    this.journalPluginId = Objects.requireNonNull(journalPluginId, "journalPluginId");
    this.snapshotPluginId = Objects.requireNonNull(snapshotPluginId, "snapshotPluginId");
    this.backoffMin = requirePositive(CONFIG_PATH + "." + "failure-backoff.min", backoffMin);
    this.backoffMax = requirePositive(CONFIG_PATH + "." + "failure-backoff.max", backoffMax);
    if (backoffMax.compareTo(backoffMin) < 0) {
      throw new SettingsException(CONFIG_PATH + ".failure-backoff.max", backoffMax,
          "must be >= failure-backoff.min [" + backoffMin + "]");
    }
    if (backoffRandomFactor < 0 || backoffRandomFactor > 1) {
      throw new SettingsException(CONFIG_PATH + ".failure-backoff.random-factor", backoffRandomFactor,
          "must be between 0.0 and 1.0");
    }
    this.backoffRandomFactor = backoffRandomFactor;
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
    String key = null;
    try {
      key = "delivery-mode";
      DeliveryMode mode = DeliveryMode.fromConfig(pathForErrors + "." + key, section.getString(key));
      key = "snapshot-every";
      int snapshotEvery = section.getInt(key);
      key = "keep-snapshots";
      int keep = section.getInt(key);
      key = "key-window.enabled";
      boolean enabled = section.getBoolean(key);
      key = "key-window.max-keys";
      int maxKeys = section.getInt(key);
      key = "key-window.max-age";
      Duration maxAge = section.getDuration(key);
      key = "key-window.header";
      String header = section.getString(key);
      key = "journal-plugin-id";
      String journal = section.getString(key);
      key = "snapshot-plugin-id";
      String snapshot = section.getString(key);
      key = "failure-backoff.min";
      Duration min = section.getDuration(key);
      key = "failure-backoff.max";
      Duration max = section.getDuration(key);
      key = "failure-backoff.random-factor";
      double random = section.getDouble(key);
      key = "per-key-ordering";
      boolean perKey = section.getBoolean(key);
      key = "external-call.timeout";
      Duration callTimeout = section.getDuration(key);
      key = "at-most-once-linger";
      Duration linger = section.getDuration(key);
      return new PartitionActorSettings(mode, snapshotEvery, keep, enabled, maxKeys, maxAge, header, journal,
          snapshot, min, max, random, perKey, callTimeout, linger);
    } catch (ConfigException.WrongType | ConfigException.BadValue e) {
      throw new SettingsException(pathForErrors + "." + key, describe(section, key),
          "has the wrong type or format (" + e.getMessage() + ")");
    } catch (ConfigException.Missing e) {
      throw new SettingsException(pathForErrors + "." + key, "missing", "must be set (see reference.conf)");
    } catch (SettingsException e) {
      if (pathForErrors.equals(CONFIG_PATH) || !e.key().startsWith(CONFIG_PATH)) {
        throw e;
      }
      throw new SettingsException(pathForErrors + e.key().substring(CONFIG_PATH.length()), e.value(), e.rule());
    }
  }

  private static String describe(Config section, String key) {
    try {
      return section.getValue(key).unwrapped().toString();
    } catch (RuntimeException e) {
      return "?";
    }
  }

  /** The largest key window a partition can hold (its index is one array of two slots a key). */
  private static final int MAX_WINDOW_KEYS = 1 << 29;

  private static int requirePositive(String key, int value) {
    if (value <= 0) {
      throw new SettingsException(key, value, "must be > 0");
    }
    return value;
  }

  private static Duration requirePositive(String key, Duration value) {
    if (value.isNegative() || value.isZero()) {
      throw new SettingsException(key, value, "must be > 0");
    }
    return value;
  }

  public DeliveryMode deliveryMode() {
    return deliveryMode;
  }

  public int snapshotEvery() {
    return snapshotEvery;
  }

  public int keepSnapshots() {
    return keepSnapshots;
  }

  public boolean keyWindowEnabled() {
    return keyWindowEnabled;
  }

  public int keyWindowMaxKeys() {
    return keyWindowMaxKeys;
  }

  public Duration keyWindowMaxAge() {
    return keyWindowMaxAge;
  }

  /** The header holding the business key by default; empty for none. */
  public String keyHeader() {
    return keyHeader;
  }

  public String journalPluginId() {
    return journalPluginId;
  }

  public String snapshotPluginId() {
    return snapshotPluginId;
  }

  public Duration backoffMin() {
    return backoffMin;
  }

  public Duration backoffMax() {
    return backoffMax;
  }

  public double backoffRandomFactor() {
    return backoffRandomFactor;
  }

  /** Whether later records of a dead-lettered key are parked until it is replayed. */
  public boolean perKeyOrdering() {
    return perKeyOrdering;
  }

  public PartitionActorSettings withPerKeyOrdering(boolean value) {
    return new PartitionActorSettings(deliveryMode, snapshotEvery, keepSnapshots, keyWindowEnabled, keyWindowMaxKeys,
        keyWindowMaxAge, keyHeader, journalPluginId, snapshotPluginId, backoffMin, backoffMax, backoffRandomFactor,
        value, callTimeout, atMostOnceLinger);
  }

  /** How long an external call ({@code Effects.call}) may take before it fails as retriable. */
  public Duration callTimeout() {
    return callTimeout;
  }

  public PartitionActorSettings withCallTimeout(Duration value) {
    return new PartitionActorSettings(deliveryMode, snapshotEvery, keepSnapshots, keyWindowEnabled, keyWindowMaxKeys,
        keyWindowMaxAge, keyHeader, journalPluginId, snapshotPluginId, backoffMin, backoffMax, backoffRandomFactor,
        perKeyOrdering, value, atMostOnceLinger);
  }

  /**
   * at-most-once: how long the effects of a batch wait for the next batch's offset write to carry
   * them before they are written alone; zero writes them at once.
   */
  public Duration atMostOnceLinger() {
    return atMostOnceLinger;
  }

  public PartitionActorSettings withAtMostOnceLinger(Duration value) {
    return new PartitionActorSettings(deliveryMode, snapshotEvery, keepSnapshots, keyWindowEnabled, keyWindowMaxKeys,
        keyWindowMaxAge, keyHeader, journalPluginId, snapshotPluginId, backoffMin, backoffMax, backoffRandomFactor,
        perKeyOrdering, callTimeout, value);
  }

  public PartitionActorSettings withDeliveryMode(DeliveryMode value) {
    return new PartitionActorSettings(value, snapshotEvery, keepSnapshots, keyWindowEnabled, keyWindowMaxKeys,
        keyWindowMaxAge, keyHeader, journalPluginId, snapshotPluginId, backoffMin, backoffMax, backoffRandomFactor,
        perKeyOrdering, callTimeout, atMostOnceLinger);
  }

  public PartitionActorSettings withSnapshotEvery(int value) {
    return new PartitionActorSettings(deliveryMode, value, keepSnapshots, keyWindowEnabled, keyWindowMaxKeys,
        keyWindowMaxAge, keyHeader, journalPluginId, snapshotPluginId, backoffMin, backoffMax, backoffRandomFactor,
        perKeyOrdering, callTimeout, atMostOnceLinger);
  }

  public PartitionActorSettings withKeyWindow(boolean enabled, int maxKeys, Duration maxAge) {
    return new PartitionActorSettings(deliveryMode, snapshotEvery, keepSnapshots, enabled, maxKeys, maxAge,
        keyHeader, journalPluginId, snapshotPluginId, backoffMin, backoffMax, backoffRandomFactor,
        perKeyOrdering, callTimeout, atMostOnceLinger);
  }

  public PartitionActorSettings withKeyHeader(String value) {
    return new PartitionActorSettings(deliveryMode, snapshotEvery, keepSnapshots, keyWindowEnabled, keyWindowMaxKeys,
        keyWindowMaxAge, value, journalPluginId, snapshotPluginId, backoffMin, backoffMax, backoffRandomFactor,
        perKeyOrdering, callTimeout, atMostOnceLinger);
  }

  public PartitionActorSettings withFailureBackoff(Duration min, Duration max) {
    return new PartitionActorSettings(deliveryMode, snapshotEvery, keepSnapshots, keyWindowEnabled, keyWindowMaxKeys,
        keyWindowMaxAge, keyHeader, journalPluginId, snapshotPluginId, min, max, backoffRandomFactor, perKeyOrdering,
        callTimeout, atMostOnceLinger);
  }

  // The key window's clock per incarnation; only this package's tests replace it (a node whose clock runs
  // ahead). Set on a fresh copy only, so settings stay immutable to everybody else.
  // The clocks the key window ages by (see WindowClock): the system's, or a test's.
  private java.util.function.LongSupplier wallMillis = System::currentTimeMillis;
  private java.util.function.LongSupplier monotonicNanos = System::nanoTime;

  PartitionActorSettings withClocks(java.util.function.LongSupplier wallMillis,
      java.util.function.LongSupplier monotonicNanos) {
    PartitionActorSettings copy = withFailureBackoff(backoffMin, backoffMax);
    copy.wallMillis = wallMillis;
    copy.monotonicNanos = monotonicNanos;
    return copy;
  }

  java.util.function.LongSupplier wallMillis() {
    return wallMillis;
  }

  java.util.function.LongSupplier monotonicNanos() {
    return monotonicNanos;
  }

  @Override
  public String toString() {
    return "PartitionActorSettings(deliveryMode=" + deliveryMode.configValue() + ", snapshotEvery=" + snapshotEvery
        + ", keepSnapshots=" + keepSnapshots + ", keyWindow=" + (keyWindowEnabled ? keyWindowMaxKeys + " keys/"
        + keyWindowMaxAge : "off") + ", keyHeader=" + keyHeader + ", journalPluginId=" + journalPluginId
        + ", snapshotPluginId=" + snapshotPluginId + ", failureBackoff=" + backoffMin + ".." + backoffMax
        + " x" + backoffRandomFactor + ", perKeyOrdering=" + perKeyOrdering + ", callTimeout=" + callTimeout
        + ", atMostOnceLinger=" + atMostOnceLinger + ")";
  }
}
