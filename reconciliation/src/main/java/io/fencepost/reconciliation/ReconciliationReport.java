package io.fencepost.reconciliation;

import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * The outcome of a {@link Reconciliation}. {@code droppedByKey} is what the actors reported dropping as business-key
 * duplicates; it should equal the input's producer duplicates that reached a partition after
 * their first copy.
 */
public record ReconciliationReport(String topic, String group, Map<Instant, Counts> buckets, Counts total,
    long droppedByKey, long unexpectedEffects, List<String> sampleMissing, List<String> sampleDoubled, long deadLettered,
    long sequenceGaps, List<String> sampleGaps) {

  /** Counts for one time bucket, or for the total. */
  public record Counts(long records, long expected, long applied, long missing, long doubled,
      long producerDuplicates, long deadLettered) {
  }

  /** True when nothing is missing, nothing doubled and no producer sequence has a gap. */
  public boolean ok() {
    return total.missing() == 0 && total.doubled() == 0 && unexpectedEffects == 0 && sequenceGaps == 0;
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
    sb.append(verdict());
    return sb.toString();
  }

  /** One line: {@code VERDICT OK ...} or {@code VERDICT FAILED ...}. */
  public String verdict() {
    return String.format("VERDICT %s: %,d distinct keys expected, %,d applied, %,d missing, %,d doubled, "
        + "%,d producer duplicates", ok() ? "OK" : "FAILED", total.expected(), total.applied(), total.missing(),
        total.doubled(), total.producerDuplicates())
        + (total.deadLettered() > 0 ? String.format(", %,d dead-lettered", total.deadLettered()) : "")
        + (sequenceGaps > 0 ? String.format(", %,d sequence gaps", sequenceGaps) : "");
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
        .append(strings(sampleDoubled)).append(",\"sampleGaps\":").append(strings(sampleGaps)).append('}');
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
