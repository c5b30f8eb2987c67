package io.fencepost.tools;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Properties;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongConsumer;

import io.fencepost.examples.Payment;
import io.fencepost.examples.PaymentJson;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Generates payments in the ledger's wire format: unique payment ids, merchants as record keys
 * (so a merchant's payments share a partition), a per-merchant sequence number in header
 * {@code merchant-seq}, and a deliberate rate of producer-side duplicates (the same payment re-sent
 * at a new offset, as a producer or upstream service does after a timed-out attempt). Seeded: the
 * same seed produces the same stream.
 */
final class PaymentProducer {

  /** What was sent, and the highest offset the broker acknowledged per partition. */
  record Summary(long payments, long duplicates, double seconds, Map<Integer, Long> lastOffsets) {
  }

  /** A send's callback: the first failure kept, the highest acknowledged offset per partition recorded. */
  static Callback acknowledged(AtomicReference<Exception> failure, Map<Integer, Long> lastOffsets, Runnable onAck) {
    return (md, e) -> {
      if (e != null) {
        failure.compareAndSet(null, e);
      } else {
        lastOffsets.merge(md.partition(), md.offset(), Math::max);
        onAck.run();
      }
    };
  }

  private final String bootstrap;
  private final String topic;
  private final int merchants;
  private final double duplicateRate;
  private final long seed;
  private final double skew;
  private final AtomicLong sent = new AtomicLong();
  private final AtomicLong duplicates = new AtomicLong();

  PaymentProducer(String bootstrap, String topic, int merchants, double duplicateRate, long seed) {
    this(bootstrap, topic, merchants, duplicateRate, seed, 0);
  }

  /**
   * @param skew 0 for merchants chosen uniformly; above 0 a Zipf-like skew with this exponent
   *     (1.0: merchant 0 gets about as many payments as the next several together), so some
   *     partitions run hot
   */
  PaymentProducer(String bootstrap, String topic, int merchants, double duplicateRate, long seed, double skew) {
    this.bootstrap = bootstrap;
    this.topic = topic;
    this.merchants = merchants;
    this.duplicateRate = duplicateRate;
    this.seed = seed;
    this.skew = skew;
  }

  /** Cumulative weights of merchants for the skewed choice (null when uniform). */
  private double[] cumulativeWeights() {
    if (skew <= 0) {
      return null;
    }
    double[] c = new double[merchants];
    double sum = 0;
    for (int m = 0; m < merchants; m++) {
      sum += 1.0 / Math.pow(m + 1, skew);
      c[m] = sum;
    }
    for (int m = 0; m < merchants; m++) {
      c[m] /= sum;
    }
    return c;
  }

  private static int pick(Random random, int merchants, double[] cumulative) {
    if (cumulative == null) {
      return random.nextInt(merchants);
    }
    int i = Arrays.binarySearch(cumulative, random.nextDouble());
    return Math.min(merchants - 1, i >= 0 ? i : -i - 1);
  }

  /** Records sent so far (payments and duplicates). */
  long sent() {
    return sent.get();
  }

  long duplicates() {
    return duplicates.get();
  }

  /**
   * Sends {@code count} distinct payments (plus duplicates) at about {@code perSecond} records per
   * second; {@code onEach} runs after each distinct payment with how many were sent.
   */
  Summary run(long count, int perSecond, LongConsumer onEach) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5");
    p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    Random random = new Random(seed);
    long[] merchantSeq = new long[merchants];
    PaymentJson json = new PaymentJson();
    AtomicReference<Exception> failure = new AtomicReference<>();
    Map<Integer, Long> lastOffsets = new ConcurrentSkipListMap<>();
    long start = System.nanoTime();
    double[] cumulative = cumulativeWeights();
    try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(p, new StringSerializer(),
        new ByteArraySerializer())) {
      for (long i = 0; i < count; i++) {
        int m = pick(random, merchants, cumulative);
        String merchant = "merchant-" + m;
        Payment payment = new Payment("pay-" + seed + "-" + i, merchant, 100 + random.nextInt(99_900));
        long seq = ++merchantSeq[m];
        send(producer, json, payment, seq, failure, lastOffsets);
        if (random.nextDouble() < duplicateRate) {
          send(producer, json, payment, seq, failure, lastOffsets);   // the re-send: same payment, new offset
          duplicates.incrementAndGet();
        }
        onEach.accept(i + 1);
        pace(start, i + 1, perSecond);
        if (failure.get() != null) {
          throw new IllegalStateException("producing to " + topic + " failed: " + failure.get(), failure.get());
        }
      }
      producer.flush();
    }
    if (failure.get() != null) {   // a send of the last batches
      throw new IllegalStateException("producing to " + topic + " failed: " + failure.get(), failure.get());
    }
    return new Summary(count, duplicates.get(), (System.nanoTime() - start) / 1e9, Map.copyOf(lastOffsets));
  }

  private void send(KafkaProducer<String, byte[]> producer, PaymentJson json, Payment payment, long seq,
      AtomicReference<Exception> failure, Map<Integer, Long> lastOffsets) {
    ProducerRecord<String, byte[]> record = new ProducerRecord<>(topic, payment.merchantId(),
        json.serialize(topic, payment));
    record.headers().add("merchant-seq", Long.toString(seq).getBytes(StandardCharsets.UTF_8));
    producer.send(record, acknowledged(failure, lastOffsets, sent::incrementAndGet));
  }

  /** Sleeps until {@code sent} records are due at {@code perSecond} since {@code start} (no wait for 0). */
  static void pace(long start, long sent, int perSecond) {
    if (perSecond <= 0) {
      return;
    }
    long wait = start + (long) (sent * 1e9 / perSecond) - System.nanoTime();
    if (wait > 1_000_000) {
      try {
        Thread.sleep(wait / 1_000_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while producing", e);
      }
    }
  }

  /** Draws a progress bar on one terminal line. */
  static void progress(PrintStream out, String label, long done, long total) {
    int width = 30;
    int filled = total == 0 ? width : (int) Math.min(width, done * width / total);
    out.printf("\r%-12s [%s%s] %,d / %,d   ", label, "#".repeat(filled), ".".repeat(width - filled), done, total);
    out.flush();
  }
}
