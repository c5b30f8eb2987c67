package io.fencepost.kafka;

import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;

import io.fencepost.PartitionId;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.BoundedSourceQueue;
import org.apache.pekko.stream.QueueOfferResult;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;

/**
 * One assignment of one partition to this node, from the rebalance that assigned it to the one that
 * took it away (or a restart of the partition). Its stream exists from the seek on: records the
 * consumer thread offers are batched ({@code batch.max-records} / {@code batch.max-latency}) and
 * delivered one batch at a time. Never reused: a new assignment of the same partition is a new
 * object, so anything computed for an earlier one can tell that it is stale.
 */
final class Assignment {

  /** What to do after each batch left the stream: its record count and the offset to commit, if applied. */
  interface AfterBatch {
    void accept(Assignment assignment, int records, OptionalLong next);
  }

  final TopicPartition tp;
  final PartitionId id;
  final PartitionProgress progress;
  /** Records offered and not yet through their batch. */
  final AtomicInteger buffered;
  /** Set (by the consumer thread) while the partition is paused because its stream is full. */
  volatile boolean backpressured;
  /** Set when the assignment ends: cancels its preparation; its stream takes no more records. */
  volatile boolean over;
  private BoundedSourceQueue<ConsumerRecord<byte[], byte[]>> queue;
  private CompletionStage<Done> done = CompletableFuture.completedFuture(Done.getInstance());

  Assignment(TopicPartition tp, PartitionId id, long nowNanos) {
    this.tp = tp;
    this.id = id;
    this.progress = new PartitionProgress(nowNanos);
    this.buffered = progress.buffered;
  }

  boolean streaming() {
    return queue != null;
  }

  /** Completes when the stream ended (its last batch delivered or abandoned); at once before it started. */
  CompletionStage<Done> done() {
    return done;
  }

  /** Starts the stream (consumer thread, once, after the seek). */
  CompletionStage<Done> startStream(ActorSystem<?> system, PipelineSettings settings, OwnershipSeams.Batches delivery,
      int capacity, AfterBatch afterBatch) {
    Pair<BoundedSourceQueue<ConsumerRecord<byte[], byte[]>>, CompletionStage<Done>> pair =
        Source.<ConsumerRecord<byte[], byte[]>>queue(capacity)
            .groupedWithin(settings.batch().maxRecords(), settings.batch().maxLatency())
            .mapAsync(1, batch -> delivery.deliver(id, progress, batch).thenApply(next -> Pair.create(batch.size(), next)))
            .toMat(Sink.foreach(out -> afterBatch.accept(this, out.first(), out.second())), Keep.both())
            .run(system);
    queue = pair.first();
    done = pair.second();
    return done;
  }

  /** Hands one record to the stream; false when it is full (or ended) and the record must be read again. */
  boolean offer(ConsumerRecord<byte[], byte[]> record) {
    if (queue.offer(record) != QueueOfferResult.enqueued()) {
      return false;
    }
    buffered.incrementAndGet();
    return true;
  }

  /** Ends the assignment's stream (after the batch in flight) and cancels its preparation; idempotent. */
  void close() {
    if (!over) {
      over = true;
      if (queue != null && !done.toCompletableFuture().isDone()) {
        try {
          queue.complete();
        } catch (IllegalStateException e) {
          // The stream failed (or ended) meanwhile: its queue is closed already.
        }
      }
    }
  }
}
