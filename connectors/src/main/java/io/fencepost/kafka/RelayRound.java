package io.fencepost.kafka;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.fencepost.AppliedBatch;
import io.fencepost.OutboxRecord;
import io.fencepost.PartitionId;
import io.fencepost.errors.JournalGapException;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.utils.Utils;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.persistence.query.EventEnvelope;
import org.apache.pekko.persistence.query.javadsl.CurrentEventsByPersistenceIdQuery;
import org.apache.pekko.stream.javadsl.Sink;

/**
 * One round from entry {@code from} (its first {@code skip} records already acknowledged): reads
 * journal entries, publishes their outbox records and waits for the acknowledgements, in order.
 * What counts is the acknowledged prefix: a failure stops the round there, and the next starts
 * after it. A careful round (after a failure) reads one entry and sends one record at a time, each
 * after the previous one's acknowledgement, so that a record that cannot be published costs no
 * copies of the records after it. Runs on the blocking dispatcher; its result goes to the relay
 * ({@link OutboxRelay}) as a message.
 */
final class RelayRound {

  private final ActorSystem<?> system;
  private final PartitionId partition;
  private final OutboxSettings settings;
  private final HealingProducer producers;
  private final CurrentEventsByPersistenceIdQuery journal;
  private final long id;
  private final long from;
  private final int skip;
  private final boolean careful;
  private final HealingProducer.Handle handle;
  private final String pid;
  private long upTo;
  private int acked;
  private int published;
  /** Past the journal read: a failure from here on is the producer's. */
  private boolean sending;

  RelayRound(ActorSystem<?> system, PartitionId partition, OutboxSettings settings, HealingProducer producers,
      CurrentEventsByPersistenceIdQuery journal, long id, long from, int skip, boolean careful,
      HealingProducer.Handle handle) {
    this.system = system;
    this.partition = partition;
    this.settings = settings;
    this.producers = producers;
    this.journal = journal;
    this.pid = partition.persistenceId();
    this.id = id;
    this.from = from;
    this.skip = skip;
    this.careful = careful;
    this.handle = handle;
    this.upTo = from - 1;
    this.acked = skip;
  }

  OutboxRelay.RoundDone run() {
    try {
      // Open-ended and limited, not a window: the first entry read shows a hole right after the position.
      List<EventEnvelope> entries = journal
          .currentEventsByPersistenceId(pid, from, Long.MAX_VALUE)
          .take(careful ? 1 : settings.maxEntriesPerRound())
          .completionTimeout(producers.ackTimeout())   // a query that hangs fails (and is cancelled)
          .runWith(Sink.seq(), system)
          .toCompletableFuture().get();
      sending = true;
      JournalGapException.check("outbox relay of " + partition.shortName(), pid, from,
          entries.stream().map(EventEnvelope::sequenceNr).toList(),
          last -> "stop the pipeline and store " + last + " as the relay's position (durable state ["
              + OutboxRecord.relayPersistenceId(pid) + "]); the outbox records of those entries are then never published");
      List<List<Future<RecordMetadata>>> sent = new ArrayList<>();
      Exception sendFailure = null;
      for (EventEnvelope entry : entries) {
        List<OutboxRecord> outbox = AppliedBatch.from(entry.event()).map(AppliedBatch::outbox).orElse(List.of());
        List<Future<RecordMetadata>> acks = new ArrayList<>();
        sent.add(acks);
        try {
          for (int i = first(entry); i < outbox.size(); i++) {
            Future<RecordMetadata> ack = handle.producer().send(toKafka(handle.producer(), outbox.get(i),
                OutboxRecord.id(pid, entry.sequenceNr(), i)));
            acks.add(ack);
            if (careful) {
              settle(ack);
            } else if (ack.isDone()) {
              ack.get();   // refused at once (no metadata for the topic within max.block.ms, too large): stop
            }
          }
        } catch (RuntimeException | ExecutionException e) {   // send() refused the record
          sendFailure = e;
          break;
        }
      }
      for (int e = 0; e < sent.size(); e++) {
        if (!careful) {
          for (Future<RecordMetadata> ack : sent.get(e)) {
            settle(ack);
          }
        }
        if (sendFailure != null && e == sent.size() - 1) {
          throw sendFailure;   // its acknowledged prefix counted, its refused record not
        }
        upTo = entries.get(e).sequenceNr();
        acked = 0;
      }
      return new OutboxRelay.RoundDone(id, upTo, 0, published, null, true, handle);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new OutboxRelay.RoundDone(id, upTo, acked, published, e, sending, handle);
    } catch (Exception e) {
      Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
      return new OutboxRelay.RoundDone(id, upTo, acked, published, cause, sending, handle);
    }
  }

  /** The first record of {@code entry} to send: past those already acknowledged. */
  private int first(EventEnvelope entry) {
    return entry.sequenceNr() == from ? skip : 0;
  }

  /** Waits for one acknowledgement (those before it in the round came first) and counts it. */
  private void settle(Future<RecordMetadata> ack) throws Exception {
    ack.get(producers.ackTimeout().toMillis(), TimeUnit.MILLISECONDS);
    acked++;
    published++;
  }

  /** The Kafka record of an outbox record, with its stable id in a header. */
  static ProducerRecord<byte[], byte[]> toKafka(Producer<byte[], byte[]> producer, OutboxRecord r, String id) {
    byte[] idBytes = id.getBytes(StandardCharsets.UTF_8);
    byte[] key = r.key().map(k -> k.getBytes(StandardCharsets.UTF_8)).orElse(null);
    // Without a key, pick the partition from the id: every copy of the record lands in the same
    // partition, where the downstream key window can drop it.
    Integer kafkaPartition = key != null ? null
        : Utils.toPositive(Utils.murmur2(idBytes)) % producer.partitionsFor(r.topic()).size();
    ProducerRecord<byte[], byte[]> out = new ProducerRecord<>(r.topic(), kafkaPartition, key, r.value());
    out.headers().add(OutboxRecord.ID_HEADER, idBytes);
    return out;
  }
}
