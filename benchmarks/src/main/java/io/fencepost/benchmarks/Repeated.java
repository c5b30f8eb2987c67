package io.fencepost.benchmarks;

import java.util.Comparator;
import java.util.List;

/**
 * The runs of one peer on one workload, repeated to see through the noise of a small shared machine:
 * its figures are those of the median run (by records/s), its duplicates and losses those of all
 * runs together.
 *
 * @param runs the runs, in the order they ran
 */
record Repeated(List<Outcome> runs) {

  Repeated {
    if (runs.isEmpty()) {
      throw new IllegalArgumentException("no runs");
    }
    runs = List.copyOf(runs);
  }

  /** The run with the median rate (the lower one of the middle two for an even count). */
  Outcome median() {
    List<Outcome> sorted = runs.stream().sorted(Comparator.comparingDouble(Outcome::rate)).toList();
    return sorted.get((sorted.size() - 1) / 2);
  }

  double rate() {
    return median().rate();
  }

  double minRate() {
    return runs.stream().mapToDouble(Outcome::rate).min().orElseThrow();
  }

  double maxRate() {
    return runs.stream().mapToDouble(Outcome::rate).max().orElseThrow();
  }

  long duplicates() {
    return runs.stream().mapToLong(Outcome::duplicates).sum();
  }

  long losses() {
    return runs.stream().mapToLong(Outcome::losses).sum();
  }

  /** Whether every run applied exactly its records. */
  boolean allApplied() {
    return runs.stream().allMatch(o -> o.applied() == o.records());
  }

  /** Whether every run keeps the promise. */
  boolean keptBy(Promise promise) {
    return runs.stream().allMatch(promise::keptBy);
  }
}
