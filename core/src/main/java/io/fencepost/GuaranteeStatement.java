package io.fencepost;

import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * What a partition actor type guarantees, hop by hop, rendered from its settings: logged at start and
 * returned by the pipeline's API, so nobody has to guess where the guarantee ends.
 *
 * @param mode the delivery mode
 * @param hop1 producer to broker: what catches a record re-sent at a new offset
 * @param hop2 broker to consumer: what catches a redelivered offset
 * @param hop3 consumer to effect: how effects and position become durable
 */
public record GuaranteeStatement(DeliveryMode mode, String hop1, String hop2, String hop3) {

  public GuaranteeStatement {
    Objects.requireNonNull(mode, "mode");
  }

  /** The statement for these settings; {@code journal} names where effects are written. */
  public static GuaranteeStatement of(PartitionActorSettings s, String journal) {
    String hop1 = s.keyWindowEnabled()
        ? "business-key window " + human(s.keyWindowMaxAge()) + " / " + String.format(Locale.ROOT, "%,d", s.keyWindowMaxKeys())
            + " keys per partition (a re-send older than the window is applied again)"
        : "none: business-key window off; a producer-side re-send at a new offset is applied again";
    String hop2 = "offset fence, no expiry: offsets below the stored next offset are dropped";
    String hop3 = switch (s.deliveryMode()) {
      case EXACTLY_ONCE -> "effects atomic with the next offset in one write to journal " + journal
          + ": nothing lost, nothing doubled";
      case AT_LEAST_ONCE -> "external effects first, then effects and offset in one write to journal " + journal
          + ": a crash in between repeats that batch's external effects (stable idempotency key)";
      case AT_MOST_ONCE -> "offset first, then effects, never retried, in journal " + journal
          + ": a crash in between LOSES that batch's effects";
    };
    return new GuaranteeStatement(s.deliveryMode(), hop1, hop2, hop3);
  }

  private static String human(Duration d) {
    if (d.toHours() > 0 && d.toMinutesPart() == 0 && d.toSecondsPart() == 0) {
      return d.toHours() + "h";
    }
    if (d.toMinutes() > 0 && d.toSecondsPart() == 0) {
      return d.toMinutes() + "min";
    }
    return d.toMillis() + "ms";
  }

  /** The whole statement on one line ({@code mode; hop 1: ...; hop 2: ...; hop 3: ...}), as logged at start. */
  public String render() {
    return mode.configValue() + "; hop 1: " + hop1 + "; hop 2: " + hop2 + "; hop 3: " + hop3;
  }

  @Override
  public String toString() {
    return render();
  }
}
