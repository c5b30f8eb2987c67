package io.fencepost.kafka;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.fencepost.DeadLetter;
import io.fencepost.PartitionId;
import io.fencepost.kafka.internal.DeadLetterHeaders;
import io.fencepost.kafka.internal.PipelineMetrics;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.header.Header;
import org.apache.pekko.actor.typed.ActorSystem;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes dead letters to {@code <topic><suffix>} from an idempotent producer and completes only
 * once the broker acknowledged them: only then may the actor journal them and move the offset past
 * them. A crash in between publishes them again on redelivery, with the same
 * {@code fencepost.dead-letter-id} header.
 *
 * <p>The producer's {@code max.request.size} is sized at start for the largest record a source topic
 * accepts (unless set in {@code producer-kafka-clients}), and dead-letter topics the pipeline creates
 * get the same {@code max.message.bytes}. A dead letter still too large (a dead-letter topic created
 * by hand with a smaller limit) is published without its value, with the header
 * {@value DeadLetterHeaders#VALUE_OMITTED}, and logged at ERROR: the partition goes on. One whose key
 * or headers alone are too large is published with Fencepost's headers only (key, value and the
 * record's headers left out, their sizes in headers). Any other
 * failure is retried with backoff, at ERROR and on {@code fencepost.dead-letter.failures} from
 * {@value #ERROR_AFTER_ATTEMPTS} attempts on; a send not settled within the producer's
 * {@code delivery.timeout.ms} (plus 5 s), and every {@value #REBUILD_EVERY}th failed attempt in a row,
 * replace the producer ({@link HealingProducer}), so that the partition goes on once the cause is gone.
 */
final class DeadLetterPublisher {

  private static final Logger log = LoggerFactory.getLogger(DeadLetterPublisher.class);
  /** Room for the headers a dead letter adds on top of the original record. */
  static final int HEADER_ROOM = 16 * 1024;
  static final int ERROR_AFTER_ATTEMPTS = 10;
  /** Every this many failed attempts in a row, the producer is replaced (it may be wedged without saying so). */
  private static final int REBUILD_EVERY = 5;
  private static final int KAFKA_DEFAULT_MAX_REQUEST_SIZE = 1_048_576;
  private static final long KAFKA_DEFAULT_BUFFER_MEMORY = 33_554_432;

  private final ActorSystem<?> system;
  private final PipelineSettings settings;
  private final PipelineMetrics metrics;
  private final Backoff backoff;
  private final Map<String, Integer> partitions = new ConcurrentHashMap<>();
  private volatile int largestSourceRecord;
  /** Created at start; replaced when it wedges. */
  private HealingProducer producers;
  private boolean closed;
  private final KafkaClients clients;
  private final Ticker ticker;
  private final Duration longestWait;

  DeadLetterPublisher(ActorSystem<?> system, PipelineSettings settings, KafkaClients clients, Ticker ticker) {
    this.system = system;
    this.ticker = ticker;
    this.clients = clients;
    this.settings = settings;
    this.metrics = new PipelineMetrics(system);
    this.backoff = new Backoff(settings.retryBackoff().min(), settings.retryBackoff().max(), 2);
    this.longestWait = HealingProducer.longestSendWait(properties());
  }

  /**
   * The longest one attempt to publish dead letters waits without a result
   * ({@link HealingProducer#longestSendWait}).
   */
  Duration longestWait() {
    return longestWait;
  }

  /** The producer's properties: the pipeline's and Pekko's, validated (a refused one names its key). */
  private Properties properties() {
    String key = "fencepost.pipelines." + settings.name() + ".dead-letter.producer-kafka-clients";
    return ClientProperties.producer(system, settings, settings.deadLetter().producer(), key);
  }

  /** The partition count of a dead-letter topic, checked at start. */
  void knowPartitions(String deadLetterTopic, int count) {
    partitions.put(deadLetterTopic, count);
  }

  /** The largest record a source topic accepts (its max.message.bytes), read at start. */
  void knowLargestSourceRecord(int bytes) {
    largestSourceRecord = Math.max(largestSourceRecord, bytes);
  }

  /** The max.message.bytes a dead-letter topic needs to take every record of its source, with headers. */
  static int deadLetterTopicMaxMessageBytes(int sourceMaxMessageBytes) {
    return (int) Math.min((long) sourceMaxMessageBytes + HEADER_ROOM, Integer.MAX_VALUE);
  }

  /** Creates the producer (sized by {@link #knowLargestSourceRecord}): called at start, so bad properties fail it. */
  void start() {
    producers();
  }

  private synchronized HealingProducer producers() {
    if (closed) {
      throw new IllegalStateException("[" + settings.name() + "] the dead-letter producer is closed");
    }
    if (producers == null) {
      Properties p = properties();
      if (!p.containsKey(ProducerConfig.MAX_REQUEST_SIZE_CONFIG)) {
        int size = Math.max(KAFKA_DEFAULT_MAX_REQUEST_SIZE, deadLetterTopicMaxMessageBytes(largestSourceRecord));
        p.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, Integer.toString(size));
        if (!p.containsKey(ProducerConfig.BUFFER_MEMORY_CONFIG)) {
          // The producer refuses a record larger than its buffer as too large, too.
          p.put(ProducerConfig.BUFFER_MEMORY_CONFIG, Long.toString(Math.max(KAFKA_DEFAULT_BUFFER_MEMORY, 2L * size)));
        }
      }
      producers = new HealingProducer(settings.name(), "dead-letter", p, () -> clients.producer(p));
    }
    return producers;
  }

  /**
   * Publishes {@code letters} (records of {@code raw}, by offset), retrying until acknowledged or
   * until {@code progress} is revoked (then the next owner publishes them again).
   */
  CompletionStage<Void> publish(PartitionId id, PartitionProgress progress, Map<Long, ConsumerRecord<byte[], byte[]>> raw,
      List<DeadLetter> letters) {
    return publish(id, progress, raw, letters, 0);
  }

  private CompletionStage<Void> publish(PartitionId id, PartitionProgress progress,
      Map<Long, ConsumerRecord<byte[], byte[]>> raw, List<DeadLetter> letters, int attempt) {
    if (letters.isEmpty()) {
      return CompletableFuture.completedFuture(null);
    }
    progress.inFlightActivityNanos = ticker.nanoTime();
    HealingProducer producers = producers();
    HealingProducer.Handle handle = producers.current();
    // Continuations run on the system's dispatcher, never on the producer's network thread (its
    // callbacks) or on the JDK's timer thread (orTimeout): both must stay free.
    Executor executor = system.executionContext();
    List<CompletableFuture<Void>> acks = new ArrayList<>();
    for (DeadLetter d : letters) {
      acks.add(send(handle, producers.ackTimeout(), id, raw.get(d.offset()), d, Omit.NOTHING)
          .exceptionallyComposeAsync(e -> smaller(handle, producers.ackTimeout(), id, raw.get(d.offset()), d,
              Omit.VALUE, unwrap(e)), executor)
          .exceptionallyComposeAsync(e -> smaller(handle, producers.ackTimeout(), id, raw.get(d.offset()), d,
              Omit.VALUE_KEY_AND_HEADERS, unwrap(e)), executor));
    }
    return CompletableFuture.allOf(acks.toArray(new CompletableFuture[0])).handleAsync((v, e) -> {
      progress.inFlightActivityNanos = ticker.nanoTime();
      if (e == null || progress.revoked) {
        return CompletableFuture.<Void>completedFuture(null);
      }
      // Never move past a record whose dead letter is not durable: retry the publication.
      Throwable cause = unwrap(e);
      if (handle.generation() != producers.generation()) {
        // Another partition replaced the producer under these sends: not a failure of this partition's.
        return Backoff.after(system, settings.retryBackoff().min(), () -> publish(id, progress, raw, letters, attempt));
      }
      boolean unsettled = acks.stream().anyMatch(DeadLetterPublisher::unsettled);
      String what = unsettled ? "no acknowledgement within " + producers.ackTimeout().toSeconds()
          + " s (a wedged producer)" : HealingProducer.describe(cause);
      metrics.deadLetterFailed(id, cause);
      progress.lastError = "publishing dead letters: " + what;
      if (unsettled || (attempt + 1) % REBUILD_EVERY == 0) {
        producers.rebuild(handle, "[" + id.shortName() + "] publishing dead letters: " + what);
      }
      Duration delay = backoff.delay(attempt);
      if (attempt + 1 >= ERROR_AFTER_ATTEMPTS && (attempt + 1) % ERROR_AFTER_ATTEMPTS == 0) {
        log.error("[{}] publishing {} dead letter(s) has failed {} times; the partition waits for them (nothing is "
            + "skipped). Check the dead-letter topic {} (its existence, max.message.bytes, ACLs, the broker): {}; "
            + "retrying in {} ms", id.shortName(), letters.size(), attempt + 1, topics(raw, letters), what,
            delay.toMillis());
      } else {
        log.warn("[{}] publishing {} dead letter(s) failed, retrying in {} ms: {}", id.shortName(), letters.size(),
            delay.toMillis(), what);
      }
      return Backoff.after(system, delay, () -> publish(id, progress, raw, letters, attempt + 1));
    }, executor).thenCompose(f -> f);
  }

  /** What a dead letter leaves out, when the dead-letter topic or its producer would refuse it whole. */
  enum Omit {
    NOTHING,
    /** The original value (its size in header {@value DeadLetterHeaders#VALUE_OMITTED}). */
    VALUE,
    /**
     * The original value, key and headers (their sizes in headers): only Fencepost's own headers are
     * left, which name the record's topic, partition and offset and the error.
     */
    VALUE_KEY_AND_HEADERS
  }

  /**
   * After a send refused as too large ({@code failure}), sends the dead letter again leaving out
   * {@code omit}, and says so at ERROR once it is acknowledged; any other failure is passed on.
   */
  private CompletableFuture<Void> smaller(HealingProducer.Handle handle, Duration ackTimeout, PartitionId id,
      ConsumerRecord<byte[], byte[]> r, DeadLetter d, Omit omit, Throwable failure) {
    if (!(failure instanceof RecordTooLargeException)) {
      return CompletableFuture.failedFuture(failure);
    }
    metrics.deadLetterFailed(id, failure);
    String dlt = settings.deadLetter().topicFor(r.topic());
    return send(handle, ackTimeout, id, r, d, omit).thenRun(() -> log.error("[{}] the dead letter of offset [{}] "
        + "({} bytes of value, {} of key, {} of headers) is larger than the dead-letter topic [{}] or its producer "
        + "accepts ({}): published without its {}, header {} = its size; the record stays at that offset while the "
        + "topic retains it. Raise max.message.bytes of [{}] and, if set, max.request.size in "
        + "fencepost.pipelines.{}.dead-letter.producer-kafka-clients", id.shortName(), d.offset(), length(r.value()),
        length(r.key()), DeadLetterHeaders.size(r.headers()), dlt, failure.getMessage(),
        omit == Omit.VALUE ? "value" : "value, key and headers (dlq replay --key does not find it)",
        DeadLetterHeaders.VALUE_OMITTED, dlt, settings.name()));
  }

  private static int length(byte[] bytes) {
    return bytes == null ? 0 : bytes.length;
  }

  /** Whether {@code ack} failed for want of an acknowledgement within the producer's ack timeout. */
  private static boolean unsettled(CompletableFuture<Void> ack) {
    try {
      ack.getNow(null);
      return false;
    } catch (CompletionException e) {
      return unwrap(e) instanceof TimeoutException;
    } catch (CancellationException e) {
      return false;
    }
  }

  private static Throwable unwrap(Throwable e) {
    return e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
  }

  private List<String> topics(Map<Long, ConsumerRecord<byte[], byte[]>> raw, List<DeadLetter> letters) {
    return letters.stream().map(d -> settings.deadLetter().topicFor(raw.get(d.offset()).topic())).distinct().toList();
  }

  /** Sends one dead letter; fails with a {@link TimeoutException} when not settled within {@code ackTimeout}. */
  private CompletableFuture<Void> send(HealingProducer.Handle handle, Duration ackTimeout, PartitionId id,
      ConsumerRecord<byte[], byte[]> r, DeadLetter d, Omit omit) {
    String dlt = settings.deadLetter().topicFor(r.topic());
    boolean whole = omit == Omit.NOTHING;
    boolean keyAndHeaders = omit == Omit.VALUE_KEY_AND_HEADERS;
    ProducerRecord<byte[], byte[]> out = new ProducerRecord<>(dlt, r.partition() % partitions.getOrDefault(dlt, 1),
        keyAndHeaders ? null : r.key(), whole ? r.value() : null);
    if (!keyAndHeaders) {
      for (Header h : r.headers()) {
        out.headers().add(h);
      }
    }
    DeadLetterHeaders.add(out.headers(), id, r.topic(), r.partition(), r.offset(), r.timestamp(),
        d.errorClass(), d.errorMessage(), d.attempts(), d.parked());
    if (!whole) {
      DeadLetterHeaders.omitted(out.headers(), length(r.value()), keyAndHeaders ? length(r.key()) : -1,
          keyAndHeaders ? DeadLetterHeaders.size(r.headers()) : -1);
    }
    CompletableFuture<Void> ack = new CompletableFuture<>();
    try {
      handle.producer().send(out, (md, e) -> {
        if (e == null) {
          ack.complete(null);
        } else {
          ack.completeExceptionally(e);
        }
      });
    } catch (RuntimeException e) {
      ack.completeExceptionally(e);
    }
    return ack.orTimeout(ackTimeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  synchronized void close(Duration timeout) {
    closed = true;
    if (producers != null) {
      producers.close(timeout);
    }
  }
}
