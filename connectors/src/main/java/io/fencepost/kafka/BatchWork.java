package io.fencepost.kafka;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.Function;

import io.fencepost.DeadLetter;
import io.fencepost.Inbound;
import io.fencepost.PartitionId;
import io.fencepost.FailedRecords;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

/**
 * One batch on its way to its actor ({@link BatchDelivery}): its raw records by offset, the ones
 * decoded, the dead letters of the ones that could not be, what became of failed records, and how
 * far it is known to cover the log. Used by one delivery at a time.
 */
final class BatchWork {

  final PartitionId id;
  final PartitionProgress progress;
  final Map<Long, ConsumerRecord<byte[], byte[]>> raw = new HashMap<>();
  final List<Inbound<?>> records = new ArrayList<>();
  final List<DeadLetter> deadLetters = new ArrayList<>();
  /** Attempts per failing offset, and what becomes of failed and parked records. */
  final FailedRecords failures;
  final long first;
  final long last;
  // From which offset on the batch is known to hold every readable record (see ApplyBatch):
  // everywhere when it starts at the log start without holes, else nowhere until the log showed
  // that its holes hold nothing (onGap).
  long coveredFrom = Long.MAX_VALUE;
  int gapChecks;
  int unanswered;

  BatchWork(PartitionId id, PartitionProgress progress, List<ConsumerRecord<byte[], byte[]>> batch,
      Function<ConsumerRecord<byte[], byte[]>, Inbound<?>> decode, int maxHandlerAttempts) {
    this.id = id;
    this.progress = progress;
    this.failures = new FailedRecords(id, maxHandlerAttempts);
    long lo = Long.MAX_VALUE;
    long hi = Long.MIN_VALUE;
    for (ConsumerRecord<byte[], byte[]> r : batch) {
      raw.put(r.offset(), r);
      lo = Math.min(lo, r.offset());
      hi = Math.max(hi, r.offset());
      try {
        records.add(decode.apply(r));
      } catch (RuntimeException e) {
        deadLetters.add(new DeadLetter(id, r.offset(), key(r), e.getClass().getName(), e.getMessage(), 1, false,
            replayOf(id, r)));
      }
    }
    first = lo;
    last = hi;
    long logStart = progress.logStart;
    if (logStart >= 0 && first <= logStart && last - first + 1 == raw.size()) {
      coveredFrom = 0;   // nothing readable lies below the log start, and the batch has no holes
    }
  }

  /** The record key's text, when it has one (dead letters and logs). */
  static Optional<String> key(ConsumerRecord<byte[], byte[]> r) {
    return r == null || r.key() == null ? Optional.empty() : Optional.of(new String(r.key(), StandardCharsets.UTF_8));
  }

  /** The dead letter a replayed record replays: its new dead letter takes that one's place. */
  static OptionalLong replayOf(PartitionId id, ConsumerRecord<byte[], byte[]> r) {
    Header h = r == null ? null : r.headers().lastHeader(Inbound.REPLAY_OF_HEADER);
    return Inbound.replayedOffset(id, h == null || h.value() == null ? null
        : new String(h.value(), StandardCharsets.UTF_8));
  }
}
