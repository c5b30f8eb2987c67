package io.fencepost.kafka;

import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * {@code query}: how long a query through {@link Pipeline#query} may take. Part of
 * {@link PipelineSettings}, which validates it with its keys named when it is set.
 */
public final class QuerySettings {

  /** Every value; a copy is changed by one {@code withX}, then never again once settings hold it. */
  private static final class Values implements Cloneable {
    Duration timeout;
    Duration attemptTimeout;

    Values copy() {
      try {
        return (Values) clone();
      } catch (CloneNotSupportedException e) {
        throw new AssertionError(e);
      }
    }
  }

  private final Values v;

  private QuerySettings(Values v) {
    Objects.requireNonNull(v.timeout, "timeout");
    Objects.requireNonNull(v.attemptTimeout, "attemptTimeout");
    this.v = v;
  }

  /** Values as read from configuration; {@link PipelineSettings} validates them. */
  static QuerySettings of(Duration timeout, Duration attemptTimeout) {
    Values v = new Values();
    v.timeout = timeout;
    v.attemptTimeout = attemptTimeout;
    return new QuerySettings(v);
  }

  /** The one copy method: {@code change} applied to a copy of the values. */
  private QuerySettings copy(Consumer<Values> change) {
    Values copy = v.copy();
    change.accept(copy);
    return new QuerySettings(copy);
  }

  /** {@code query.timeout}: a query's default timeout, retries and position-bound wait included. */
  public Duration timeout() {
    return v.timeout;
  }

  public QuerySettings withTimeout(Duration value) {
    return copy(c -> c.timeout = value);
  }

  /**
   * {@code query.attempt-timeout}: how long one owner is waited for before the partition's owner is
   * looked up again and asked anew (an owner that left answers nothing).
   */
  public Duration attemptTimeout() {
    return v.attemptTimeout;
  }

  public QuerySettings withAttemptTimeout(Duration value) {
    return copy(c -> c.attemptTimeout = value);
  }

  @Override
  public String toString() {
    return "QuerySettings(timeout=" + v.timeout + ", attemptTimeout=" + v.attemptTimeout + ")";
  }
}
