package io.fencepost.examples;

import java.util.HashMap;
import java.util.Map;

import io.fencepost.Effects;
import io.fencepost.Inbound;
import io.fencepost.JacksonSerializable;
import io.fencepost.PartitionActor;
import io.fencepost.PartitionContext;

/**
 * Telemetry, explicitly <b>at-most-once</b> (run it with
 * {@code fencepost.pipelines.telemetry.partition-actor.delivery-mode = at-most-once}): the latest
 * value per sensor. A lost sample is cheaper than the machinery that would prevent it, because the
 * next sample supersedes it within seconds; so the offset is written first, a crash after that write
 * loses that batch's samples, a failing handler loses its own sample, and nothing is ever retried. Nobody later assumes
 * otherwise: the actor logs a warning at start, and the guarantee statement says LOSES.
 */
public final class TelemetryActor extends PartitionActor<Reading, TelemetryActor.Latest, TelemetryActor.Sampled> {

  /** The event: a sample kept. */
  public record Sampled(String sensor, double value, long offset) implements JacksonSerializable {
  }

  /** The latest value per sensor and how many samples were kept. Immutable. */
  public record Latest(Map<String, Double> values, long samples) implements JacksonSerializable {
    public Latest {
      values = Map.copyOf(values);
    }

    Latest with(Sampled s) {
      Map<String, Double> next = new HashMap<>(values);
      next.put(s.sensor(), s.value());
      return new Latest(next, samples + 1);
    }
  }

  public TelemetryActor(PartitionContext context) {
    super(context);
  }

  @Override
  protected Latest emptyState() {
    return new Latest(Map.of(), 0);
  }

  @Override
  protected Effects<Sampled> onRecord(Latest latest, Inbound<Reading> in) {
    Reading r = in.value();
    if (Double.isNaN(r.value())) {
      throw new IllegalArgumentException("sensor " + r.sensor() + " sent NaN");
    }
    return Effects.persist(new Sampled(r.sensor(), r.value(), in.offset()));
  }

  @Override
  protected Latest applyEvent(Latest latest, Sampled s) {
    return latest.with(s);
  }
}
