package io.fencepost.kafka;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import io.fencepost.AppliedBatch;
import io.fencepost.OutboxRecord;
import io.fencepost.PartitionId;
import io.fencepost.errors.JournalGapException;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.utils.Utils;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.persistence.query.EventEnvelope;
import org.apache.pekko.persistence.query.javadsl.CurrentEventsByPersistenceIdQuery;
import org.apache.pekko.stream.javadsl.Sink;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The exactly-once side of one partition's outbox relay ({@link OutboxSettings.Delivery#EXACTLY_ONCE}):
 * a transactional producer whose {@code transactional.id} is the partition's own on every node, so that
 * the relay that starts last fences every earlier one ({@code initTransactions} aborts their open
 * transaction and refuses their later commits), and rounds that are each one Kafka transaction holding
 * the round's outbox records and the relay's new position, a record keyed by the partition on the
 * compacted {@code outbox.position-topic}. After every (re)start of its producer the relay reads its
 * committed position back ({@code read_committed}) and publishes from there. Used by one round at a
 * time, on the blocking dispatcher.
 */
final class RelayTransactions {

  private static final Logger log = LoggerFactory.getLogger(RelayTransactions.class);
  private static final AtomicLong READERS = new AtomicLong();

  /** What a round did: the last journal entry whose records are committed, and how many records that took. */
  record Committed(long upTo, int published) {
  }

  /** Another relay of the partition started after this one: this one stops for good. */
  static final class Fenced extends RuntimeException {
    Fenced(Throwable cause) {
      super(cause.toString(), cause);
    }
  }

  private final ActorSystem<?> system;
  private final PartitionId partition;
  private final OutboxSettings settings;
  private final Properties producerProperties;
  private final Function<Properties, Producer<byte[], byte[]>> producers;
  private final Map<String, Object> consumerProperties;
  private final Function<Map<String, Object>, Consumer<byte[], byte[]>> consumers;
  private final Duration readTimeout;
  private final byte[] positionKey;
  private volatile Producer<byte[], byte[]> producer;

