package io.fencepost;

import java.util.Locale;

import io.fencepost.errors.SettingsException;

/**
 * In which order a partition actor makes its effects and its offset durable, which decides what a
 * crash does. Set per actor type with {@code fencepost.partition-actor.delivery-mode}.
 */
public enum DeliveryMode {
  /**
   * Effects (journal events) and next offset in one journal write. A crash anywhere leaves both or
   * neither: nothing lost, nothing doubled. The handler must not perform external side effects.
   */
  EXACTLY_ONCE("exactly-once"),
  /**
   * The handler performs its external effects while it runs, then effects and offset are written.
   * A crash between the two repeats the external effects of that batch; the handler receives the
   * same {@link PartitionActor#idempotencyKey idempotency key} each time, for the provider to
   * deduplicate.
   */
  AT_LEAST_ONCE("at-least-once"),
  /**
   * The offset is written first, then the handler runs and its events are written with the next
   * batch's offset (or alone, after {@code at-most-once-linger}); never retried. A crash (or a
   * handler failure) after the offset write and before that write loses that batch's effects.
   */
  AT_MOST_ONCE("at-most-once");

  private final String configValue;

  DeliveryMode(String configValue) {
    this.configValue = configValue;
  }

  /** The value in configuration: {@code exactly-once}, {@code at-least-once} or {@code at-most-once}. */
  public String configValue() {
    return configValue;
  }

  /** Parses a configuration value. */
  public static DeliveryMode fromConfig(String key, String value) {
    for (DeliveryMode m : values()) {
      if (m.configValue.equals(value.toLowerCase(Locale.ROOT))) {
        return m;
      }
    }
    throw new SettingsException(key, value,
        "must be one of exactly-once, at-least-once, at-most-once");
  }
}
