package io.fencepost.internal;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.DoubleSupplier;

import io.fencepost.FencepostMeters;
import io.fencepost.PartitionId;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;

/**
 * Per-partition values of one actor system that outlive the actor incarnation setting them (a
 * restarted actor, a relay next to it) and the gauges reading them, each registered once. A gauge
 * registered again with the same name and tags would keep reading the first incarnation's value;
 * here every incarnation sets the same cell. {@link #removePartition} drops a partition's cells and
 * meters once it left the node.
 */
public final class SharedGauges implements Extension {

  private static final ExtensionId<SharedGauges> ID = new ExtensionId<>() {
    @Override
    public SharedGauges createExtension(ActorSystem<?> system) {
      return new SharedGauges(FencepostMeters.get(system));
    }
  };

  private final FencepostMeters meters;
  private final Map<String, AtomicLong> cells = new ConcurrentHashMap<>();
  private final Map<String, Gauge> gauges = new ConcurrentHashMap<>();
  private final Map<String, AtomicReference<DoubleSupplier>> suppliers = new ConcurrentHashMap<>();

  private SharedGauges(FencepostMeters meters) {
    this.meters = meters;
  }

  public static SharedGauges get(ActorSystem<?> system) {
    return ID.apply(system);
  }

  /** The registry this system's meters are registered in; from the first call on, FencepostMeters.use refuses another. */
  public MeterRegistry registry() {
    return meters.registryForNewMeter();
  }

  /** The tags of a partition's meters: group, topic, partition. */
  public static Tags tags(PartitionId id) {
    return Tags.of("group", id.group(), "topic", id.topic(), "partition", Integer.toString(id.partition()));
  }

  /** A value shared by the partition's incarnations on this node, not a meter itself. */
  public AtomicLong cell(String name, PartitionId id) {
    return cells.computeIfAbsent(key(name, tags(id)), k -> new AtomicLong());
  }

  /** A gauge of the partition reading a shared cell (see {@link #cell}). */
  public AtomicLong gauge(String name, String description, PartitionId id) {
    AtomicLong cell = cell(name, id);
    gauge(name, description, id, cell::get);
    return cell;
  }

  /**
   * A gauge of the partition computed by {@code value}; registered once, and reading the latest
   * {@code value} given for it (a pipeline started again on this node replaces the previous one's).
   */
  public void gauge(String name, String description, PartitionId id, DoubleSupplier value) {
    Tags tags = tags(id);
    String key = key(name, tags);
    AtomicReference<DoubleSupplier> current = suppliers.computeIfAbsent(key, k -> new AtomicReference<>());
    current.set(value);
    gauges.computeIfAbsent(key, k -> Gauge.builder(name, current, c -> c.get().getAsDouble())
        .description(description).tags(tags).strongReference(true).register(registry()));
  }

  /**
   * Removes the partition's gauges and cells: it left this node, and a gauge would go on showing its
   * last value here. Counters and timers stay (they only stop moving): a process's totals, such as
   * its fenced writes, outlive the partitions that made them.
   */
  public void removePartition(PartitionId id) {
    String suffix = key("", tags(id));
    cells.keySet().removeIf(k -> k.endsWith(suffix));
    suppliers.keySet().removeIf(k -> k.endsWith(suffix));
    MeterRegistry registry = registry();
    gauges.entrySet().removeIf(e -> {
      if (!e.getKey().endsWith(suffix)) {
        return false;
      }
      registry.remove(e.getValue());
      return true;
    });
  }

  private static String key(String name, Tags tags) {
    StringBuilder b = new StringBuilder(name);
    for (Tag t : tags) {
      b.append('\u0000').append(t.getKey()).append('=').append(t.getValue());
    }
    return b.toString();
  }
}
