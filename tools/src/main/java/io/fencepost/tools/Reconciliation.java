package io.fencepost.tools;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import io.fencepost.AppliedBatch;
import io.fencepost.PartitionId;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.tools.internal.KeyCounts;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.persistence.jdbc.query.javadsl.JdbcReadJournal;
import org.apache.pekko.persistence.query.PersistenceQuery;

/**
 * End-to-end reconciliation of a Fencepost pipeline: the input topic is the ground truth (distinct
 * business keys, bucketed by record time), the journal is the effect store; every key must be
 * applied exactly once. Detects the silent failures that matter: missing effects
 * (at-most-once in disguise) and doubled effects (a duplicate that got through).
 *
 * <pre>{@code
 * Reconciliation.Report r = Reconciliation.of(bootstrap, "payments", "ledger", journalDb)
 *     .inputKeys(record -> Optional.of(parsePaymentId(record.value())))
 *     .effectKeys(event -> Optional.of(((Credited) event).paymentId()))
 *     .run();
 * System.out.println(r.render());
 * }</pre>
 *
 * <p>Dead-lettered records are not missing: they are counted apart (they wait in the dead-letter
 * topic for a replay). Memory: about 66 bytes per distinct key (128-bit digests in primitive arrays), so a million
 * keys need about 66 MiB, whatever the keys' length.
 */
public final class Reconciliation {

  private final String bootstrap;
  private final String topic;
  private final String group;
  private final JournalDatabase journal;
  private Function<ConsumerRecord<byte[], byte[]>, Optional<String>> inputKeys = r -> Optional.empty();
  private Function<Object, Optional<String>> effectKeys = e -> Optional.empty();
  private Duration bucket = Duration.ofMinutes(1);
  private String sequenceHeader;
  private boolean journaledKeys;
  private ClassLoader classLoader = Reconciliation.class.getClassLoader();
  private Map<String, String> kafkaClients = Map.of();

  private Reconciliation(String bootstrap, String topic, String group, JournalDatabase journal) {
    this.bootstrap = Objects.requireNonNull(bootstrap, "bootstrap");
    this.topic = Objects.requireNonNull(topic, "topic");
    this.group = Objects.requireNonNull(group, "group");
    this.journal = Objects.requireNonNull(journal, "journal");
  }

  /** Reconciles topic {@code topic} against the journal of consumer group {@code group}. */
  public static Reconciliation of(String bootstrap, String topic, String group, JournalDatabase journal) {
    return new Reconciliation(bootstrap, topic, group, journal);
  }

  /** How to read a record's business key (empty: the record's own topic-partition-offset). */
  public Reconciliation inputKeys(Function<ConsumerRecord<byte[], byte[]>, Optional<String>> f) {
    this.inputKeys = Objects.requireNonNull(f);
    return this;
  }

  /** How to read the business key an effect (a journaled user event) applied; empty for events that apply none. */
  public Reconciliation effectKeys(Function<Object, Optional<String>> f) {
    this.effectKeys = Objects.requireNonNull(f);
    return this;
  }

  /** Properties for the consumer that reads the topic, e.g. the cluster's security settings. */
  public Reconciliation kafkaClients(Map<String, String> properties) {
    this.kafkaClients = Map.copyOf(properties);
    return this;
  }

  /**
   * The class loader the journal's events and state are read with (and the configuration with their
   * serializers loaded from), e.g. one over the service's jar; default: this class's.
   */
  public Reconciliation classLoader(ClassLoader value) {
    this.classLoader = Objects.requireNonNull(value, "classLoader");
    return this;
  }

  /**
   * Takes what was applied from the business-key digests each journal write stores, not from the
   * events: works for any pipeline whose input keys ({@link #inputKeys}) are its actors'
   * {@code businessKey}s, without knowing its event types (the key window must be on). A record
   * without a business key is checked by its offset: applied as often as journal writes covered its
   * offset (an operator's offset reset covers nothing; a reset back makes writes cover offsets twice),
   * unless it was dead-lettered. In {@code at-most-once} mode a write covers records before their
   * handlers ran, so records lost after it are not seen.
   */
  public Reconciliation appliedKeysFromJournal() {
    this.journaledKeys = true;
    return this;
  }

