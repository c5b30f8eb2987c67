package io.fencepost.kafka;

import java.time.Duration;
import java.util.Properties;
import java.util.function.Supplier;

import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A producer that is replaced when it wedges: the one the outbox relays of this node share, and the
 * dead-letter publisher's. A producer can wedge for good: kafka-clients 3.9 splits a batch the broker
 * refuses as too large again and again (KAFKA-8350), and the chain of futures this builds can overflow
 * the stack of its network thread, which then dies; every later send then waits forever. A new
 * producer (new producer id, fresh sequence numbers, a live thread) is the one cure that needs no
 * restart. A send not settled within {@link #ackTimeout()} marks a wedged producer. Users share one
 * producer, so a rebuild names the generation it saw fail: the users that failed on the same one
 * rebuild it once, and a user whose send failed because another replaced the producer under it does
 * not count that as a failure of its own.
 */
final class HealingProducer {

  private static final Logger log = LoggerFactory.getLogger(HealingProducer.class);
  private static final long DEFAULT_DELIVERY_TIMEOUT_MS = 120_000;
  private static final long DEFAULT_MAX_BLOCK_MS = 60_000;

  /** A producer and its generation. */
  record Handle(Producer<byte[], byte[]> producer, long generation) {
  }

  private final String pipeline;
  /** Whose producer it is, for the log: "outbox" or "dead-letter". */
  private final String role;
  private final Supplier<Producer<byte[], byte[]>> factory;
  private final Duration ackTimeout;
  private Handle current;
  private boolean closed;

  HealingProducer(String pipeline, String role, Properties properties, Supplier<Producer<byte[], byte[]>> factory) {
    this.pipeline = pipeline;
    this.role = role;
    this.factory = factory;
    this.ackTimeout = ackTimeout(properties);
    this.current = new Handle(factory.get(), 1);
  }

  /**
   * How long a send of a producer with {@code properties} may wait to be settled before the producer
   * is taken as wedged: the producer settles every send within delivery.timeout.ms while its thread
   * lives, so a send not settled some seconds later means it is wedged.
   */
  static Duration ackTimeout(Properties properties) {
    return Duration.ofMillis(millis(properties, ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, DEFAULT_DELIVERY_TIMEOUT_MS))
        .plusSeconds(5);
  }

  /**
   * The longest one send of a producer with {@code properties} goes without a result: it may block
   * for {@code max.block.ms} (the topic's metadata), then wait for its acknowledgement until the
   * producer is taken as wedged.
   */
  static Duration longestSendWait(Properties properties) {
    return ackTimeout(properties).plusMillis(millis(properties, ProducerConfig.MAX_BLOCK_MS_CONFIG,
        DEFAULT_MAX_BLOCK_MS));
  }

  private static long millis(Properties properties, String key, long kafkaDefault) {
    Object value = properties.get(key);
    return value == null ? kafkaDefault : Long.parseLong(value.toString().trim());
  }

  /** A send's failure for a log line: Kafka's messages end with a period, and the line goes on after it. */
  static String describe(Throwable failure) {
    String text = failure.toString();
    return text.endsWith(".") ? text.substring(0, text.length() - 1) : text;
  }

  /** How long a send may wait to be settled before its producer is taken as wedged. */
  Duration ackTimeout() {
    return ackTimeout;
  }

  synchronized Handle current() {
    if (closed) {
      throw new IllegalStateException("[" + pipeline + "] the " + role + " producer is closed");
    }
    return current;
  }

  /** The generation of the current producer: a send that failed on an older one failed because it was replaced. */
  synchronized long generation() {
    return current.generation();
  }

  /**
   * Replaces the producer of {@code failed}'s generation (once: a later call naming it does nothing).
   * The old one is closed at once, on a thread of its own and outside this object's lock: closing
   * joins the producer's network thread, which fails its unsettled sends, and their callbacks may
   * call this method (a deadlock, were the lock held); their users send them again.
   */
  void rebuild(Handle failed, String why) {
    Producer<byte[], byte[]> old;
    long generation;
    synchronized (this) {
      if (closed || failed.generation() != current.generation()) {
        return;
      }
      old = current.producer();
      current = new Handle(factory.get(), current.generation() + 1);
      generation = current.generation();
    }
    log.info("[{}] {} producer replaced by generation {}: {}", pipeline, role, generation, why);
    Thread closing = new Thread(() -> closeQuietly(old, Duration.ZERO),
        "fencepost-" + pipeline + "-" + role + "-producer-close-" + failed.generation());
    closing.setDaemon(true);
    closing.start();
  }

  synchronized void close(Duration timeout) {
    closed = true;
    closeQuietly(current.producer(), timeout);
  }

  private void closeQuietly(Producer<byte[], byte[]> producer, Duration timeout) {
    try {
      producer.close(timeout);
    } catch (RuntimeException e) {
      log.warn("[{}] closing a {} producer failed: {}", pipeline, role, e.toString());
    }
  }
}
