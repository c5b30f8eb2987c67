package io.fencepost.errors;

/** A setting that is invalid or would silently weaken a guarantee; names the key, the value and the rule. */
public final class SettingsException extends FatalException {

  private final String key;
  private final String value;
  private final String rule;

  public SettingsException(String key, Object value, String rule) {
    super(key + " " + rule + ", was [" + value + "]");
    this.key = key;
    this.value = String.valueOf(value);
    this.rule = rule;
  }

  /** The rule the value breaks, e.g. {@code must be > 0}. */
  public String rule() {
    return rule;
  }

  /** The configuration key at fault, e.g. {@code fencepost.partition-actor.snapshot-every}. */
  public String key() {
    return key;
  }

  /** The offending value as text. */
  public String value() {
    return value;
  }
}
