package io.fencepost.kafka;

import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * {@code commit}: how often applied offsets are committed to Kafka (for lag monitoring only). Part of
 * {@link PipelineSettings}, which validates it with its keys named when it is set.
 */
public final class CommitSettings {

  /** Every value; a copy is changed by one {@code withX}, then never again once settings hold it. */
  private static final class Values implements Cloneable {
    int maxBatch;
    Duration maxInterval;

    Values copy() {
      try {
        return (Values) clone();
      } catch (CloneNotSupportedException e) {
        throw new AssertionError(e);
      }
    }
  }

  private final Values v;

  private CommitSettings(Values v) {
    Objects.requireNonNull(v.maxInterval, "maxInterval");
    this.v = v;
  }

  /** Values as read from configuration; {@link PipelineSettings} validates them. */
  static CommitSettings of(int maxBatch, Duration maxInterval) {
    Values v = new Values();
    v.maxBatch = maxBatch;
    v.maxInterval = maxInterval;
    return new CommitSettings(v);
  }

  /** The one copy method: {@code change} applied to a copy of the values. */
  private CommitSettings copy(Consumer<Values> change) {
    Values copy = v.copy();
    change.accept(copy);
    return new CommitSettings(copy);
  }

  /** {@code commit.max-batch}: commit once this many records were applied since the last commit. */
  public int maxBatch() {
    return v.maxBatch;
  }

  public CommitSettings withMaxBatch(int value) {
    return copy(c -> c.maxBatch = value);
  }

  /** {@code commit.max-interval}: commit at least this often while records are applied. */
  public Duration maxInterval() {
    return v.maxInterval;
  }

  public CommitSettings withMaxInterval(Duration value) {
    return copy(c -> c.maxInterval = value);
  }

  @Override
  public String toString() {
    return "CommitSettings(maxBatch=" + v.maxBatch + ", maxInterval=" + v.maxInterval + ")";
  }
}
