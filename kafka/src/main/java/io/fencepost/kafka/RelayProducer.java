package io.fencepost.kafka;

import java.time.Duration;
import java.util.Properties;
import java.util.function.Supplier;

import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The producer this node's outbox relays share, rebuilt when a relay's round fails. A producer can
 * wedge for good: kafka-clients 3.9 splits a batch the broker refuses as too large again and again
 * (KAFKA-8350), and the chain of futures this builds can overflow the stack of its network thread,
 * which then dies; every later send waits forever. A new producer (new producer id, fresh sequence
 * numbers, a live thread) is the one cure that needs no restart. Relays share one producer, so a
 * rebuild names the generation it saw fail: the relays that failed on the same one rebuild it once,
 * and a relay whose round failed because another replaced the producer under it does not count
 * that as a failure of its own.
 */
final class RelayProducer {

  private static final Logger log = LoggerFactory.getLogger(RelayProducer.class);
  private static final long DEFAULT_DELIVERY_TIMEOUT_MS = 120_000;

  /** A producer and its generation. */
  record Handle(Producer<byte[], byte[]> producer, long generation) {
  }

  private final String pipeline;
  private final Supplier<Producer<byte[], byte[]>> factory;
  private final Duration ackTimeout;
  private Handle current;
  private boolean closed;

  RelayProducer(String pipeline, Properties properties, Supplier<Producer<byte[], byte[]>> factory) {
    this.pipeline = pipeline;
    this.factory = factory;
    Object delivery = properties.get(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG);
    long deliveryMs = delivery == null ? DEFAULT_DELIVERY_TIMEOUT_MS : Long.parseLong(delivery.toString());
    // The producer settles every send within delivery.timeout.ms while its thread lives; a send not
    // settled some seconds later means the producer is wedged.
    this.ackTimeout = Duration.ofMillis(deliveryMs).plusSeconds(5);
    this.current = new Handle(factory.get(), 1);
  }

  /** How long a relay waits for a send to be settled before it takes the producer as wedged. */
  Duration ackTimeout() {
    return ackTimeout;
  }

  synchronized Handle current() {
    if (closed) {
      throw new IllegalStateException("[" + pipeline + "] the outbox producer is closed");
    }
    return current;
  }

  /**
   * Replaces the producer of {@code failed}'s generation (once: a later call naming it does nothing).
   * The old one is closed at once: its unsettled sends fail, and the relays send them again.
   */
  synchronized void rebuild(Handle failed, String why) {
    if (closed || failed.generation() != current.generation()) {
      return;
    }
    Producer<byte[], byte[]> old = current.producer();
    current = new Handle(factory.get(), current.generation() + 1);
    log.info("[{}] outbox producer replaced by generation {} after a failed round: {}", pipeline, current.generation(),
        why);
    closeQuietly(old, Duration.ZERO);
  }

  synchronized void close(Duration timeout) {
    closed = true;
    closeQuietly(current.producer(), timeout);
  }

  private void closeQuietly(Producer<byte[], byte[]> producer, Duration timeout) {
    try {
      producer.close(timeout);
    } catch (RuntimeException e) {
      log.warn("[{}] closing an outbox producer failed: {}", pipeline, e.toString());
    }
  }
}
