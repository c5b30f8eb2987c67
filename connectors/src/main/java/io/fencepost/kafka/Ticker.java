package io.fencepost.kafka;

/**
 * The pipeline's clock for elapsed time: when a partition last made progress, since when it has been
 * busy, failing or missing, when offsets were last committed. Everything that measures such an age
 * reads it from the one {@code Ticker} the pipeline was wired with, so a unit test can move time
 * forward instead of waiting for it ({@code java.time.Clock} is wall-clock time, which jumps; ages
 * need {@link System#nanoTime()}'s monotonic kind).
 *
 * <p>Bounded waits on real work (a drain, a probe's poll, the consumer loop's backoff sleep) are not
 * ages: they wait in real time, whatever this clock says.
 */
@FunctionalInterface
interface Ticker {

  /** The system's monotonic clock. */
  Ticker SYSTEM = System::nanoTime;

  /** Nanoseconds from an arbitrary origin; only differences between two readings mean anything. */
  long nanoTime();
}
