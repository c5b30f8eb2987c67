package io.fencepost.tools;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;

import com.fasterxml.jackson.core.JsonPointer;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fencepost.OutboxRecord;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.reconciliation.NoInputKeysException;
import io.fencepost.reconciliation.Reconciliation;
import io.fencepost.reconciliation.ReconciliationReport;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

/**
 * {@code fencepost verify}: reconciles an input topic against its pipeline's journal. For the example
 * ledger by default; for any pipeline with {@code --business-key} (how its actors key records) and
 * {@code --classpath} (the service's jars, to read its journal).
 */
final class VerifyCommand implements Main.Command {

  @Override
  public int run(String[] args) {
    Flags flags = ToolInputs.journalFlags(new Flags("verify")
        .value("bootstrap", "host:port", "FENCEPOST_BOOTSTRAP", null, "Kafka bootstrap servers")
        .value("topic", "name", "FENCEPOST_TOPIC", "payments", "input topic")
        .value("group", "id", "FENCEPOST_GROUP", "ledger", "the pipeline's consumer group"), "journal database")
        .value("bucket-seconds", "n", null, "60", "width of the report's time buckets")
        .value("business-key", "how", "FENCEPOST_BUSINESS_KEY", "ledger",
            "the pipeline's business key: ledger (the example: idempotency-key header, else the payment id), "
                + "default (PartitionActor's default: the idempotency-key header, else fencepost.outbox-id), "
                + "default:NAME (the same with key-window.header = NAME), header:NAME (only that header), "
                + "record-key (the record key's text), json:/POINTER (a field of a JSON value, RFC 6901, e.g. "
                + "json:/orderId) or class:NAME (a java.util.function.Function<ConsumerRecord<byte[], byte[]>, "
                + "Optional<String>> with a public no-argument constructor, from --classpath); records without one "
                + "are checked by offset")
        .value("client-config", "file", "FENCEPOST_CLIENT_CONFIG", null,
            "Kafka client properties file (security.protocol, sasl.*, ssl.*), as Kafka's tools' --command-config")
        .value("classpath", "jars", "FENCEPOST_CLASSPATH", null,
            "the service's jars or class directories, separated by '" + File.pathSeparator
                + "' (the journal holds its events)")
        .value("outbox-topic", "name", "FENCEPOST_OUTBOX_TOPIC", null,
            "also reconcile this outbox topic, read read_committed, with the outbox records the journal holds for "
                + "it: missing records fail the verdict, and copies too with --outbox-delivery exactly-once")
        .value("outbox-delivery", "mode", "FENCEPOST_OUTBOX_DELIVERY", "at-least-once",
            "the relay's outbox.delivery: exactly-once (copies fail the verdict) or at-least-once (copies are "
                + "counted, dropped downstream by fencepost.outbox-id)")
        .bool("json", "print the report as JSON");
    if (!flags.parse(args)) {
      return 0;
    }
    List<JournalDatabase> db = ToolInputs.journals(flags);
    String how = flags.require("business-key");
    ClassLoader classLoader = ToolInputs.classLoader(flags.get("classpath"));
    Reconciliation reconciliation;
    if (how.equals("ledger")) {
      reconciliation = LedgerReconciliation.of(flags.require("bootstrap"), flags.require("topic"),
          flags.require("group"), db);
    } else {
      reconciliation = Reconciliation.of(flags.require("bootstrap"), flags.require("topic"), flags.require("group"),
          db).inputKeys(keys(how, classLoader)).appliedKeysFromJournal();
    }
    String delivery = flags.require("outbox-delivery");
    if (!List.of("exactly-once", "at-least-once").contains(delivery)) {
      throw new Flags.UsageError("verify: --outbox-delivery must be exactly-once or at-least-once, was [" + delivery
          + "]");
    }
    Optional<String> outboxTopic = flags.get("outbox-topic");
    if (outboxTopic.isPresent()) {
      reconciliation = reconciliation.outboxTopic(outboxTopic.get(), delivery.equals("exactly-once"));
    }
    ReconciliationReport report;
    try {
      report = reconciliation
          .classLoader(classLoader)
          .kafkaClients(ToolInputs.clientConfig(flags.get("client-config")))
          .bucket(Duration.ofSeconds(flags.intValue("bucket-seconds", 1, 86_400)))
          .run();
    } catch (NoInputKeysException e) {
      System.err.printf("fencepost verify: none of the %,d records of topic [%s] has a business key by "
          + "--business-key %s, while the journal holds %,d business keys: the option does not say how this "
          + "pipeline's actors key records (header:NAME, record-key, json:/POINTER for a field of a JSON value, "
          + "class:NAME for anything else); nothing verified%n", e.records(), flags.require("topic"), how,
          e.journaledKeys());
      return 2;
    }
    System.out.println(flags.isSet("json") ? report.toJson() : report.render());
    return report.ok() ? 0 : 1;
  }

