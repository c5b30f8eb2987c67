package io.fencepost.kafka;

import java.util.Locale;

import io.fencepost.errors.SettingsException;

/**
 * {@code auto-offset-reset}: where a partition that never stored an offset starts. A partition that
 * stored one always resumes there, whatever this says.
 */
public enum AutoOffsetReset {
  /** At the oldest record the topic still holds. */
  EARLIEST("earliest"),
  /** At the log end when the partition is first assigned: records produced before are skipped. */
  LATEST("latest");

  private final String configValue;

  AutoOffsetReset(String configValue) {
    this.configValue = configValue;
  }

  /** As written in configuration and passed to the Kafka consumer: {@code earliest} or {@code latest}. */
  public String configValue() {
    return configValue;
  }

  /** The value of {@code key}; anything but earliest or latest (any case) is refused naming the key. */
  static AutoOffsetReset fromConfig(String key, String value) {
    for (AutoOffsetReset r : values()) {
      if (r.configValue.equals(value.toLowerCase(Locale.ROOT).trim())) {
        return r;
      }
    }
    throw new SettingsException(key, value, "must be earliest or latest");
  }
}
