package io.fencepost.kafka.internal;

import java.time.Duration;
import java.util.List;
import java.util.TreeSet;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * Reads a range of a partition's log on the side, with the pipeline consumer's isolation level, to
 * tell which offsets in it hold readable records. Kafka offsets are not dense (transaction markers,
 * aborted and compacted records leave holes), so only the log can show that a hole in a batch, or
 * between a partition's stored offset and a batch, skips nothing. Used only when a batch has such a
 * hole; one consumer without a group, one range at a time.
 */
public final class LogProbe implements AutoCloseable {

  /** What the log holds in a range. */
  public record Range(long from, TreeSet<Long> readable, long logStart, boolean complete) {

    /** Offsets of the range deleted by retention before anyone read them ({@code [from, logStart)}). */
    public boolean deletedPart() {
      return logStart > from;
    }
  }

  private final Consumer<byte[], byte[]> consumer;

  /** Reads with {@code consumer} (no group: it is assigned each partition it reads); closes it at {@link #close}. */
  public LogProbe(Consumer<byte[], byte[]> consumer) {
    this.consumer = consumer;
  }

  /**
   * The readable offsets of {@code tp} in {@code [from, to)}. Blocks until the consumer's position
   * passes {@code to - 1} or {@code timeout} elapses ({@link Range#complete()} tells which). A range
   * below the log start is read from the log start ({@link Range#logStart()}).
   */
  public synchronized Range read(TopicPartition tp, long from, long to, Duration timeout) {
    TreeSet<Long> readable = new TreeSet<>();
    consumer.assign(List.of(tp));
    long logStart = consumer.beginningOffsets(List.of(tp), timeout).getOrDefault(tp, 0L);
    long start = Math.max(from, logStart);
    if (start >= to) {
      return new Range(from, readable, logStart, true);
    }
    consumer.seek(tp, start);
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100)).records(tp)) {
        if (r.offset() >= to) {
          return new Range(from, readable, logStart, true);
        }
        readable.add(r.offset());
      }
      // In read_committed the position also moves past markers and aborted records.
      if (consumer.position(tp, timeout) >= to) {
        return new Range(from, readable, logStart, true);
      }
    }
    return new Range(from, readable, logStart, false);
  }

  @Override
  public synchronized void close() {
    consumer.close(Duration.ofSeconds(5));
  }
}
