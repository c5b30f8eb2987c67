package io.fencepost.benchmarks;

import java.nio.ByteBuffer;

import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;

/**
 * A merchant's count and sum, as the Kafka Streams peer aggregates them (16 bytes on the wire).
 *
 * @param payments payments credited
 * @param cents their sum
 */
record Totals(long payments, long cents) {

  static final Totals ZERO = new Totals(0, 0);

  /** Big-endian {@code payments, cents}. */
  static final Serde<Totals> SERDE = Serdes.serdeFrom(
      (topic, t) -> t == null ? null : ByteBuffer.allocate(16).putLong(t.payments).putLong(t.cents).array(),
      (topic, b) -> {
        if (b == null) {
          return null;
        }
        ByteBuffer buf = ByteBuffer.wrap(b);
        return new Totals(buf.getLong(), buf.getLong());
      });

  Totals plus(Payment p) {
    return new Totals(payments + 1, cents + p.cents());
  }
}