  /**
   * Checks per-entity sequence numbers that producers stamp in header {@code header} (a decimal
   * number counting from 1 per record key): every number up to an entity's highest must be in the
   * topic, or the report lists the gap (a record lost before it reached Kafka).
   */
  public Reconciliation sequenceHeader(String header) {
    this.sequenceHeader = Objects.requireNonNull(header);
    return this;
  }

  /** The width of the time buckets in the report (default one minute). */
  public Reconciliation bucket(Duration width) {
    if (width.isZero() || width.isNegative()) {
      throw new IllegalArgumentException("bucket width must be > 0, was [" + width + "]");
    }
    this.bucket = width;
    return this;
  }

  /**
   * Thrown by {@link #run} when checking by the journaled keys ({@link #appliedKeysFromJournal}) and no
   * record of the topic has an input key ({@link #inputKeys}) while the journal holds business keys:
   * the input keys are not the actors' business keys, and a report would call every record missing.
   */
  public static final class NoInputKeysException extends IllegalStateException {

    private final long records;
    private final long journaledKeys;

    NoInputKeysException(long records, long journaledKeys) {
      super("none of the topic's " + records + " records has an input key, while the journal holds " + journaledKeys
          + " business keys: the input keys are not how the pipeline's actors key records");
      this.records = records;
      this.journaledKeys = journaledKeys;
    }

    /** Records read from the topic. */
    public long records() {
      return records;
    }

    /** Business-key digests the journal holds. */
    public long journaledKeys() {
      return journaledKeys;
    }
  }

  /** Counts for one time bucket, or for the total. */
  public record Counts(long records, long expected, long applied, long missing, long doubled,
      long producerDuplicates, long deadLettered) {
  }

  /**
   * The outcome. {@code droppedByKey} is what the actors reported dropping as business-key
   * duplicates; it should equal the input's producer duplicates that reached a partition after
   * their first copy.
   */
  public record Report(String topic, String group, Map<Instant, Counts> buckets, Counts total, long droppedByKey,
      long unexpectedEffects, List<String> sampleMissing, List<String> sampleDoubled, long deadLettered,
      long sequenceGaps, List<String> sampleGaps) {

    /** True when nothing is missing, nothing doubled and no producer sequence has a gap. */
    public boolean ok() {
      return total.missing() == 0 && total.doubled() == 0 && unexpectedEffects == 0 && sequenceGaps == 0;
    }

    /** A table for people. */
    public String render() {
      StringBuilder sb = new StringBuilder();
      sb.append(String.format("%-20s %10s %10s %10s %8s %8s %12s %8s%n", "bucket (UTC)", "records", "expected",
          "applied", "missing", "doubled", "producer-dup", "dead"));
      buckets.forEach((at, c) -> sb.append(row(at.toString().replace("T", " ").replace("Z", ""), c)));
      sb.append(row("total", total));
      sb.append(String.format("dropped by business key (journaled): %,d; dead-lettered (journaled): %,d; "
          + "effects with no input record: %,d; producer sequence gaps: %,d%n", droppedByKey, deadLettered,
          unexpectedEffects, sequenceGaps));
      if (!sampleMissing.isEmpty()) {
        sb.append("missing (first ").append(sampleMissing.size()).append("): ").append(sampleMissing).append('\n');
      }
      if (!sampleDoubled.isEmpty()) {
        sb.append("doubled (first ").append(sampleDoubled.size()).append("): ").append(sampleDoubled).append('\n');
      }
      if (!sampleGaps.isEmpty()) {
        sb.append("sequence gaps (first ").append(sampleGaps.size()).append("): ").append(sampleGaps).append('\n');
      }
      sb.append(verdict());
      return sb.toString();
    }

    /** One line: {@code VERDICT OK ...} or {@code VERDICT FAILED ...}. */
    public String verdict() {
      return String.format("VERDICT %s: %,d distinct keys expected, %,d applied, %,d missing, %,d doubled, "
          + "%,d producer duplicates", ok() ? "OK" : "FAILED", total.expected(), total.applied(), total.missing(),
          total.doubled(), total.producerDuplicates())
          + (total.deadLettered() > 0 ? String.format(", %,d dead-lettered", total.deadLettered()) : "")
          + (sequenceGaps > 0 ? String.format(", %,d sequence gaps", sequenceGaps) : "");
    }

    private static String row(String label, Counts c) {
      return String.format("%-20s %,10d %,10d %,10d %,8d %,8d %,12d %,8d%n", label.length() > 19
          ? label.substring(0, 19) : label, c.records(), c.expected(), c.applied(), c.missing(), c.doubled(),
          c.producerDuplicates(), c.deadLettered());
    }

    /** The report as JSON. */
    public String toJson() {
      StringBuilder sb = new StringBuilder("{");
      sb.append("\"topic\":\"").append(topic).append("\",\"group\":\"").append(group).append("\",\"ok\":").append(ok());
      sb.append(",\"total\":").append(json(total)).append(",\"droppedByKey\":").append(droppedByKey);
      sb.append(",\"unexpectedEffects\":").append(unexpectedEffects).append(",\"deadLettered\":").append(deadLettered)
          .append(",\"sequenceGaps\":").append(sequenceGaps).append(",\"buckets\":[");
      boolean first = true;
      for (Map.Entry<Instant, Counts> e : buckets.entrySet()) {
        sb.append(first ? "" : ",").append("{\"start\":\"").append(e.getKey()).append("\",\"counts\":")
            .append(json(e.getValue())).append('}');
        first = false;
      }
      sb.append("],\"sampleMissing\":").append(strings(sampleMissing)).append(",\"sampleDoubled\":")
          .append(strings(sampleDoubled)).append(",\"sampleGaps\":").append(strings(sampleGaps)).append('}');
      return sb.toString();
    }

    private static String json(Counts c) {
      return "{\"records\":" + c.records() + ",\"expected\":" + c.expected() + ",\"applied\":" + c.applied()
          + ",\"missing\":" + c.missing() + ",\"doubled\":" + c.doubled() + ",\"producerDuplicates\":"
          + c.producerDuplicates() + ",\"deadLettered\":" + c.deadLettered() + "}";
    }

    private static String strings(List<String> values) {
      StringBuilder sb = new StringBuilder("[");
      for (int i = 0; i < values.size(); i++) {
        sb.append(i == 0 ? "" : ",").append('"').append(values.get(i).replace("\\", "\\\\").replace("\"", "\\\""))
            .append('"');
      }
      return sb.append(']').toString();
    }
  }

