package io.fencepost.kafka;

import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * {@code batch}: how records are grouped into one journal write. Part of {@link PipelineSettings},
 * which validates it with its keys named when it is set.
 */
public final class BatchSettings {

  /** Every value; a copy is changed by one {@code withX}, then never again once settings hold it. */
  private static final class Values implements Cloneable {
    int maxRecords;
    Duration maxLatency;

    Values copy() {
      try {
        return (Values) clone();
      } catch (CloneNotSupportedException e) {
        throw new AssertionError(e);
      }
    }
  }

  private final Values v;

  private BatchSettings(Values v) {
    Objects.requireNonNull(v.maxLatency, "maxLatency");
    this.v = v;
  }

  /** Values as read from configuration; {@link PipelineSettings} validates them. */
  static BatchSettings of(int maxRecords, Duration maxLatency) {
    Values v = new Values();
    v.maxRecords = maxRecords;
    v.maxLatency = maxLatency;
    return new BatchSettings(v);
  }

  /** The one copy method: {@code change} applied to a copy of the values. */
  private BatchSettings copy(Consumer<Values> change) {
    Values copy = v.copy();
    change.accept(copy);
    return new BatchSettings(copy);
  }

  /** {@code batch.max-records}: most records per journal write. */
  public int maxRecords() {
    return v.maxRecords;
  }

  public BatchSettings withMaxRecords(int value) {
    return copy(c -> c.maxRecords = value);
  }

  /** {@code batch.max-latency}: longest a record waits for its batch to fill. */
  public Duration maxLatency() {
    return v.maxLatency;
  }

  public BatchSettings withMaxLatency(Duration value) {
    return copy(c -> c.maxLatency = value);
  }

  @Override
  public String toString() {
    return "BatchSettings(maxRecords=" + v.maxRecords + ", maxLatency=" + v.maxLatency + ")";
  }
}
