package io.fencepost.benchmarks;

/**
 * What one run of one peer did.
 *
 * @param records effects expected (records the peer had to apply)
 * @param applied effects found where the peer keeps them, duplicates included
 * @param duplicates effects applied more than once (for a reconciled journal: records applied more than once)
 * @param losses records whose effect is missing
 * @param seconds from the start (see {@link Progress}) to the last effect being done
 * @param peakHeapMib live heap of the whole JVM during the run, the in-process broker included (see Heap)
 * @param database what the run wrote to PostgreSQL, or null for peers without a database
 * @param latency end-to-end latency percentiles, or null when not measured in this run
 * @param checkedBy how duplicates and losses were counted
 */
record Outcome(long records, long applied, long duplicates, long losses, double seconds, long peakHeapMib,
    DbUsage database, Latency latency, String checkedBy) {

  /** Records per second. */
  double rate() {
    return records / seconds;
  }
}
