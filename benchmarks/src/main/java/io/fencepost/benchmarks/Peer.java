package io.fencepost.benchmarks;

/**
 * One way of applying the workload's effects (crediting each payment to its merchant), measured side
 * by side with the others on the same broker, topic and database server.
 */
interface Peer {

  /** A short id, e.g. {@code fencepost-eo}. */
  String name();

  /** What it is, for the tables. */
  String description();

  /** What it promises about its effects. */
  Promise promise();

  /** How many of the topic's records a run applies (some peers are too slow for all of them). */
  default int records(Workload workload) {
    return workload.records();
  }

  /** Applies {@link #records(Workload)} records of the run's topic and reports what it did. */
  Outcome run(Run run) throws Exception;
}
