package io.fencepost.tools;

/** {@code fencepost produce}: the payments load generator. */
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
        .value("seed", "n", null, "1", "random seed; the same seed sends the same payments");
    if (!flags.parse(args)) {
      return 0;
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
    return 0;
  }

  @Override
  public String summary() {
    return "send payments with unique ids, per-merchant sequences and a producer-duplicate rate";
  }
}
