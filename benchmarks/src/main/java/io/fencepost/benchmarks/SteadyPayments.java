package io.fencepost.benchmarks;

import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

// The ledger's payment (JSON on the wire), not this package's CSV Payment.
import io.fencepost.examples.Payment;
import io.fencepost.examples.PaymentJson;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Sends payments to the examples' ledger at a fixed rate from its own thread until stopped: payment
 * {@code i} is due {@code i / rate} seconds after the start, keyed by {@link Workload#merchant}, with
 * a unique payment id (the ledger's business key). {@link PacedProducer} sends a fixed count in this
 * package's CSV format, which the ledger does not read.
 */
final class SteadyPayments {

  private final String bootstrap;
  private final String topic;
  private final double rate;
  private final String idPrefix;
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private final Thread thread = new Thread(this::send, "steady-payments");
  private volatile boolean running = true;
  private volatile long sent;

  SteadyPayments(String bootstrap, String topic, double rate) {
    this(bootstrap, topic, rate, "pay-");
  }

  /** Payments whose ids start with {@code idPrefix} (a run after another needs ids of its own). */
  SteadyPayments(String bootstrap, String topic, double rate, String idPrefix) {
    this.bootstrap = bootstrap;
    this.topic = topic;
    this.rate = rate;
    this.idPrefix = idPrefix;
  }

  /** Starts sending; returns at once. */
  void start() {
    thread.setDaemon(true);
    thread.start();
  }

  private void send() {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.LINGER_MS_CONFIG, Integer.toString(PacedProducer.LINGER_MS));
    KafkaProducer<String, Payment> producer = null;
    try {
      producer = new KafkaProducer<>(p, new StringSerializer(), new PaymentJson());
      long start = System.nanoTime();
      int i = 0;
      while (running) {
        long due = (long) ((System.nanoTime() - start) / 1e9 * rate) + 1;
        for (; i < due; i++) {
          String merchant = Workload.merchant(i);
          producer.send(new ProducerRecord<>(topic, merchant, new Payment(idPrefix + i, merchant, Workload.cents(i))),
              (md, e) -> {
                if (e != null) {
                  failure.compareAndSet(null, e);
                }
              });
        }
        sent = i;
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
      }
    } catch (RuntimeException e) {
      failure.compareAndSet(null, e);
    } finally {
      if (producer != null) {
        producer.close(Duration.ofSeconds(10));   // bounded: the default waits for ever
      }
    }
  }

  /** Throws if sending failed. */
  void check() {
    if (failure.get() != null) {
      throw new IllegalStateException("the payments producer failed: " + failure.get(), failure.get());
    }
  }

  /** Payments handed to the producer so far. */
  long sent() {
    return sent;
  }

  /** Stops sending and waits (up to 30 s) for the thread to close its producer. */
  void stop() throws InterruptedException {
    running = false;
    thread.join(TimeUnit.SECONDS.toMillis(30));
  }
}
