package io.fencepost.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import io.fencepost.embedded.KafkaBroker;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code fencepost produce --values-file}: a file of a service's own JSON records onto a topic. */
@Tag("integration")
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class ProduceLinesIT {

  @Test
  void eachLineIsOneRecordKeyedByItsFieldAndReSentAtTheDupRate(@TempDir Path dir) throws Exception {
    Path file = Files.writeString(dir.resolve("orders.jsonl"), """
        {"orderId":"o-1","sku":"apple","quantity":2}

        {"orderId":"o-2","sku":"pear","quantity":1}
        {"orderId":"o-3","sku":"apple","quantity":5}
        """);
    try (KafkaBroker broker = KafkaBroker.create().start()) {
      String topic = KafkaBroker.uniqueName("orders");
      broker.createTopic(topic, 1);

      Path bad = Files.writeString(dir.resolve("bad.jsonl"), """
          {"orderId":"o-1","sku":"apple","quantity":2}

          {"orderId":"o-2","quantity":1}
          """);
      refused("produce: line 3 of --values-file has no value at --key-field /sku (absent, null, empty, an object "
          + "or an array): {\"orderId\":\"o-2\",\"quantity\":1}", "--bootstrap", broker.bootstrapServers(),
          "--topic", topic, "--values-file", bad.toString(), "--key-field", "/sku");
      assertEquals(0, records(broker, topic, 0).size(), "a refused file sends nothing");

      java.io.PrintStream out = System.out;
      java.io.ByteArrayOutputStream printed = new java.io.ByteArrayOutputStream();
      System.setOut(new java.io.PrintStream(printed, true, StandardCharsets.UTF_8));
      try {
        assertEquals(0, Main.run(new String[] {"produce", "--bootstrap", broker.bootstrapServers(), "--topic", topic,
            "--values-file", file.toString(), "--key-field", "/sku", "--dup-rate", "1", "--print-offsets"}));
      } finally {
        System.setOut(out);
      }
      assertEquals("partition 0 last offset 5 (read your writes: ?after=0:5)",
          printed.toString(StandardCharsets.UTF_8).lines().reduce((a, b) -> b).orElse(""),
          "six records at offsets 0 to 5: " + printed);

      List<ConsumerRecord<String, String>> got = records(broker, topic, 6);
      List<String> seen = new ArrayList<>();
      for (ConsumerRecord<String, String> r : got) {
        seen.add(r.key() + " " + r.value());
      }
      String o1 = "apple {\"orderId\":\"o-1\",\"sku\":\"apple\",\"quantity\":2}";
      String o2 = "pear {\"orderId\":\"o-2\",\"sku\":\"pear\",\"quantity\":1}";
      String o3 = "apple {\"orderId\":\"o-3\",\"sku\":\"apple\",\"quantity\":5}";
      assertEquals(List.of(o1, o1, o2, o2, o3, o3), seen, "each line once and its re-send, in the file's order");
    }
  }

  @Test
  void aKeyFieldWithoutAValuesFileIsRefused() {
    refused("produce: --key-field applies to --values-file only (payments are keyed by merchant)",
        "--bootstrap", "127.0.0.1:1", "--key-field", "/sku");
    refused("produce: --values-file /no/such/file: no such file", "--bootstrap", "127.0.0.1:1", "--values-file",
        "/no/such/file");
    refused("produce: --key-field sku: not a JSON pointer (RFC 6901: /field, /nested/field): Invalid input: JSON "
        + "Pointer expression must start with '/': \"sku\"", "--bootstrap", "127.0.0.1:1", "--values-file", "-",
        "--key-field", "sku");
  }

  private static void refused(String message, String... args) {
    assertEquals(message, assertThrows(Flags.UsageError.class, () -> new ProduceCommand().run(args)).getMessage());
  }

  /** The records of partition 0 of {@code topic}, read to its end (waiting for at least {@code atLeast}). */
  private static List<ConsumerRecord<String, String>> records(KafkaBroker broker, String topic, int atLeast) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p, new StringDeserializer(),
        new StringDeserializer())) {
      TopicPartition tp = new TopicPartition(topic, 0);
      consumer.assign(List.of(tp));
      consumer.seekToBeginning(List.of(tp));
      long end = consumer.endOffsets(List.of(tp)).get(tp);
      List<ConsumerRecord<String, String>> out = new ArrayList<>();
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while ((out.size() < end || out.size() < atLeast) && System.nanoTime() < deadline) {
        consumer.poll(Duration.ofMillis(200)).forEach(out::add);
      }
      return out;
    }
  }
}
