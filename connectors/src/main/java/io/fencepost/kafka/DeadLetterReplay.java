package io.fencepost.kafka;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.fencepost.Inbound;
import io.fencepost.kafka.internal.DeadLetterHeaders;
import io.fencepost.kafka.internal.ProducerSafety;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Re-injects dead letters into their source topic (same partition, key, value and headers, without
 * Fencepost's dead-letter headers, plus {@code fencepost.replay-of}), after the cause was fixed.
 *
 * <p>Replaying is safe to repeat. The partition's actor applies a replayed record only when its
 * journal holds that dead letter and no replay of it was applied yet: a second run, a dead letter
 * published twice (after a crash), or one that a later owner of the partition applied after all,
 * is dropped there. A replayed record keeps its headers, business keys such as
 * {@code fencepost.outbox-id} included, and external calls made for it keep the original record's
 * idempotency key. A replayed record that fails again becomes a new dead letter, which replaces
 * the old one.
 *
 * <pre>{@code
 * DeadLetterReplay.Result r = DeadLetterReplay.from(bootstrap, "payments.dlt").withKey("merchant-7").run();
 * }</pre>
 */
public final class DeadLetterReplay {

  /** Header on a replayed record: the dead letter's id ({@code group-topic-partition-offset}). */
  public static final String REPLAY_OF = Inbound.REPLAY_OF_HEADER;

  private final String bootstrap;
  private final String deadLetterTopic;
  private Optional<String> key = Optional.empty();
  private Optional<Integer> partition = Optional.empty();
  private long fromOffset = 0;
  private long toOffset = Long.MAX_VALUE;
  private boolean dryRun;
  private Map<String, String> kafkaClients = Map.of();

  private DeadLetterReplay(String bootstrap, String deadLetterTopic) {
    this.bootstrap = Objects.requireNonNull(bootstrap, "bootstrap");
    this.deadLetterTopic = Objects.requireNonNull(deadLetterTopic, "deadLetterTopic");
  }

  /** Replays from this dead-letter topic (all of its records unless narrowed). */
  public static DeadLetterReplay from(String bootstrap, String deadLetterTopic) {
    return new DeadLetterReplay(bootstrap, deadLetterTopic);
  }

  /** Only dead letters whose record key (UTF-8) is {@code key}. */
  public DeadLetterReplay withKey(String key) {
    this.key = Optional.of(key);
    return this;
  }

  /** Only dead letters of this source partition, with original offsets in {@code [from, to]}. */
  public DeadLetterReplay withOffsets(int partition, long from, long to) {
    if (from < 0 || to < from) {
      throw new IllegalArgumentException("offset range must satisfy 0 <= from <= to, was [" + from + ".." + to + "]");
    }
    this.partition = Optional.of(partition);
    this.fromOffset = from;
    this.toOffset = to;
    return this;
  }

  /**
   * Properties for the replay's consumer and producer, e.g. the cluster's security settings (a
   * pipeline's {@code common-kafka-clients}). Settings that would switch off the producer's
   * idempotence are refused.
   */
  public DeadLetterReplay withKafkaClients(Map<String, String> properties) {
    ProducerSafety.check(properties, "dead-letter replay kafka-clients");
    for (String key : List.of("bootstrap.servers", "group.id", "enable.auto.commit")) {
      if (properties.containsKey(key)) {
        throw new IllegalArgumentException("dead-letter replay kafka-clients: " + key + " must not be set here"
            + (key.equals("bootstrap.servers") ? " (give it to DeadLetterReplay.from)" : ""));
      }
    }
    this.kafkaClients = Map.copyOf(properties);
    return this;
  }

  /** Count what would be replayed without producing anything. */
  public DeadLetterReplay dryRun() {
    this.dryRun = true;
    return this;
  }

  /**
   * What happened.
   *
   * @param scanned dead-letter records read
   * @param matched records matching the filters
   * @param replayed distinct dead letters re-injected (0 on a dry run)
   * @param duplicates matching records skipped because their dead-letter id was already replayed
   */
  public record Result(long scanned, long matched, long replayed, long duplicates) {
  }

  /** Reads the dead-letter topic up to its current end and re-injects the matching dead letters. */
  public Result run() {
    Properties cp = new Properties();
    cp.putAll(kafkaClients);
    cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    long scanned = 0;
    long matched = 0;
    long duplicates = 0;
    List<ProducerRecord<byte[], byte[]>> out = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    try (KafkaConsumer<byte[], byte[]> consumer =
        new KafkaConsumer<>(cp, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      List<PartitionInfo> infos = consumer.partitionsFor(deadLetterTopic, Duration.ofSeconds(30));
      if (infos == null || infos.isEmpty()) {
        throw new IllegalArgumentException("dead-letter topic [" + deadLetterTopic + "] does not exist at " + bootstrap);
      }
      List<TopicPartition> tps = new ArrayList<>();
      infos.forEach(i -> tps.add(new TopicPartition(deadLetterTopic, i.partition())));
      consumer.assign(tps);
      consumer.seekToBeginning(tps);
      Map<TopicPartition, Long> end = consumer.endOffsets(tps);
      Set<TopicPartition> open = new HashSet<>(tps);
      open.removeIf(tp -> consumer.position(tp) >= end.get(tp));
      while (!open.isEmpty()) {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
          TopicPartition tp = new TopicPartition(r.topic(), r.partition());
          if (r.offset() >= end.get(tp)) {
            continue;
          }
          scanned++;
          if (matches(r)) {
            matched++;
            String id = header(r, DeadLetterHeaders.ID);
            if (id != null && !seen.add(id)) {
              duplicates++;
            } else {
              out.add(toSource(r, id));
            }
          }
        }
        open.removeIf(tp -> consumer.position(tp) >= end.get(tp));
      }
    }
    if (!dryRun && !out.isEmpty()) {
      try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(
          ProducerSafety.safeProperties(bootstrap, kafkaClients, "dead-letter replay kafka-clients"),
          new ByteArraySerializer(),
          new ByteArraySerializer())) {
        List<Future<?>> acks = new ArrayList<>();
        for (ProducerRecord<byte[], byte[]> r : out) {
          acks.add(producer.send(r));
        }
        for (Future<?> ack : acks) {
          ack.get(60, TimeUnit.SECONDS);
        }
      } catch (Exception e) {
        throw new IllegalStateException("replaying " + out.size() + " dead letters from [" + deadLetterTopic
            + "] failed after some may have been sent (replaying again is safe: each partition applies a dead letter's "
            + "replay once): " + e, e);
      }
    }
    return new Result(scanned, matched, dryRun ? 0 : out.size(), duplicates);
  }

  private boolean matches(ConsumerRecord<byte[], byte[]> r) {
    if (key.isPresent() && (r.key() == null || !key.get().equals(new String(r.key(), StandardCharsets.UTF_8)))) {
      return false;
    }
    if (partition.isPresent()) {
      String p = header(r, DeadLetterHeaders.PARTITION);
      String o = header(r, DeadLetterHeaders.OFFSET);
      if (p == null || o == null || Integer.parseInt(p) != partition.get()) {
        return false;
      }
      long offset = Long.parseLong(o);
      return offset >= fromOffset && offset <= toOffset;
    }
    return true;
  }

  private static ProducerRecord<byte[], byte[]> toSource(ConsumerRecord<byte[], byte[]> r, String id) {
    String topic = header(r, DeadLetterHeaders.TOPIC);
    String partition = header(r, DeadLetterHeaders.PARTITION);
    if (topic == null || partition == null) {
      throw new IllegalStateException("record at " + r.topic() + "-" + r.partition() + "@" + r.offset()
          + " is not a Fencepost dead letter (no " + DeadLetterHeaders.TOPIC + " header)");
    }
    String omitted = header(r, DeadLetterHeaders.VALUE_OMITTED);
    if (omitted != null) {
      // Its value never reached the dead-letter topic: a replay would send an empty value (a tombstone
      // on a compacted topic) in place of the record.
      throw new IllegalStateException("dead letter at " + r.topic() + "-" + r.partition() + "@" + r.offset()
          + " was published without its value (" + omitted + " bytes, larger than the dead-letter topic accepts): "
          + "it cannot be replayed from there; the record is at " + topic + "-" + partition + "@"
          + header(r, DeadLetterHeaders.OFFSET) + " while that topic retains it; leave it out of the replay (--offsets)");
    }
    ProducerRecord<byte[], byte[]> out = new ProducerRecord<>(topic, Integer.parseInt(partition), r.key(), r.value());
    for (Header h : r.headers()) {
      if (!DeadLetterHeaders.ALL.contains(h.key()) && !h.key().equals(REPLAY_OF)) {
        out.headers().add(h);
      }
    }
    if (id != null) {
      out.headers().add(REPLAY_OF, id.getBytes(StandardCharsets.UTF_8));
      if (out.headers().lastHeader(Inbound.ORIGIN_ID_HEADER) == null) {
        // The first replay of the record: later replays (of its failures) keep this id.
        out.headers().add(Inbound.ORIGIN_ID_HEADER, id.getBytes(StandardCharsets.UTF_8));
      }
    }
    return out;
  }

  private static String header(ConsumerRecord<byte[], byte[]> r, String name) {
    Header h = r.headers().lastHeader(name);
    return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
  }
}
