package io.fencepost.kafka;

import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * {@code retry-backoff}: the backoff between resends of a batch its actor rejected or did not answer
 * within {@code ask-timeout}. Part of {@link PipelineSettings}, which validates it with its keys
 * named when it is set.
 */
public final class RetryBackoffSettings {

  /** Every value; a copy is changed by one {@code withX}, then never again once settings hold it. */
  private static final class Values implements Cloneable {
    Duration min;
    Duration max;

    Values copy() {
      try {
        return (Values) clone();
      } catch (CloneNotSupportedException e) {
        throw new AssertionError(e);
      }
    }
  }

  private final Values v;

  private RetryBackoffSettings(Values v) {
    Objects.requireNonNull(v.min, "min");
    Objects.requireNonNull(v.max, "max");
    this.v = v;
  }

  /** Values as read from configuration; {@link PipelineSettings} validates them. */
  static RetryBackoffSettings of(Duration min, Duration max) {
    Values v = new Values();
    v.min = min;
    v.max = max;
    return new RetryBackoffSettings(v);
  }

  /** The one copy method: {@code change} applied to a copy of the values. */
  private RetryBackoffSettings copy(Consumer<Values> change) {
    Values copy = v.copy();
    change.accept(copy);
    return new RetryBackoffSettings(copy);
  }

  /** {@code retry-backoff.min}. */
  public Duration min() {
    return v.min;
  }

  public RetryBackoffSettings withMin(Duration value) {
    return copy(c -> c.min = value);
  }

  /** {@code retry-backoff.max}. */
  public Duration max() {
    return v.max;
  }

  public RetryBackoffSettings withMax(Duration value) {
    return copy(c -> c.max = value);
  }

  @Override
  public String toString() {
    return "RetryBackoffSettings(min=" + v.min + ", max=" + v.max + ")";
  }
}
