package io.fencepost.kafka;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * How a {@link Pipeline#query} is answered: its timeout (default {@code query.timeout}) and its
 * optional position bound, "answer only from a state that has applied the record at this offset of
 * the partition": a producer that knows its record's offset (from its {@code RecordMetadata}) reads
 * its own write with {@code QueryOptions.defaults().afterOffset(metadata.offset())}.
 */
public final class QueryOptions {

  private static final QueryOptions DEFAULTS = new QueryOptions(null, -1);

  private final Duration timeout;
  private final long minNextOffset;

  private QueryOptions(Duration timeout, long minNextOffset) {
    this.timeout = timeout;
    this.minNextOffset = minNextOffset;
  }

  /** No bound; the pipeline's {@code query.timeout}. */
  public static QueryOptions defaults() {
    return DEFAULTS;
  }

  /** These options with this timeout (retries and the wait for the bound included). */
  public QueryOptions withTimeout(Duration value) {
    Objects.requireNonNull(value, "timeout");
    if (value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException("a query's timeout must be > 0, was " + value);
    }
    return new QueryOptions(value, minNextOffset);
  }

  /**
   * These options with a position bound: the answer comes from a state that includes the record at
   * {@code offset} (its applied next offset is above it). The owner waits for it within the timeout.
   */
  public QueryOptions afterOffset(long offset) {
    if (offset < 0) {
      throw new IllegalArgumentException("an offset must be >= 0, was " + offset);
    }
    return new QueryOptions(timeout, offset + 1);
  }

  /** The timeout, when set (else the pipeline's {@code query.timeout}). */
  public Optional<Duration> timeout() {
    return Optional.ofNullable(timeout);
  }

  /** The lowest applied next offset an answer may come from ({@code -1}: any, even nothing applied). */
  public long minNextOffset() {
    return minNextOffset;
  }

  /** These options with a bound at least {@code nextOffset} (a session's last seen position). */
  QueryOptions atLeastNext(long nextOffset) {
    return nextOffset <= minNextOffset ? this : new QueryOptions(timeout, nextOffset);
  }

  @Override
  public String toString() {
    return "QueryOptions(timeout=" + (timeout == null ? "query.timeout" : timeout) + ", minNextOffset="
        + minNextOffset + ")";
  }
}
