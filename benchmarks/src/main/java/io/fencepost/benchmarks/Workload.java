package io.fencepost.benchmarks;

import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * What every peer consumes: {@code records} payments of exactly {@code recordBytes} bytes (value),
 * round-robin over {@value #MERCHANTS} merchants, keyed by merchant (so Kafka's default partitioner
 * keeps a merchant in one partition, as Kafka Streams' {@code groupByKey} requires), with unique
 * business keys {@code p0 .. p<records-1>} and known totals to check effects against.
 *
 * @param records how many payments
 * @param recordBytes the size of each record value in bytes
 */
public record Workload(int records, int recordBytes) {

  /** Distinct merchants (record keys). */
  public static final int MERCHANTS = 1000;

  public Workload {
    if (records < 1 || recordBytes < 32) {
      throw new IllegalArgumentException("need records >= 1 and recordBytes >= 32, was " + records + " / " + recordBytes);
    }
  }

  /** The merchant of payment {@code id}. */
  public static String merchant(int id) {
    return "merchant-" + (id % MERCHANTS);
  }

  /** The index of a merchant named by {@link #merchant(int)}. */
  public static int merchantIndex(String merchant) {
    return Integer.parseInt(merchant, "merchant-".length(), merchant.length(), 10);
  }

  /** The amount of payment {@code id}. */
  public static long cents(int id) {
    return 100 + id % 900;
  }

  /** The sum of the amounts of payments 0 .. records-1. */
  public long expectedCents() {
    long sum = 0;
    for (int i = 0; i < records; i++) {
      sum += cents(i);
    }
    return sum;
  }

  /** The value of payment {@code id}, padded to {@code recordBytes} (ASCII, so bytes = chars). */
  public String value(int id) {
    String head = "p" + id + "," + merchant(id) + "," + cents(id) + ",";
    return head + "x".repeat(Math.max(0, recordBytes - head.length()));
  }

  /** A producer tuned like a bulk loader (the peers' consumers are what is measured, not this). */
  static KafkaProducer<String, String> producer(String bootstrap, int lingerMs) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.LINGER_MS_CONFIG, Integer.toString(lingerMs));
    p.put(ProducerConfig.BATCH_SIZE_CONFIG, "131072");
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
  }

  /** Writes all payments to {@code topic} and waits until the broker has them. */
  public void produce(String bootstrap, String topic) {
    try (KafkaProducer<String, String> producer = producer(bootstrap, 10)) {
      for (int i = 0; i < records; i++) {
        producer.send(new ProducerRecord<>(topic, merchant(i), value(i)));
      }
      producer.flush();
    }
  }
}
