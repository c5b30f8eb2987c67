package io.fencepost.kafka;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;

import io.fencepost.DeadLetter;
import io.fencepost.PartitionId;
import io.fencepost.kafka.internal.DeadLetterHeaders;
import io.fencepost.kafka.internal.ProducerSafety;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes dead letters to {@code <topic><suffix>} from an idempotent producer and completes only
 * once the broker acknowledged them: only then may the actor journal them and move the offset past
 * them. A crash in between publishes them again on redelivery, with the same
 * {@code fencepost.dead-letter-id} header.
 */
final class DeadLetterPublisher {

  private static final Logger log = LoggerFactory.getLogger(DeadLetterPublisher.class);

  private final ActorSystem<?> system;
  private final PipelineSettings settings;
  private final KafkaProducer<byte[], byte[]> producer;
  private final Map<String, Integer> partitions = new ConcurrentHashMap<>();

  DeadLetterPublisher(ActorSystem<?> system, PipelineSettings settings) {
    this.system = system;
    this.settings = settings;
    this.producer = new KafkaProducer<>(ProducerSafety.safeProperties(settings.bootstrapServers(),
        settings.producerClients(settings.deadLetter().producer()), "fencepost.pipelines." + settings.name() + ".dead-letter.producer-kafka-clients"),
        new ByteArraySerializer(), new ByteArraySerializer());
  }

  /** The partition count of a dead-letter topic, checked at start. */
  void knowPartitions(String deadLetterTopic, int count) {
    partitions.put(deadLetterTopic, count);
  }

  /**
   * Publishes {@code letters} (records of {@code raw}, by offset), retrying until acknowledged or
   * until {@code progress} is revoked (then the next owner publishes them again).
   */
  CompletionStage<Void> publish(PartitionId id, PartitionProgress progress, Map<Long, ConsumerRecord<byte[], byte[]>> raw,
      List<DeadLetter> letters) {
    List<CompletableFuture<Void>> acks = new ArrayList<>();
    for (DeadLetter d : letters) {
      ConsumerRecord<byte[], byte[]> r = raw.get(d.offset());
      String dlt = settings.deadLetter().topicFor(r.topic());
      ProducerRecord<byte[], byte[]> out = new ProducerRecord<>(dlt, r.partition() % partitions.getOrDefault(dlt, 1),
          r.key(), r.value());
      for (Header h : r.headers()) {
        out.headers().add(h);
      }
      DeadLetterHeaders.add(out.headers(), id, r.topic(), r.partition(), r.offset(), r.timestamp(),
          d.errorClass(), d.errorMessage(), d.attempts(), d.parked());
      CompletableFuture<Void> ack = new CompletableFuture<>();
      producer.send(out, (md, e) -> {
        if (e == null) {
          ack.complete(null);
        } else {
          ack.completeExceptionally(e);
        }
      });
      acks.add(ack);
    }
    return CompletableFuture.allOf(acks.toArray(new CompletableFuture[0])).handle((v, e) -> {
      if (e == null || progress.revoked) {
        return CompletableFuture.<Void>completedFuture(null);
      }
      // Never move past a record whose dead letter is not durable: retry the publication.
      log.warn("[{}] publishing {} dead letter(s) failed, retrying: {}", id.shortName(), letters.size(), e.toString());
      return Backoff.after(system, settings.retryBackoff().min(), () -> publish(id, progress, raw, letters));
    }).thenCompose(f -> f);
  }

  void close(Duration timeout) {
    producer.close(timeout);
  }
}
