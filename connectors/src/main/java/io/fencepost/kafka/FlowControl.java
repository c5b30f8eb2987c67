package io.fencepost.kafka;

import java.util.List;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Backpressure of the partitions' streams: a partition whose stream holds {@code highWater} records
 * (or is full) is paused, and resumed once its stream is down to {@code lowWater}. Consumer thread
 * only, except {@link #drained}, which a stream's thread calls after each batch.
 */
final class FlowControl {

  private static final Logger log = LoggerFactory.getLogger(FlowControl.class);

  private final String pipeline;
  private final Ticker ticker;
  private final int highWater;
  private final int lowWater;
  private final int queueCapacity;

  /**
   * @param maxBatch {@code batch.max-records}
   * @param maxPoll the consumer's {@code max.poll.records}
   */
  FlowControl(String pipeline, int maxBatch, int maxPoll, Ticker ticker) {
    this.pipeline = pipeline;
    this.ticker = ticker;
    this.highWater = Math.max(2 * maxBatch, maxPoll);
    this.lowWater = Math.max(1, highWater / 2);
    this.queueCapacity = highWater + maxPoll;
  }

  /** How many records a partition's stream holds at most: one poll above the high water mark. */
  int queueCapacity() {
    return queueCapacity;
  }

  /**
   * Hands a partition's polled records to its stream (null {@code o}: not assigned); pauses the
   * partition when its stream is full, and seeks back to the first record it did not take.
   */
  void offer(Consumer<byte[], byte[]> consumer, TopicPartition tp, Assignment o,
      List<ConsumerRecord<byte[], byte[]>> records) {
    if (o == null || !o.streaming()) {
      // Paused partitions return no records; not one may reach a stream that did not seek.
      log.error("[{}] {} records of {} polled while it is {}: not delivered (a bug; its records are read again "
          + "from the stored offset)", pipeline, records.size(), tp, o == null ? "not assigned" : "not seeked yet");
      return;
    }
    if (o.buffered.get() == 0 && !o.progress.inFlight) {
      o.progress.busySinceNanos = ticker.nanoTime();   // an idle partition has work again
    }
    for (ConsumerRecord<byte[], byte[]> r : records) {
      if (!o.offer(r)) {
        // Full (or ended): read this record again once the stream took what it holds.
        consumer.seek(o.tp, r.offset());
        pause(consumer, o);
        return;
      }
    }
    if (o.buffered.get() >= highWater) {
      pause(consumer, o);
    }
  }

  private void pause(Consumer<byte[], byte[]> consumer, Assignment o) {
    if (!o.backpressured) {
      o.backpressured = true;
      consumer.pause(List.of(o.tp));
      // The stream may have drained meanwhile without seeing the flag: look again.
      resumeIfDrained(consumer, o, true);
    }
  }

  /**
   * Resumes a backpressured partition whose stream drained, if {@code current} (it is still the
   * partition's assignment) and it is not halted.
   */
  void resumeIfDrained(Consumer<byte[], byte[]> consumer, Assignment o, boolean current) {
    if (o.backpressured && current && o.buffered.get() <= lowWater && o.progress.halted == null) {
      o.backpressured = false;
      consumer.resume(List.of(o.tp));
    }
  }

  /** {@code size} records left the stream (its thread): whether the partition may be resumed now. */
  boolean drained(Assignment o, int size) {
    return o.buffered.addAndGet(-size) <= lowWater && o.backpressured;
  }
}
