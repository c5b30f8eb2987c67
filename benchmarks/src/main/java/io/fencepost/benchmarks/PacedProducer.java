package io.fencepost.benchmarks;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * Sends a workload at a fixed offered load from its own thread while a peer consumes it: payment
 * {@code i} is due {@code i / rate} seconds after the start and is timestamped by the producer when
 * sent (CreateTime), which is where every peer's end-to-end latency starts (so it includes the
 * producer's {@link #LINGER_MS}).
 */
final class PacedProducer {

  /**
   * The producer's {@code linger.ms}: Kafka 4.0's default. With 0 (3.x's default) the tiny batches
   * cost the broker, which shares these 2 cores with every peer, more CPU than the peers themselves.
   */
  static final int LINGER_MS = 5;

  private final String bootstrap;
  private final String topic;
  private final Workload workload;
  private final double ratePerSecond;
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private final AtomicLongArray sentAt;
  private Thread thread;
  private volatile double seconds;

  PacedProducer(String bootstrap, String topic, Workload workload, double ratePerSecond) {
    this.bootstrap = bootstrap;
    this.topic = topic;
    this.workload = workload;
    this.ratePerSecond = ratePerSecond;
    this.sentAt = new AtomicLongArray(workload.records());
  }

  Workload workload() {
    return workload;
  }

  /** Starts sending; returns at once. */
  void start() {
    thread = new Thread(this::send, "paced-producer-" + topic);
    thread.setDaemon(true);
    thread.start();
  }

  private void send() {
    try (KafkaProducer<String, String> producer = Workload.producer(bootstrap, LINGER_MS)) {
      long start = System.nanoTime();
      int sent = 0;
      while (sent < workload.records()) {
        long due = Math.min(workload.records(), (long) ((System.nanoTime() - start) / 1e9 * ratePerSecond) + 1);
        for (; sent < due; sent++) {
          long now = System.currentTimeMillis();
          sentAt.set(sent, now);
          producer.send(new ProducerRecord<>(topic, null, now, Workload.merchant(sent), workload.value(sent)), (md, e) -> {
            if (e != null) {
              failure.compareAndSet(null, e);
            }
          });
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
      }
      producer.flush();
      seconds = (System.nanoTime() - start) / 1e9;
    } catch (RuntimeException e) {
      failure.compareAndSet(null, e);
    }
  }

  /** Waits until every record is acknowledged; throws if sending failed. */
  void await(Duration timeout) throws InterruptedException {
    thread.join(timeout.toMillis());
    if (thread.isAlive()) {
      throw new IllegalStateException("paced producer on [" + topic + "] still sending after " + timeout);
    }
    if (failure.get() != null) {
      throw new IllegalStateException("paced producer on [" + topic + "] failed: " + failure.get(), failure.get());
    }
  }

  /** The timestamp of payment {@code id} (once sent). */
  long sentAt(int id) {
    return sentAt.get(id);
  }

  /** The rate actually achieved (records / seconds from first send to last acknowledgement). */
  double achievedRate() {
    return seconds == 0 ? 0 : workload.records() / seconds;
  }
}
