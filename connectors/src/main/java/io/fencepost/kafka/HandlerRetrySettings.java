package io.fencepost.kafka;

import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * {@code handler-retry}: the exponential backoff of a handler that throws a
 * {@link io.fencepost.errors.RetriableException}. Part of {@link PipelineSettings}, which validates
 * it with its keys named when it is set.
 */
public final class HandlerRetrySettings {

  /** Every value; a copy is changed by one {@code withX}, then never again once settings hold it. */
  private static final class Values implements Cloneable {
    Duration initial;
    Duration max;
    double multiplier;
    int maxAttempts;

    Values copy() {
      try {
        return (Values) clone();
      } catch (CloneNotSupportedException e) {
        throw new AssertionError(e);
      }
    }
  }

  private final Values v;

  private HandlerRetrySettings(Values v) {
    Objects.requireNonNull(v.initial, "initial");
    Objects.requireNonNull(v.max, "max");
    this.v = v;
  }

  /** Values as read from configuration; {@link PipelineSettings} validates them. */
  static HandlerRetrySettings of(Duration initial, Duration max, double multiplier, int maxAttempts) {
    Values v = new Values();
    v.initial = initial;
    v.max = max;
    v.multiplier = multiplier;
    v.maxAttempts = maxAttempts;
    return new HandlerRetrySettings(v);
  }

  /** The one copy method: {@code change} applied to a copy of the values. */
  private HandlerRetrySettings copy(Consumer<Values> change) {
    Values copy = v.copy();
    change.accept(copy);
    return new HandlerRetrySettings(copy);
  }

  /** {@code handler-retry.initial}. */
  public Duration initial() {
    return v.initial;
  }

  public HandlerRetrySettings withInitial(Duration value) {
    return copy(c -> c.initial = value);
  }

  /** {@code handler-retry.max}. */
  public Duration max() {
    return v.max;
  }

  public HandlerRetrySettings withMax(Duration value) {
    return copy(c -> c.max = value);
  }

  /** {@code handler-retry.multiplier}. */
  public double multiplier() {
    return v.multiplier;
  }

  public HandlerRetrySettings withMultiplier(double value) {
    return copy(c -> c.multiplier = value);
  }

  /**
   * {@code handler-retry.max-attempts}: attempts in all, the first included, before the record is
   * dead-lettered.
   */
  public int maxAttempts() {
    return v.maxAttempts;
  }

  public HandlerRetrySettings withMaxAttempts(int value) {
    return copy(c -> c.maxAttempts = value);
  }

  @Override
  public String toString() {
    return "HandlerRetrySettings(initial=" + v.initial + ", max=" + v.max + ", multiplier=" + v.multiplier
        + ", maxAttempts=" + v.maxAttempts + ")";
  }
}
