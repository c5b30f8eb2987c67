package io.fencepost.tools;

import java.util.Arrays;

import io.fencepost.kafka.DeadLetterReplay;

/** {@code fencepost dlq replay}: re-injects dead letters into their source topic. */
final class DlqCommand implements Main.Command {

  @Override
  public int run(String[] args) {
    if (args.length == 0 || !args[0].equals("replay")) {
      if (args.length > 0 && (args[0].equals("--help") || args[0].equals("-h"))) {
        System.out.println("usage: fencepost dlq replay [flags]   (fencepost dlq replay --help)");
        return 0;
      }
      throw new Flags.UsageError("dlq: unknown subcommand [" + (args.length == 0 ? "" : args[0]) + "]; accepted: replay");
    }
    Flags flags = new Flags("dlq replay")
        .value("bootstrap", "host:port", "FENCEPOST_BOOTSTRAP", null, "Kafka bootstrap servers")
        .value("topic", "name", "FENCEPOST_TOPIC", "payments", "source topic whose dead letters to replay")
        .value("suffix", "text", null, ".dlt", "dead-letter topic suffix (fencepost.pipeline.dead-letter.topic-suffix)")
        .value("key", "record-key", null, null, "only dead letters with this record key")
        .value("partition", "n", null, null, "only dead letters of this source partition (with --from-offset/--to-offset)")
        .value("from-offset", "n", null, "0", "lowest original offset to replay (needs --partition)")
        .value("to-offset", "n", null, String.valueOf(Integer.MAX_VALUE), "highest original offset to replay (needs --partition)")
        .value("client-config", "file", "FENCEPOST_CLIENT_CONFIG", null,
            "Kafka client properties file (security.protocol, sasl.*, ssl.*), as Kafka's tools' --command-config")
        .bool("dry-run", "count what would be replayed, send nothing");
    String[] rest = Arrays.copyOfRange(args, 1, args.length);
    if (!flags.parse(rest)) {
      return 0;
    }
    DeadLetterReplay replay = DeadLetterReplay.from(flags.require("bootstrap"),
        flags.require("topic") + flags.require("suffix"))
        .withKafkaClients(ToolInputs.clientConfig(flags.get("client-config")));
    flags.get("key").ifPresent(replay::withKey);
    if (flags.get("partition").isPresent()) {
      replay.withOffsets(flags.intValue("partition", 0, Integer.MAX_VALUE), flags.intValue("from-offset", 0,
          Integer.MAX_VALUE), flags.intValue("to-offset", 0, Integer.MAX_VALUE));
    } else if (flags.isSet("from-offset") || flags.isSet("to-offset")) {
      throw new Flags.UsageError("dlq replay: --from-offset and --to-offset need --partition");
    }
    if (flags.isSet("dry-run")) {
      replay.dryRun();
    }
    DeadLetterReplay.Result r = replay.run();
    System.out.printf("scanned %,d dead letters, %,d matched, %,d replayed, %,d duplicates skipped%s%n",
        r.scanned(), r.matched(), r.replayed(), r.duplicates(), flags.isSet("dry-run") ? " (dry run)" : "");
    return 0;
  }

  @Override
  public String summary() {
    return "replay dead letters into their source topic: dlq replay [--key k | --partition p --from-offset a --to-offset b]";
  }
}
