package io.fencepost.tools;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongConsumer;

import com.fasterxml.jackson.core.JsonPointer;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Sends the lines of a file (or standard input) as record values, one record per non-blank line, in
 * the file's order, with a seeded rate of re-sends at new offsets (what a producer does after a
 * timed-out attempt). The record key is the text of a field of each JSON line when a pointer is
 * given, else none.
 */
final class LinesProducer {

  private final String bootstrap;
  private final String topic;
  private final Optional<JsonPointer> keyField;
  private final double duplicateRate;
  private final long seed;
  private final ObjectMapper mapper = new ObjectMapper();

  LinesProducer(String bootstrap, String topic, Optional<String> keyPointer, double duplicateRate, long seed) {
    this.bootstrap = bootstrap;
    this.topic = topic;
    this.keyField = keyPointer.map(LinesProducer::pointer);
    this.duplicateRate = duplicateRate;
    this.seed = seed;
  }

  private static JsonPointer pointer(String text) {
    JsonPointer at;
    try {
      at = JsonPointer.compile(text);
    } catch (IllegalArgumentException e) {
      throw new Flags.UsageError("produce: --key-field " + text + ": not a JSON pointer (RFC 6901: /field, "
          + "/nested/field): " + e.getMessage());
    }
    if (at.matches()) {
      throw new Flags.UsageError("produce: --key-field " + text + " names the whole value; name a field, e.g. /sku");
    }
    return at;
  }

  /** A non-blank line of the file and its number there (from 1). */
  record Line(int number, String text) {
  }

  /** The non-blank lines of {@code file}, or of standard input for {@code -}. */
  static List<Line> read(String file) {
    try (BufferedReader in = file.equals("-")
        ? new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))
        : Files.newBufferedReader(Path.of(file), StandardCharsets.UTF_8)) {
      List<Line> lines = new ArrayList<>();
      int number = 0;
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        number++;
        if (!line.isBlank()) {
          lines.add(new Line(number, line));
        }
      }
      return lines;
    } catch (NoSuchFileException e) {
      throw new Flags.UsageError("produce: --values-file " + file + ": no such file");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + file, e);
    }
  }

  /** The record key of {@code line}; a line that is not JSON, or lacks the field, is refused. */
  String key(Line line) {
    if (keyField.isEmpty()) {
      return null;
    }
    JsonNode field;
    try {
      field = mapper.readTree(line.text()).at(keyField.get());
    } catch (JsonProcessingException e) {
      throw new Flags.UsageError("produce: line " + line.number() + " of --values-file is not JSON, so --key-field "
          + keyField.get() + " cannot be read from it: " + e.getOriginalMessage());
    }
    if (!field.isValueNode() || field.isNull() || field.asText().isEmpty()) {
      throw new Flags.UsageError("produce: line " + line.number() + " of --values-file has no value at "
          + "--key-field " + keyField.get() + " (absent, null, empty, an object or an array): " + line.text());
    }
    return field.asText();
  }

  /**
   * Sends {@code lines} at about {@code perSecond} per second (0: as fast as possible); {@code onEach}
   * runs after each line with how many were sent.
   */
  PaymentProducer.Summary run(List<Line> lines, int perSecond, LongConsumer onEach) {
    List<String> keys = new ArrayList<>(lines.size());
    for (Line line : lines) {
      keys.add(key(line));   // every line checked before the first is sent
    }
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    Random random = new Random(seed);
    AtomicReference<Exception> failure = new AtomicReference<>();
    Map<Integer, Long> lastOffsets = new ConcurrentSkipListMap<>();
    long duplicates = 0;
    long start = System.nanoTime();
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(),
        new StringSerializer())) {
      for (int i = 0; i < lines.size(); i++) {
        ProducerRecord<String, String> record = new ProducerRecord<>(topic, keys.get(i), lines.get(i).text());
        producer.send(record, PaymentProducer.acknowledged(failure, lastOffsets, () -> { }));
        if (random.nextDouble() < duplicateRate) {
          producer.send(record, PaymentProducer.acknowledged(failure, lastOffsets, () -> { }));   // the re-send
          duplicates++;
        }
        onEach.accept(i + 1);
        PaymentProducer.pace(start, i + 1, perSecond);
        if (failure.get() != null) {
          throw new IllegalStateException("producing to " + topic + " failed: " + failure.get(), failure.get());
        }
      }
      producer.flush();
    }
    if (failure.get() != null) {
      throw new IllegalStateException("producing to " + topic + " failed: " + failure.get(), failure.get());
    }
    return new PaymentProducer.Summary(lines.size(), duplicates, (System.nanoTime() - start) / 1e9,
        Map.copyOf(lastOffsets));
  }
}