  /** The input keys {@code --business-key} names; an empty value is no key, as for the actors. */
  static Function<ConsumerRecord<byte[], byte[]>, Optional<String>> keys(String how) {
    return keys(how, VerifyCommand.class.getClassLoader());
  }

  /** As {@link #keys(String)}, a {@code class:} form loaded from {@code classLoader}. */
  static Function<ConsumerRecord<byte[], byte[]>, Optional<String>> keys(String how, ClassLoader classLoader) {
    if (how.startsWith("json:")) {
      return jsonField(how.substring("json:".length()));
    }
    if (how.startsWith("class:") && how.length() > "class:".length()) {
      return keyClass(how.substring("class:".length()), classLoader);
    }
    if (how.equals("record-key")) {
      return r -> r.key() == null || r.key().length == 0 ? Optional.empty()
          : Optional.of(new String(r.key(), StandardCharsets.UTF_8));
    }
    if (how.startsWith("header:") && how.length() > "header:".length()) {
      String name = how.substring("header:".length());
      return r -> header(r, name);
    }
    if (how.equals("default") || how.startsWith("default:") && how.length() > "default:".length()) {
      String name = how.equals("default") ? "idempotency-key" : how.substring("default:".length());
      return r -> header(r, name).or(() -> header(r, OutboxRecord.ID_HEADER));
    }
    throw new Flags.UsageError("verify: --business-key must be ledger, default, default:NAME, header:NAME, "
        + "record-key, json:/POINTER or class:NAME, was [" + how + "]");
  }

  /**
   * The text of the field {@code pointer} names in a JSON value (a number or boolean as written); no
   * key when the value is not JSON or the field is absent, null, empty, an object or an array.
   */
  private static Function<ConsumerRecord<byte[], byte[]>, Optional<String>> jsonField(String pointer) {
    JsonPointer at;
    try {
      at = JsonPointer.compile(pointer);
    } catch (IllegalArgumentException e) {
      throw new Flags.UsageError("verify: --business-key json:" + pointer + ": not a JSON pointer (RFC 6901: "
          + "/field, /nested/field, /array/0): " + e.getMessage());
    }
    if (at.matches()) {
      throw new Flags.UsageError("verify: --business-key json:" + pointer + " names the whole value; name a field, "
          + "e.g. json:/orderId");
    }
    ObjectMapper mapper = new ObjectMapper();
    return r -> {
      if (r.value() == null) {
        return Optional.empty();
      }
      try {
        JsonNode node = mapper.readTree(r.value()).at(at);
        String text = node.isValueNode() && !node.isNull() ? node.asText() : "";
        return text.isEmpty() ? Optional.empty() : Optional.of(text);
      } catch (IOException notJson) {
        return Optional.empty();
      }
    };
  }

  /** A key function of the service's own, by class name: its result an {@code Optional} or a string (null: none). */
  @SuppressWarnings("unchecked")
  private static Function<ConsumerRecord<byte[], byte[]>, Optional<String>> keyClass(String name, ClassLoader loader) {
    Object function;
    try {
      function = Class.forName(name, true, loader).getConstructor().newInstance();
    } catch (ClassNotFoundException e) {
      throw new Flags.UsageError("verify: --business-key class:" + name + ": no such class on the classpath (put the "
          + "service's jar on --classpath)");
    } catch (ReflectiveOperationException | LinkageError e) {
      throw new Flags.UsageError("verify: --business-key class:" + name + ": cannot be created with a public "
          + "no-argument constructor: " + e);
    }
    if (!(function instanceof Function<?, ?>)) {
      throw new Flags.UsageError("verify: --business-key class:" + name + " must implement java.util.function."
          + "Function<ConsumerRecord<byte[], byte[]>, Optional<String>>, is a " + function.getClass().getName());
    }
    Function<Object, Object> keys = (Function<Object, Object>) function;
    return r -> {
      Object key = keys.apply(r);
      String text = key instanceof Optional<?> o ? o.map(String::valueOf).orElse("") : key == null ? "" : key.toString();
      return text.isEmpty() ? Optional.empty() : Optional.of(text);
    };
  }

  private static Optional<String> header(ConsumerRecord<byte[], byte[]> r, String name) {
    Header h = r.headers().lastHeader(name);
    String value = h == null || h.value() == null ? "" : new String(h.value(), StandardCharsets.UTF_8);
    return value.isEmpty() ? Optional.empty() : Optional.of(value);
  }

  @Override
  public String summary() {
    return "reconcile the input topic against the journal: missing and doubled effects (exit 1 if any)";
  }
}
