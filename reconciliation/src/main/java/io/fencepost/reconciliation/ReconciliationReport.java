package io.fencepost.reconciliation;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The outcome of a {@link Reconciliation}. {@code droppedByKey} is what the actors reported dropping as business-key
 * duplicates; it should equal the input's producer duplicates that reached a partition after
 * their first copy.
 */
public record ReconciliationReport(String topic, String group, Map<Instant, Counts> buckets, Counts total,
    long droppedByKey, long unexpectedEffects, List<String> sampleMissing, List<String> sampleDoubled, long deadLettered,
    long sequenceGaps, List<String> sampleGaps, Optional<Outbox> outbox) {

  /**
   * An outbox topic as a {@code read_committed} consumer sees it, against the outbox records the
   * journal holds for it: {@code expected} journaled records, {@code published} of them seen at least
   * once, {@code missing} never, {@code copies} records repeating an id, {@code unknown} records whose id
   * the journal does not hold (or that have none). Missing records fail it; copies fail it only when the
   * relay delivers exactly once.
   */
  public record Outbox(String topic, boolean exactlyOnce, long expected, long records, long published, long missing,
      long copies, long unknown, List<String> sampleMissing) {

    public boolean ok() {
      return missing == 0 && (!exactlyOnce || copies == 0);
    }

    /** One line. */
    public String render() {
      return String.format("outbox topic [%s] (read_committed, %s): %,d records, %,d of %,d journaled outbox records "
          + "published, %,d missing, %,d copies, %,d with no journal entry", topic, exactlyOnce ? "exactly once"
          : "at least once", records, published, expected, missing, copies, unknown)
          + (sampleMissing.isEmpty() ? "" : "; missing (first " + sampleMissing.size() + "): " + sampleMissing);
    }
  }

  /** Counts for one time bucket, or for the total. */
  public record Counts(long records, long expected, long applied, long missing, long doubled,
      long producerDuplicates, long deadLettered) {
  }

  /**
   * True when nothing is missing, nothing doubled and no producer sequence has a gap (and, with an
   * outbox topic, nothing missing there and, exactly once, no copies).
   */
  public boolean ok() {
    return total.missing() == 0 && total.doubled() == 0 && unexpectedEffects == 0 && sequenceGaps == 0
        && outbox.map(Outbox::ok).orElse(true);
  }

  /** A table for people. */
  public String render() {
    StringBuilder sb = new StringBuilder();
    sb.append(String.format("%-20s %10s %10s %10s %8s %8s %12s %8s%n", "bucket (UTC)", "records", "expected",
        "applied", "missing", "doubled", "producer-dup", "dead"));
    buckets.forEach((at, c) -> sb.append(row(at.toString().replace("T", " ").replace("Z", ""), c)));
    sb.append(row("total", total));
    sb.append(String.format("dropped by business key (journaled): %,d; dead-lettered (journaled): %,d; "
        + "effects with no input record: %,d; producer sequence gaps: %,d%n", droppedByKey, deadLettered,
        unexpectedEffects, sequenceGaps));
    if (!sampleMissing.isEmpty()) {
      sb.append("missing (first ").append(sampleMissing.size()).append("): ").append(sampleMissing).append('\n');
    }
    if (!sampleDoubled.isEmpty()) {
      sb.append("doubled (first ").append(sampleDoubled.size()).append("): ").append(sampleDoubled).append('\n');
    }
    if (!sampleGaps.isEmpty()) {
      sb.append("sequence gaps (first ").append(sampleGaps.size()).append("): ").append(sampleGaps).append('\n');
    }
    outbox.ifPresent(o -> sb.append(o.render()).append('\n'));
    sb.append(verdict());
    return sb.toString();
  }

  /** One line: {@code VERDICT OK ...} or {@code VERDICT FAILED ...}. */
  public String verdict() {
    return String.format("VERDICT %s: %,d distinct keys expected, %,d applied, %,d missing, %,d doubled, "
        + "%,d producer duplicates", ok() ? "OK" : "FAILED", total.expected(), total.applied(), total.missing(),
        total.doubled(), total.producerDuplicates())
        + (total.deadLettered() > 0 ? String.format(", %,d dead-lettered", total.deadLettered()) : "")
        + (sequenceGaps > 0 ? String.format(", %,d sequence gaps", sequenceGaps) : "")
        + outbox.map(o -> String.format("; outbox topic [%s]: %,d missing, %,d copies", o.topic(), o.missing(),
            o.copies())).orElse("");
  }

  private static String row(String label, Counts c) {
    return String.format("%-20s %,10d %,10d %,10d %,8d %,8d %,12d %,8d%n", label.length() > 19
        ? label.substring(0, 19) : label, c.records(), c.expected(), c.applied(), c.missing(), c.doubled(),
        c.producerDuplicates(), c.deadLettered());
  }

  /** The report as JSON. */
  public String toJson() {
    StringBuilder sb = new StringBuilder("{");
    sb.append("\"topic\":\"").append(topic).append("\",\"group\":\"").append(group).append("\",\"ok\":").append(ok());
    sb.append(",\"total\":").append(json(total)).append(",\"droppedByKey\":").append(droppedByKey);
    sb.append(",\"unexpectedEffects\":").append(unexpectedEffects).append(",\"deadLettered\":").append(deadLettered)
        .append(",\"sequenceGaps\":").append(sequenceGaps).append(",\"buckets\":[");
    boolean first = true;
    for (Map.Entry<Instant, Counts> e : buckets.entrySet()) {
      sb.append(first ? "" : ",").append("{\"start\":\"").append(e.getKey()).append("\",\"counts\":")
          .append(json(e.getValue())).append('}');
      first = false;
    }
    sb.append("],\"sampleMissing\":").append(strings(sampleMissing)).append(",\"sampleDoubled\":")
        .append(strings(sampleDoubled)).append(",\"sampleGaps\":").append(strings(sampleGaps));
    outbox.ifPresent(o -> sb.append(",\"outbox\":{\"topic\":\"").append(o.topic()).append("\",\"exactlyOnce\":")
        .append(o.exactlyOnce()).append(",\"ok\":").append(o.ok()).append(",\"expected\":").append(o.expected())
        .append(",\"records\":").append(o.records()).append(",\"published\":").append(o.published())
        .append(",\"missing\":").append(o.missing()).append(",\"copies\":").append(o.copies())
        .append(",\"unknown\":").append(o.unknown()).append(",\"sampleMissing\":").append(strings(o.sampleMissing()))
        .append('}'));
    sb.append('}');
    return sb.toString();
  }

  private static String json(Counts c) {
    return "{\"records\":" + c.records() + ",\"expected\":" + c.expected() + ",\"applied\":" + c.applied()
        + ",\"missing\":" + c.missing() + ",\"doubled\":" + c.doubled() + ",\"producerDuplicates\":"
        + c.producerDuplicates() + ",\"deadLettered\":" + c.deadLettered() + "}";
  }

  private static String strings(List<String> values) {
    StringBuilder sb = new StringBuilder("[");
    for (int i = 0; i < values.size(); i++) {
      sb.append(i == 0 ? "" : ",").append('"').append(values.get(i).replace("\\", "\\\\").replace("\"", "\\\""))
          .append('"');
    }
    return sb.append(']').toString();
  }
}