  /** Reads the topic to its current end and the whole journal, and compares. */
  public Report run() {
    KeyCounts counts = new KeyCounts();
    Map<Long, String> sampleKeys = new HashMap<>();   // a few readable keys for the report, by digest
    MessageDigest sha = sha256();
    long[] d = new long[2];
    List<Instant> bucketStarts = new ArrayList<>();
    Map<Instant, Integer> bucketIndex = new TreeMap<>();
    long[] recordsPerBucket = new long[1 << 16];
    Map<String, BitSet> sequences = new HashMap<>();
    int partitions = partitionCount();
    Set<Long> deadPositions = new HashSet<>();
    List<TreeMap<Long, Integer>> coverage = new ArrayList<>();
    for (int i = 0; i < partitions; i++) {
      coverage.add(new TreeMap<>());
    }
    long[] droppedAndUnknown = readJournal(sha, d, counts, sampleKeys, partitions, deadPositions, coverage);
    for (TreeMap<Long, Integer> deltas : coverage) {
      int running = 0;
      for (Map.Entry<Long, Integer> e : deltas.entrySet()) {
        running += e.getValue();
        e.setValue(running);   // from this offset on, covered this many times
      }
    }
    long keyed = readTopic(sha, d, counts, sampleKeys, bucketIndex, bucketStarts, recordsPerBucket, sequences,
        deadPositions, coverage);
    long records = 0;
    for (int i = 0; i < bucketStarts.size(); i++) {
      records += recordsPerBucket[i];
    }
    if (journaledKeys && keyed == 0 && records > 0 && droppedAndUnknown[2] > 0) {
      throw new NoInputKeysException(records, droppedAndUnknown[2]);
    }
    if (journaledKeys && keyed > 0 && droppedAndUnknown[2] == 0) {
      throw new IllegalStateException("the topic holds " + keyed + " records with a business key, but no journal "
          + "entry of group [" + group + "] holds business-key digests: is the key window off "
          + "(key-window.enabled)? Checking by the journaled keys needs it on");
    }
    long gaps = 0;
    List<String> sampleGaps = new ArrayList<>();
    for (Map.Entry<String, BitSet> e : new TreeMap<>(sequences).entrySet()) {
      BitSet seen = e.getValue();
      for (int n = seen.nextClearBit(1); n < seen.length(); n = seen.nextClearBit(n + 1)) {
        gaps++;
        if (sampleGaps.size() < 10) {
          sampleGaps.add(e.getKey() + "#" + n);
        }
      }
    }

    long[][] perBucket = new long[bucketStarts.size()][6];   // expected, applied, missing, doubled, dups, dead
    long[] total = new long[6];
    List<String> missing = new ArrayList<>();
    List<String> doubled = new ArrayList<>();
    long[] unexpected = {0};
    counts.forEach((hi, lo, b, copies, applied, dead) -> {
      if (b < 0) {
        unexpected[0]++;
        return;
      }
      long[] row = perBucket[b];
      row[0]++;
      if (dead > 0) {
        row[5]++;
      }
      if (applied > 0) {
        row[1]++;
      } else if (dead == 0) {
        row[2]++;
        if (missing.size() < 10) {
          missing.add(sampleKeys.getOrDefault(hi ^ lo, "?"));
        }
      }
      if (applied > 1) {
        row[3]++;
        if (doubled.size() < 10) {
          doubled.add(sampleKeys.getOrDefault(hi ^ lo, "?"));
        }
      }
      row[4] += copies - 1;
    });
    Map<Instant, Counts> buckets = new TreeMap<>();
    for (Map.Entry<Instant, Integer> e : bucketIndex.entrySet()) {
      long[] r = perBucket[e.getValue()];
      buckets.put(e.getKey(), new Counts(recordsPerBucket[e.getValue()], r[0], r[1], r[2], r[3], r[4], r[5]));
      for (int i = 0; i < 6; i++) {
        total[i] += r[i];
      }
    }
    return new Report(topic, group, buckets,
        new Counts(records, total[0], total[1], total[2], total[3], total[4], total[5]),
        droppedAndUnknown[0], unexpected[0], missing, doubled, droppedAndUnknown[1], gaps, sampleGaps);
  }

