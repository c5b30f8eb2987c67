package io.fencepost;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * What a {@link PartitionActor#onRecord handler} wants done for one record: the events to persist.
 * The events of every record of a batch are written together with the partition's next offset, in
 * one journal write.
 *
 * @param <E> the event type
 */
public final class Effects<E> {

  private static final Effects<Object> NONE = new Effects<>(List.of());

  private final List<E> events;

  private Effects(List<E> events) {
    this.events = events;
  }

  /** Persist one event. */
  public static <E> Effects<E> persist(E event) {
    return new Effects<>(List.of(Objects.requireNonNull(event, "event")));
  }

  /** Persist these events, in this order. */
  @SafeVarargs
  public static <E> Effects<E> persist(E... events) {
    return new Effects<>(List.copyOf(Arrays.asList(events)));
  }

  /** Persist these events, in this order. */
  public static <E> Effects<E> persistAll(List<? extends E> events) {
    return new Effects<>(List.copyOf(events));
  }

  /** Nothing to persist: the record still counts as applied and the offset moves past it. */
  @SuppressWarnings("unchecked")
  public static <E> Effects<E> none() {
    return (Effects<E>) NONE;
  }

  /** The events, in order. */
  public List<E> events() {
    return events;
  }

  @Override
  public String toString() {
    return "Effects(" + events + ")";
  }
}
