package io.fencepost.reconciliation;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;
import java.util.function.Function;

import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.jdbc.JournalDatabases;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * End-to-end reconciliation of a Fencepost pipeline: the input topic is the ground truth (distinct
 * business keys, bucketed by record time), the journal is the effect store; every key must be
 * applied exactly once. Detects the silent failures that matter: missing effects
 * (at-most-once in disguise) and doubled effects (a duplicate that got through).
 *
 * <pre>{@code
 * ReconciliationReport r = Reconciliation.of(bootstrap, "payments", "ledger", journalDb)
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

  /** Keys and gaps listed in a report, at most, of each kind. */
  private static final int SAMPLES = 10;

  private final String bootstrap;
  private final String topic;
  private final String group;
  private final List<JournalDatabase> journals;
  private Function<ConsumerRecord<byte[], byte[]>, Optional<String>> inputKeys = r -> Optional.empty();
  private Function<Object, Optional<String>> effectKeys = e -> Optional.empty();
  private Duration bucket = Duration.ofMinutes(1);
  private String sequenceHeader;
  private boolean journaledKeys;
  private ClassLoader classLoader = Reconciliation.class.getClassLoader();
  private Map<String, String> kafkaClients = Map.of();
  private String outboxTopic;
  private boolean outboxExactlyOnce;

  private Reconciliation(String bootstrap, String topic, String group, List<JournalDatabase> journals) {
    this.bootstrap = Objects.requireNonNull(bootstrap, "bootstrap");
    this.topic = Objects.requireNonNull(topic, "topic");
    this.group = Objects.requireNonNull(group, "group");
    this.journals = List.copyOf(journals);
  }

  /** Reconciles topic {@code topic} against the journal of consumer group {@code group}. */
  public static Reconciliation of(String bootstrap, String topic, String group, JournalDatabase journal) {
    return of(bootstrap, topic, group, List.of(journal));
  }

  /**
   * Reconciles topic {@code topic} against the journal of consumer group {@code group}, spread over
   * {@code journals} (a deployment's databases, in order: each partition's history is read from the
   * database it lives in; {@link #run} refuses a list the databases contradict,
   * {@link JournalDatabases#asRecorded}).
   */
  public static Reconciliation of(String bootstrap, String topic, String group, List<JournalDatabase> journals) {
    if (journals.isEmpty()) {
      throw new IllegalArgumentException("at least one journal database");
    }
    return new Reconciliation(bootstrap, topic, group, journals);
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

  /** Reads the topic to its current end and the whole journal, and compares. */
  /**
   * Also reconciles outbox topic {@code topic} (read {@code read_committed}) with the outbox records
   * the journal holds for it: each must be there; copies fail the report only when
   * {@code exactlyOnce} (the relay's {@code outbox.delivery}).
   */
  public Reconciliation outboxTopic(String topic, boolean exactlyOnce) {
    this.outboxTopic = Objects.requireNonNull(topic, "topic");
    this.outboxExactlyOnce = exactlyOnce;
    return this;
  }

  public ReconciliationReport run() {
    KeyTally keys = new KeyTally();
    JournalScan journalScan = new JournalScan(partitionCount(), outboxTopic);
    journalScan.read(JournalDatabases.asRecorded(journals), classLoader, group, topic, journaledKeys, effectKeys, keys);
    TopicScan topicScan = new TopicScan();
    topicScan.read(consumerProperties(), topic, bucket, inputKeys, sequenceHeader, journaledKeys, journalScan, keys);
    long records = topicScan.records();
    if (journaledKeys && topicScan.keyed == 0 && records > 0 && journalScan.journaledDigests > 0) {
      throw new NoInputKeysException(records, journalScan.journaledDigests);
    }
    if (journaledKeys && topicScan.keyed > 0 && journalScan.journaledDigests == 0) {
      throw new IllegalStateException("the topic holds " + topicScan.keyed + " records with a business key, but no "
          + "journal entry of group [" + group + "] holds business-key digests: is the key window off "
          + "(key-window.enabled)? Checking by the journaled keys needs it on");
    }
    List<String> sampleGaps = new ArrayList<>();
    long gaps = topicScan.gaps(sampleGaps, SAMPLES);

    long[][] perBucket = new long[topicScan.buckets().size()][6];   // expected, applied, missing, doubled, dups, dead
    List<String> missing = new ArrayList<>();
    List<String> doubled = new ArrayList<>();
    long[] unexpected = {0};
    keys.counts.forEach((hi, lo, b, copies, applied, dead) -> {
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
        if (missing.size() < SAMPLES) {
          missing.add(keys.sample(hi, lo));
        }
      }
      if (applied > 1) {
        row[3]++;
        if (doubled.size() < SAMPLES) {
          doubled.add(keys.sample(hi, lo));
        }
      }
      row[4] += copies - 1;
    });
    Map<Instant, ReconciliationReport.Counts> buckets = new TreeMap<>();
    long[] total = new long[6];
    topicScan.buckets().forEach((start, b) -> {
      long[] r = perBucket[b];
      buckets.put(start, new ReconciliationReport.Counts(topicScan.records(b), r[0], r[1], r[2], r[3], r[4], r[5]));
      for (int i = 0; i < 6; i++) {
        total[i] += r[i];
      }
    });
    return new ReconciliationReport(topic, group, buckets,
        new ReconciliationReport.Counts(records, total[0], total[1], total[2], total[3], total[4], total[5]),
        journalScan.droppedByKey, unexpected[0], missing, doubled, journalScan.deadLettered, gaps, sampleGaps,
        outboxTopic == null ? Optional.empty() : Optional.of(OutboxTopicScan.compare(consumerProperties(), outboxTopic,
            outboxExactlyOnce, journalScan.outboxIds)));
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
}