  private Properties consumerProperties() {
    Properties p = new Properties();
    p.putAll(kafkaClients);
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
    return p;
  }

  private int partitionCount() {
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProperties(),
        new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      List<PartitionInfo> infos = consumer.partitionsFor(topic, Duration.ofSeconds(30));
      if (infos == null || infos.isEmpty()) {
        throw new IllegalArgumentException("topic [" + topic + "] does not exist at " + bootstrap);
      }
      return infos.size();
    }
  }

  private static long position(int partition, long offset) {
    return ((long) partition << 48) | offset;
  }

  private long readTopic(MessageDigest sha, long[] d, KeyCounts counts, Map<Long, String> sampleKeys,
      Map<Instant, Integer> bucketIndex, List<Instant> bucketStarts, long[] recordsPerBucket,
      Map<String, BitSet> sequences, Set<Long> deadPositions,
      List<TreeMap<Long, Integer>> coverage) {
    long keyed = 0;
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProperties(),
        new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      List<TopicPartition> tps = new ArrayList<>();
      List<PartitionInfo> infos = consumer.partitionsFor(topic, Duration.ofSeconds(30));
      for (PartitionInfo info : infos) {
        tps.add(new TopicPartition(topic, info.partition()));
      }
      consumer.assign(tps);
      consumer.seekToBeginning(tps);
      Map<TopicPartition, Long> end = consumer.endOffsets(tps);
      Map<TopicPartition, Long> remaining = new HashMap<>(end);
      remaining.entrySet().removeIf(e -> consumer.position(e.getKey()) >= e.getValue());
      long bucketMillis = bucket.toMillis();
      while (!remaining.isEmpty()) {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
          TopicPartition tp = new TopicPartition(r.topic(), r.partition());
          if (r.offset() >= end.get(tp)) {
            continue;
          }
          Instant start = Instant.ofEpochMilli(Math.max(0, r.timestamp()) / bucketMillis * bucketMillis);
          Integer b = bucketIndex.get(start);
          if (b == null) {
            b = bucketStarts.size();
            if (b >= recordsPerBucket.length) {
              throw new IllegalStateException("more than " + recordsPerBucket.length + " time buckets; use a wider bucket");
            }
            bucketIndex.put(start, b);
            bucketStarts.add(start);
          }
          recordsPerBucket[b]++;
          Optional<String> businessKey = inputKeys.apply(r);
          String key = businessKey.orElseGet(() -> r.topic() + "-" + r.partition() + "-" + r.offset());
          digest(sha, key, d);
          int slot = counts.addInput(d[0], d[1], b);
          boolean dead = deadPositions.contains(position(r.partition(), r.offset()));
          if (dead) {
            counts.markDead(slot);
          } else if (journaledKeys && businessKey.isEmpty() && r.partition() < coverage.size()) {
            // keyless: applied as often as journal writes covered its offset
            Map.Entry<Long, Integer> covered = coverage.get(r.partition()).floorEntry(r.offset());
            for (int i = 0; covered != null && i < covered.getValue(); i++) {
              counts.addApplied(d[0], d[1]);
            }
          }
          if (businessKey.isPresent()) {
            keyed++;
          }
          if (sampleKeys.size() < 100_000) {
            sampleKeys.put(d[0] ^ d[1], key);
          }
          if (sequenceHeader != null && r.headers().lastHeader(sequenceHeader) != null) {
            String entity = r.key() == null ? "" : new String(r.key(), StandardCharsets.UTF_8);
            try {
              int seq = Integer.parseInt(new String(r.headers().lastHeader(sequenceHeader).value(),
                  StandardCharsets.UTF_8).trim());
              if (seq > 0) {
                sequences.computeIfAbsent(entity, k -> new BitSet()).set(seq);
              }
            } catch (NumberFormatException e) {
              // not a sequence number: ignored
            }
          }
          if (r.offset() + 1 >= end.get(tp)) {
            remaining.remove(tp);
          }
        }
      }
    }
    return keyed;
  }

  private long[] readJournal(MessageDigest sha, long[] d, KeyCounts counts, Map<Long, String> sampleKeys,
      int partitions, Set<Long> deadPositions, List<TreeMap<Long, Integer>> coverage) {
    ActorSystem<Void> reader = ToolSystems.create("fencepost-reconciliation", journal, classLoader);
    long[] droppedByKey = {0, 0, 0};   // dropped by key, dead-lettered, digests journaled
    try {
      JdbcReadJournal read = PersistenceQuery.get(reader)
          .getReadJournalFor(JdbcReadJournal.class, JdbcReadJournal.Identifier());
      for (int p = 0; p < partitions; p++) {
        int partition = p;
        String pid = new PartitionId(group, topic, p).persistenceId();
        read.currentEventsByPersistenceId(pid, 0, Long.MAX_VALUE)
            .runForeach(env -> AppliedBatch.from(env.event()).ifPresent(batch -> {
              droppedByKey[0] += batch.droppedByKey();
              droppedByKey[1] += batch.deadLetters().size();
              batch.deadLetters().forEach(dl -> deadPositions.add(position(partition, dl.offset())));
              if (batch.nextOffset() > batch.fromOffset() && !batch.incarnation().startsWith("offset-reset-")) {
                coverage.get(partition).merge(batch.fromOffset(), 1, Integer::sum);
                coverage.get(partition).merge(batch.nextOffset(), -1, Integer::sum);
              }
              if (journaledKeys) {
                long[] digests = batch.appliedKeyDigests();
                droppedByKey[2] += digests.length / 2;
                for (int i = 0; i + 1 < digests.length; i += 2) {
                  counts.addApplied(digests[i], digests[i + 1]);
                }
                return;
              }
              for (Object event : batch.events()) {
                Optional<String> key = effectKeys.apply(event);
                if (key.isPresent()) {
                  digest(sha, key.get(), d);
                  counts.addApplied(d[0], d[1]);
                  sampleKeys.putIfAbsent(d[0] ^ d[1], key.get());
                }
              }
            }), reader)
            .toCompletableFuture().get(10, TimeUnit.MINUTES);
      }
      return droppedByKey;
    } catch (Exception e) {
      throw new IllegalStateException("cannot read the journal at " + journal.jdbcUrl() + ": " + e, e);
    } finally {
      reader.terminate();
      try {
        reader.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
      } catch (Exception ignored) {
        // best effort
      }
    }
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void digest(MessageDigest sha, String key, long[] out) {
    ByteBuffer b = ByteBuffer.wrap(sha.digest(key.getBytes(StandardCharsets.UTF_8)));
    out[0] = b.getLong();
    out[1] = b.getLong();
  }
}
