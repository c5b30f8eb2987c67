package io.fencepost.tools;

import java.util.List;

/**
 * {@code fencepost produce}: the payments load generator, or the lines of a file of your own records
 * ({@code --values-file}).
 */
final class ProduceCommand implements Main.Command {

  @Override
  public int run(String[] args) {
    Flags flags = new Flags("produce")
        .value("bootstrap", "host:port", "FENCEPOST_BOOTSTRAP", null, "Kafka bootstrap servers")
        .value("topic", "name", "FENCEPOST_TOPIC", "payments", "topic to write")
        .value("count", "n", null, "10000", "distinct payments to send")
        .value("rate", "per-second", null, "0", "distinct payments per second (re-sends come on top), 0 for as fast as possible")
        .value("merchants", "n", null, "100", "number of merchants (record keys)")
        .value("dup-rate", "fraction", null, "0.01", "fraction of payments re-sent at a new offset (0..1)")
        .value("skew", "exponent", null, "0", "merchant skew: 0 uniform, 1.0 Zipf-like (hot merchants, hot partitions)")
        .value("seed", "n", null, "1", "random seed; the same seed sends the same payments")
        .value("values-file", "file", null, null, "send each non-blank line of this file (- for standard input) "
            + "as a record value instead of payments, in order, with --dup-rate re-sends; --count, --merchants "
            + "and --skew do not apply")
        .value("key-field", "/POINTER", null, null, "with --values-file: the record key is this field of each "
            + "line's JSON (RFC 6901, e.g. /sku); default no key")
        .bool("print-offsets", "print the last offset written to each partition (a query's ?after=partition:offset "
            + "reads its own writes with it)");
    if (!flags.parse(args)) {
      return 0;
    }
    if (flags.isSet("values-file")) {
      return sendLines(flags);
    }
    if (flags.isSet("key-field")) {
      throw new Flags.UsageError("produce: --key-field applies to --values-file only (payments are keyed by merchant)");
    }
    int count = flags.intValue("count", 1, Integer.MAX_VALUE);
    PaymentProducer producer = new PaymentProducer(flags.require("bootstrap"), flags.require("topic"),
        flags.intValue("merchants", 1, 10_000_000), flags.doubleValue("dup-rate", 0, 1),
        flags.intValue("seed", 0, Integer.MAX_VALUE), flags.doubleValue("skew", 0, 10));
    PaymentProducer.Summary s = producer.run(count, flags.intValue("rate", 0, 10_000_000), i -> {
      if (i % 1000 == 0 || i == count) {
        PaymentProducer.progress(System.err, "produce", i, count);
      }
    });
    System.err.println();
    System.out.printf("produced %,d payments and %,d producer duplicates in %.1f s%n", s.payments(), s.duplicates(),
        s.seconds());
    printOffsets(flags, s);
    return 0;
  }

  private static int sendLines(Flags flags) {
    LinesProducer producer = new LinesProducer(flags.require("bootstrap"), flags.require("topic"),
        flags.get("key-field"), flags.doubleValue("dup-rate", 0, 1), flags.intValue("seed", 0, Integer.MAX_VALUE));
    List<LinesProducer.Line> lines = LinesProducer.read(flags.require("values-file"));
    int total = lines.size();
    PaymentProducer.Summary s = producer.run(lines, flags.intValue("rate", 0, 10_000_000), i -> {
      if (i % 1000 == 0 || i == total) {
        PaymentProducer.progress(System.err, "produce", i, total);
      }
    });
    System.err.println();
    System.out.printf("produced %,d records and %,d producer duplicates in %.1f s%n", s.payments(), s.duplicates(),
        s.seconds());
    printOffsets(flags, s);
    return 0;
  }

  /** With {@code --print-offsets}: one line per partition written, {@code partition <p> last offset <o>}. */
  private static void printOffsets(Flags flags, PaymentProducer.Summary s) {
    if (flags.isSet("print-offsets")) {
      s.lastOffsets().entrySet().stream().sorted(java.util.Map.Entry.comparingByKey()).forEach(e ->
          System.out.printf("partition %d last offset %d (read your writes: ?after=%d:%d)%n", e.getKey(), e.getValue(),
              e.getKey(), e.getValue()));
    }
  }

  @Override
  public String summary() {
    return "send payments with unique ids and a producer-duplicate rate, or the lines of a file as records";
  }
}
