package io.fencepost.kafka;

import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * {@code dead-letter}: where records that cannot be applied go. Part of {@link PipelineSettings},
 * which validates it with its keys named when it is set.
 */
public final class DeadLetterSettings {

  /** Every value; a copy is changed by one {@code withX}, then never again once settings hold it. */
  private static final class Values implements Cloneable {
    String topicSuffix;
    boolean createTopic;
    int maxRecordBytes;
    Map<String, String> producer;

    Values copy() {
      try {
        return (Values) clone();
      } catch (CloneNotSupportedException e) {
        throw new AssertionError(e);
      }
    }
  }

  private final Values v;

  private DeadLetterSettings(Values v) {
    Objects.requireNonNull(v.topicSuffix, "topicSuffix");
    v.producer = Map.copyOf(Objects.requireNonNull(v.producer, "producer"));
    this.v = v;
  }

  /** Values as read from configuration; {@link PipelineSettings} validates them. */
  static DeadLetterSettings of(String topicSuffix, boolean createTopic, int maxRecordBytes,
      Map<String, String> producer) {
    Values v = new Values();
    v.topicSuffix = topicSuffix;
    v.createTopic = createTopic;
    v.maxRecordBytes = maxRecordBytes;
    v.producer = producer;
    return new DeadLetterSettings(v);
  }

  /** The one copy method: {@code change} applied to a copy of the values. */
  private DeadLetterSettings copy(Consumer<Values> change) {
    Values copy = v.copy();
    change.accept(copy);
    return new DeadLetterSettings(copy);
  }

  /** {@code dead-letter.topic-suffix}: the dead-letter topic of topic T is T plus this suffix. */
  public String topicSuffix() {
    return v.topicSuffix;
  }

  public DeadLetterSettings withTopicSuffix(String value) {
    return copy(c -> c.topicSuffix = value);
  }

  /**
   * {@code dead-letter.create-topic}: create a missing dead-letter topic at start (off: a missing one
   * fails the start).
   */
  public boolean createTopic() {
    return v.createTopic;
  }

  public DeadLetterSettings withCreateTopic(boolean value) {
    return copy(c -> c.createTopic = value);
  }

  /**
   * {@code dead-letter.max-record-bytes}: values larger than this are dead-lettered without being
   * decoded.
   */
  public int maxRecordBytes() {
    return v.maxRecordBytes;
  }

  public DeadLetterSettings withMaxRecordBytes(int value) {
    return copy(c -> c.maxRecordBytes = value);
  }

  /**
   * {@code dead-letter.producer-kafka-clients}: pass-through properties of the dead-letter producer
   * (validated: idempotence cannot be switched off).
   */
  public Map<String, String> producer() {
    return v.producer;
  }

  public DeadLetterSettings withProducer(Map<String, String> value) {
    return copy(c -> c.producer = value);
  }

  /** The dead-letter topic of {@code topic}. */
  public String topicFor(String topic) {
    return topic + v.topicSuffix;
  }

  /** Shows the producer's property names only (their values may hold credentials). */
  @Override
  public String toString() {
    return "DeadLetterSettings(topicSuffix=" + v.topicSuffix + ", createTopic=" + v.createTopic + ", maxRecordBytes="
        + v.maxRecordBytes
        + ", producer=" + v.producer.keySet() + ")";
  }
}