  RelayTransactions(ActorSystem<?> system, PartitionId partition, OutboxSettings settings, Properties producerProperties,
      Function<Properties, Producer<byte[], byte[]>> producers, Map<String, Object> consumerProperties,
      Function<Map<String, Object>, Consumer<byte[], byte[]>> consumers) {
    this.system = system;
    this.partition = partition;
    this.settings = settings;
    this.producerProperties = new Properties();
    this.producerProperties.putAll(producerProperties);
    this.producerProperties.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId(partition));
    this.producers = producers;
    this.consumerProperties = new HashMap<>(consumerProperties);
    this.consumers = consumers;
    this.readTimeout = transactionTimeout(producerProperties).plusSeconds(30);
    this.positionKey = partition.persistenceId().getBytes(StandardCharsets.UTF_8);
  }

  /** The relay's {@code transactional.id}: the same on every node, one per partition of a group. */
  static String transactionalId(PartitionId partition) {
    return "fencepost-outbox|" + partition.qualifiedName();
  }

  static Duration transactionTimeout(Properties properties) {
    Object value = properties.get(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG);
    return Duration.ofMillis(value == null ? 60_000 : Long.parseLong(value.toString().trim()));
  }

  /** How long a round's read of the journal may take. */
  Duration readLimit() {
    return HealingProducer.ackTimeout(producerProperties);
  }

  /** Whether the producer must be started (and earlier relays fenced) before the next round. */
  boolean started() {
    return producer != null;
  }

  /**
   * Starts the producer, fencing every earlier relay of the partition (their open transaction is
   * aborted, or completed if it was committing), then reads the position they committed. Returns the
   * last journal entry whose records are committed: that position, or {@code lowerBound} (the position
   * stored in the journal database, never ahead of a committed one; past it only entries without
   * outbox records) when it is higher.
   */
  long start(long lowerBound, CurrentEventsByPersistenceIdQuery journal, Duration readLimit) throws Exception {
    close();
    Producer<byte[], byte[]> fresh = producers.apply(producerProperties);
    long committed;
    try {
      fresh.initTransactions();
      committed = readCommittedPosition(fresh);
      if (committed > lowerBound) {
        requireInJournal(journal, committed, readLimit);
      }
    } catch (ProducerFencedException e) {
      closeQuietly(fresh);
      throw new Fenced(e);
    } catch (TransactionalIdAuthorizationException e) {
      closeQuietly(fresh);
      throw new KafkaException("the relay's Kafka user may not use transactional id [" + transactionalId(partition)
          + "]: grant it WRITE and DESCRIBE on TransactionalId with the prefix [fencepost-outbox|] (kafka-acls "
          + "--add --allow-principal ... --operation Write --operation Describe --transactional-id fencepost-outbox| "
          + "--resource-pattern-type prefixed), or set outbox.delivery = at-least-once", e);
    } catch (TimeoutException e) {
      closeQuietly(fresh);
      throw new KafkaException("the brokers started no transaction for [" + transactionalId(partition) + "] within "
          + "max.block.ms: their transaction coordinator is not available (is the brokers' "
          + "transaction.state.log.replication.factor above the number of brokers, or "
          + "transaction.state.log.min.isr unmet?); " + e.getMessage(), e);
    } catch (Exception e) {
      closeQuietly(fresh);
      throw e;
    }
    producer = fresh;   // only now: a round never runs on a producer whose position was not read
    log.info("[{}] exactly-once outbox relay started (transactional.id [{}]): committed position {}, stored {}",
        partition.shortName(), transactionalId(partition), committed, lowerBound);
    return Math.max(committed, lowerBound);
  }

  /**
   * The committed position names a journal entry this database must hold (one with outbox records,
   * which compaction keeps while it is above the stored position): when it does not, the position topic
   * outlived the journal (a recreated database, another deployment's topic), and publishing from there
   * would skip the new journal's records. Refused (the round fails, with the usual ERROR and meter)
   * until an operator sorts it out.
   */
  private void requireInJournal(CurrentEventsByPersistenceIdQuery journal, long committed, Duration readLimit)
      throws Exception {
    List<EventEnvelope> entry = journal.currentEventsByPersistenceId(partition.persistenceId(), committed, committed)
        .completionTimeout(readLimit).runWith(Sink.seq(), system).toCompletableFuture().get();
    if (entry.isEmpty()) {
      throw new KafkaException("the position committed on topic [" + settings.positionTopic() + "] for ["
          + partition.persistenceId() + "] is journal entry " + committed + ", which the journal does not hold: the "
          + "position topic outlived the journal (a recreated or restored database, or another deployment's topic). "
          + "Nothing is published until the key is removed from the topic (a tombstone on its partition "
          + positionPartition(positionKey) + ") or the journal restored");
    }
  }

  /**
   * One transaction: the outbox records of up to {@code maxEntries} journal entries from {@code from}
   * and the new position. Entries without outbox records move the position without a transaction.
   */
  Committed round(CurrentEventsByPersistenceIdQuery journal, long from, int maxEntries, Duration readLimit)
      throws Exception {
    Producer<byte[], byte[]> producer = this.producer;
    if (producer == null) {
      throw new IllegalStateException("the relay's producer is closed");
    }
    String pid = partition.persistenceId();
    List<EventEnvelope> entries = journal.currentEventsByPersistenceId(pid, from, Long.MAX_VALUE)
        .take(maxEntries)
        .completionTimeout(readLimit)
        .runWith(Sink.seq(), system)
        .toCompletableFuture().get();
    JournalGapException.check("outbox relay of " + partition.shortName(), pid, from,
        entries.stream().map(EventEnvelope::sequenceNr).toList(),
        last -> "stop the pipeline and write " + last + " as the relay's position (key [" + pid + "] on topic ["
            + settings.positionTopic() + "]); the outbox records of those entries are then never published");
    if (entries.isEmpty()) {
      return new Committed(from - 1, 0);
    }
    long upTo = entries.get(entries.size() - 1).sequenceNr();
    List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
    for (EventEnvelope entry : entries) {
      List<OutboxRecord> outbox = AppliedBatch.from(entry.event()).map(AppliedBatch::outbox).orElse(List.of());
      for (int i = 0; i < outbox.size(); i++) {
        records.add(RelayRound.toKafka(producer, outbox.get(i), OutboxRecord.id(pid, entry.sequenceNr(), i)));
      }
    }
    if (records.isEmpty()) {
      return new Committed(upTo, 0);   // read again after a restart, publishing nothing
    }
    try {
      producer.beginTransaction();
      for (ProducerRecord<byte[], byte[]> r : records) {
        producer.send(r);
      }
      producer.send(positionRecord(producer, upTo));
      producer.commitTransaction();   // flushes; throws the first failed send's error
      return new Committed(upTo, records.size());
    } catch (KafkaException e) {
      if (fenced(e)) {
        throw new Fenced(e);
      }
      if (fatal(e)) {
        close();   // fatal for this producer: the next round starts a new one (and reads the position again)
      } else {
        abortOrClose(producer);
      }
      throw e;
    }
  }

  /** Whether {@code e} (or a cause) says that a later producer of this transactional id fenced this one. */
  private static boolean fenced(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof ProducerFencedException) {
        return true;
      }
    }
    return false;
  }

  /** Errors after which the producer cannot go on (kafka-clients 3.9's KafkaProducer Javadoc). */
  private static boolean fatal(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof OutOfOrderSequenceException || t instanceof UnsupportedVersionException
          || t instanceof AuthorizationException || t instanceof IllegalStateException) {
        return true;
      }
    }
    return false;
  }

  private void abortOrClose(Producer<byte[], byte[]> producer) {
    try {
      producer.abortTransaction();
    } catch (RuntimeException e) {
      if (fenced(e)) {
        throw new Fenced(e);
      }
      log.debug("[{}] aborting the relay's transaction failed ({}): its producer is started anew",
          partition.shortName(), e.toString());
      close();
    }
  }

  private ProducerRecord<byte[], byte[]> positionRecord(Producer<byte[], byte[]> producer, long upTo) {
    return new ProducerRecord<>(settings.positionTopic(), positionPartition(positionKey), positionKey,
        Long.toString(upTo).getBytes(StandardCharsets.UTF_8));
  }

  /**
   * The partition of the position topic that holds a key: the one Kafka's default partitioner picks
   * over the first {@value TransactionChecks#POSITION_TOPIC_PARTITIONS}, whatever the topic's count
   * (at least that many, checked at start): partitions added later move no relay's position.
   */
  static int positionPartition(byte[] key) {
    return Utils.toPositive(Utils.murmur2(key)) % TransactionChecks.POSITION_TOPIC_PARTITIONS;
  }

  /**
   * The position committed under this partition's key (the highest, should an older one come later):
   * the position topic's partition read with {@code read_committed} from its start to the end it had
   * once {@code initTransactions} returned (no transaction of an earlier relay of this partition is open
   * then); -1 when none was committed.
   */
  private long readCommittedPosition(Producer<byte[], byte[]> started) {
    TopicPartition tp = new TopicPartition(settings.positionTopic(), positionPartition(positionKey));
    long deadline = System.nanoTime() + readTimeout.toNanos();
    // To the end of the log, not its last stable offset: another relay's transaction open on this
    // partition (one that shares it, or a dead one until its next relay starts) holds the stable offset
    // back, and a position of this relay's partition committed after it would be missed. Reading on
    // waits until those transactions end (at most transaction.timeout.ms).
    long end;
    try (Consumer<byte[], byte[]> ends = consumers.apply(reader("read_uncommitted"))) {
      end = ends.endOffsets(List.of(tp), readTimeout).get(tp);
    }
    try (Consumer<byte[], byte[]> reader = consumers.apply(reader("read_committed"))) {
      reader.assign(List.of(tp));
      reader.seekToBeginning(List.of(tp));
      long position = -1;
      while (reader.position(tp, readTimeout) < end) {
        if (System.nanoTime() > deadline) {
          throw new KafkaException("reading the relay's committed position from [" + tp + "] did not reach offset "
              + end + " within " + readTimeout.toSeconds() + " s (a transaction open on it that long?)");
        }
        for (ConsumerRecord<byte[], byte[]> r : reader.poll(Duration.ofMillis(500))) {
          if (r.key() != null && java.util.Arrays.equals(r.key(), positionKey) && r.value() != null) {
            position = Math.max(position, Long.parseLong(new String(r.value(), StandardCharsets.UTF_8)));
          }
        }
      }
      return position;
    }
  }

  private Map<String, Object> reader(String isolation) {
    Map<String, Object> props = new HashMap<>(consumerProperties);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    props.remove(ConsumerConfig.GROUP_ID_CONFIG);
    props.remove(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG);
    props.put(ConsumerConfig.CLIENT_ID_CONFIG, "fencepost-outbox-positions-" + READERS.incrementAndGet());
    return props;
  }

  /** Closes the producer (without waiting for anything it has not sent). */
  synchronized void close() {
    Producer<byte[], byte[]> p = producer;
    producer = null;
    if (p != null) {
      closeQuietly(p);
    }
  }

  private void closeQuietly(Producer<byte[], byte[]> p) {
    try {
      p.close(Duration.ZERO);
    } catch (RuntimeException e) {
      log.debug("[{}] closing the relay's producer failed: {}", partition.shortName(), e.toString());
    }
  }
}
