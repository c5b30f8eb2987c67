package io.fencepost.kafka;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What this node knows of one assignment of a partition: created when the partition is assigned,
 * marked revoked when it is revoked (or the assignment is restarted), never reused afterwards, so a
 * late callback of an earlier assignment can always tell that it is stale.
 *
 * <p>Which thread writes what (every field is volatile or atomic; readers are status, health, the
 * meters and the watchdog, on any thread):
 * <ul>
 *   <li>the consumer thread ({@link Assignments}, {@link FlowControl}): {@code revoked}, {@code flowing},
 *       {@code haltHandled}, {@code busySinceNanos}, and at the seek {@code knownNextOffset},
 *       {@code highestDelivered}, {@code lastProgressNanos}; {@code buffered} up;</li>
 *   <li>the partition's stream, one batch at a time ({@link BatchDelivery}, {@link Assignments}'s
 *       after-batch): {@code inFlight}, {@code inFlightActivityNanos}, {@code retries}, {@code lastError}
 *       (with {@link DeadLetterPublisher}, inside the batch), and after each batch
 *       {@code knownNextOffset}, {@code highestDelivered}, {@code lastProgressNanos}; {@code buffered}
 *       down. The seek happens before the stream starts and after the previous one ended, so the two
 *       writers of those three fields never overlap;</li>
 *   <li>the preparation, before the stream starts ({@link SeekTargets}): {@code logStart},
 *       {@code freshStart};</li>
 *   <li>the watchdog ({@link StallWatchdog}): {@code logEnd};</li>
 *   <li>{@code halted}: whoever halts the partition first (delivery, the preparation, the actor's
 *       answer); only ever set, and only once it is null.</li>
 * </ul>
 */
final class PartitionProgress {
  final AtomicLong retries = new AtomicLong();
  volatile String lastError = "";
  /** Why the partition is halted (see PartitionHaltedException), or null: nothing more is delivered. */
  volatile String halted;
  /** Set once the consumer thread paused the halted partition (and logged and counted it). */
  volatile boolean haltHandled;
  /** No batch of this assignment is sent again once set. */
  volatile boolean revoked;
  /** Set once the partition seeked to its stored offset and its stream runs. */
  volatile boolean flowing;
  volatile boolean inFlight;
  /** When the batch in flight was sent, or last retried (a resend, a dead-letter publication again). */
  volatile long inFlightActivityNanos;
  volatile long lastProgressNanos;
  final long assignedNanos;
  /** Records polled for this assignment and not yet through their batch. */
  final AtomicInteger buffered = new AtomicInteger();
  /** When the partition last went from idle (nothing buffered or in flight) to having records to apply. */
  volatile long busySinceNanos;
  /** The partition's log end as last measured (-1: not yet), for lag. */
  volatile long logEnd = -1;
  volatile long knownNextOffset = -1;
  /**
   * The log start offset read at assignment (-1: unknown); it only grows, so no readable record lies
   * below it later either.
   */
  volatile long logStart = -1;
  /**
   * auto-offset-reset latest, for a partition that never stored an offset: the log end it was seeked
   * to (-1 otherwise). Its first batch must hold every readable record from here on.
   */
  volatile long freshStart = -1;
  /**
   * The last offset handed to delivery by this assignment's stream (its seek target - 1 at first). A
   * batch at or below it means the consumer's position went back: the log was truncated or recreated.
   */
  volatile long highestDelivered = Long.MIN_VALUE;

  /** An assignment made at {@code nowNanos} (its {@link Ticker}'s reading). */
  PartitionProgress(long nowNanos) {
    this.assignedNanos = nowNanos;
    this.lastProgressNanos = nowNanos;
    this.busySinceNanos = nowNanos;
  }

  /** Records between the stored next offset and the log end as last measured; NaN while either is unknown. */
  double lag() {
    long end = logEnd;
    long next = knownNextOffset;
    return end < 0 || next < 0 ? Double.NaN : Math.max(0, end - next);
  }

  /**
   * How long the partition has been stuck: not flowing since it was assigned (its actor cannot
   * recover or tell its offset), or holding records (buffered or in flight) with no batch finished
   * since it got them; 0 when it is not, and when it is halted (on purpose, not stuck).
   */
  long stuckNanos(long nowNanos) {
    if (halted != null) {
      return 0;
    }
    if (!flowing) {
      return revoked ? 0 : nowNanos - assignedNanos;
    }
    boolean busy = inFlight || buffered.get() > 0;
    return busy ? nowNanos - Math.max(lastProgressNanos, busySinceNanos) : 0;
  }

  /**
   * How long the batch in flight has gone without a reply, a retry or a failure (0 with none in
   * flight): a delivery that hangs, which no retry loop will end.
   */
  long silentInFlightNanos(long nowNanos) {
    return inFlight ? nowNanos - inFlightActivityNanos : 0;
  }

  /**
   * Halted, or stuck ({@link #stuckNanos}) for longer than {@code stallTimeout}: what
   * {@code fencepost.partition.stalled} reports.
   */
  boolean stalled(Duration stallTimeout, long nowNanos) {
    if (halted != null) {
      return true;
    }
    return stuckNanos(nowNanos) > stallTimeout.toNanos();
  }
}
