package io.fencepost.kafka;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.common.TopicPartition;

/**
 * When the stall watchdog may seek a stuck partition again. A partition whose log end and position
 * have not changed since its last restart is either stuck again (a restart is due, or it would stay
 * stuck for good) or only has a transaction marker past its last record (a restart finds nothing):
 * the two cannot be told apart, so restarts at the same place back off, doubling from
 * {@code stall-timeout} up to {@value #MAX_DOUBLINGS} doublings; new records or progress start over.
 */
final class StallRestarts {

  static final int MAX_DOUBLINGS = 4;

  private record Last(long end, long position, int times, long atNanos) {
  }

  private final Duration stallTimeout;
  private final Map<TopicPartition, Last> last = new ConcurrentHashMap<>();

  StallRestarts(Duration stallTimeout) {
    this.stallTimeout = stallTimeout;
  }

  /** Whether a partition stalled at ({@code end}, {@code position}) may be restarted now; if so, it is recorded. */
  boolean due(TopicPartition tp, long end, long position, long nowNanos) {
    Last before = last.get(tp);
    if (before != null && before.end() == end && before.position() == position) {
      long wait = stallTimeout.toNanos() << Math.min(before.times(), MAX_DOUBLINGS);
      if (nowNanos - before.atNanos() < wait) {
        return false;
      }
      last.put(tp, new Last(end, position, before.times() + 1, nowNanos));
      return true;
    }
    last.put(tp, new Last(end, position, 1, nowNanos));
    return true;
  }

  /** How many restarts in a row happened at the partition's current place (0: none). */
  int times(TopicPartition tp) {
    Last l = last.get(tp);
    return l == null ? 0 : l.times();
  }
}
