package io.fencepost.tools;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalTime;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Optional;

/**
 * What the ledger nodes' logs say about partition ownership: fenced writes, partition restarts and anomalies that must never happen, and when partitions started after a
 * fault. Reads whole log files (every start of a node appends to its file).
 */
record OwnershipLog(long fencedWrites, long partitionRestarts, long anomalies) {

  /** Lines of the ownership state machine that report a broken rule (a bug): never expected. */
  static final List<String> ANOMALIES = List.of("(a bug", "has not ended after");
  static final String RESTART = "seeking it to its actor's stored offset again";
  static final String SEEK = "seeking to stored offsets";

  /** Counts over the given node logs. */
  public static OwnershipLog of(List<Path> logs) {
    long fenced = 0;
    long restarts = 0;
    long anomalies = 0;
    for (Path log : logs) {
      for (String line : lines(log)) {
        fenced += isFencedWrite(line) ? 1 : 0;
        restarts += line.contains(RESTART) ? 1 : 0;
        anomalies += ANOMALIES.stream().anyMatch(line::contains) ? 1 : 0;
      }
    }
    return new OwnershipLog(fenced, restarts, anomalies);
  }

  /**
   * A partition actor's own line for a write the journal refused (not the pipeline's resend warning
   * that quotes the rejection): at once on the unique key, or after recovery for other failures.
   */
  public static boolean isFencedWrite(String line) {
    return line.contains("] fenced: the journal refused")
        || line.contains("PartitionBehavior") && line.contains("] fenced: this incarnation expected");
  }

  /** True when no rule of ownership was broken and no partition had to be restarted. */
  public boolean clean() {
    return anomalies == 0 && partitionRestarts == 0;
  }

  public String render() {
    return "fenced writes " + fencedWrites + ", partition restarts " + partitionRestarts + ", ownership anomalies " + anomalies;
  }

  /**
   * The time from {@code fault} (same day, log clock) to the first partition stream started in any of
   * {@code logs} after it: how long a fail-over took until a survivor consumed again.
   */
  public static Optional<Duration> firstSeekAfter(LocalTime fault, List<Path> logs) {
    LocalTime first = null;
    for (Path log : logs) {
      for (String line : lines(log)) {
        if (line.contains(SEEK) && line.length() > 12) {
          try {
            LocalTime t = LocalTime.parse(line.substring(0, 12));
            if (t.isAfter(fault) && (first == null || t.isBefore(first))) {
              first = t;
            }
          } catch (DateTimeParseException e) {
            // not a log line
          }
        }
      }
    }
    return Optional.ofNullable(first).map(t -> Duration.between(fault, t));
  }

  private static List<String> lines(Path log) {
    try {
      return Files.exists(log) ? Files.readAllLines(log, StandardCharsets.UTF_8) : List.of();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
