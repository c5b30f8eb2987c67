package io.fencepost.tools;

import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.fencepost.OffsetReset;
import io.fencepost.PartitionActorSettings;
import io.fencepost.PartitionId;
import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.jdbc.JournalDatabases;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * {@code fencepost offsets reset}: moves a partition's stored next offset in the journal (a halted
 * partition whose stored offset lies above its log's end; docs/operations.md).
 */
final class OffsetsCommand implements Main.Command {

  @Override
  public int run(String[] args) throws Exception {
    if (args.length == 0 || !args[0].equals("reset")) {
      if (args.length > 0 && (args[0].equals("--help") || args[0].equals("-h"))) {
        System.out.println("usage: fencepost offsets reset [flags]   (fencepost offsets reset --help)");
        return 0;
      }
      throw new Flags.UsageError("offsets: unknown subcommand [" + (args.length == 0 ? "" : args[0])
          + "]; accepted: reset");
    }
    Flags flags = ToolInputs.journalFlags(new Flags("offsets reset"), "journal database (jdbc:postgresql:... or "
        + "jdbc:h2:...); required: a reset never guesses its journal")
        .value("group", "id", "FENCEPOST_GROUP", "ledger", "consumer group of the pipeline")
        .value("topic", "name", "FENCEPOST_TOPIC", "payments", "input topic")
        .value("partition", "n", null, null, "the partition to reset")
        .value("to", "earliest|latest|offset", null, null,
            "the new stored next offset: the log's start or end now (needs --bootstrap), or a number")
        .value("bootstrap", "host:port", "FENCEPOST_BOOTSTRAP", null, "Kafka bootstrap servers (for earliest/latest)")
        .value("classpath", "jars", "FENCEPOST_CLASSPATH", null,
            "the service's jars or class directories (its events and state are read to recover the partition)");
    if (!flags.parse(Arrays.copyOfRange(args, 1, args.length))) {
      return 0;
    }
    PartitionId partition = new PartitionId(flags.require("group"), flags.require("topic"),
        flags.intValue("partition", 0, Integer.MAX_VALUE));
    long to = target(flags, partition);
    // Of several databases, the one that holds the partition's history (as the databases record it).
    JournalDatabase journal = JournalDatabases.asRecorded(ToolInputs.journals(flags)).databaseOf(partition);
    ActorSystem<Void> system = journal.localSystem("fencepost-offsets",
        ToolInputs.classLoader(flags.get("classpath")));
    try {
      OffsetReset.Result r = OffsetReset.to(system, partition, to, PartitionActorSettings.create(system),
          Duration.ofSeconds(60)).toCompletableFuture().get(90, TimeUnit.SECONDS);
      System.out.printf("%s: stored next offset %s -> %d%s%n", partition.shortName(),
          r.before() < 0 ? "none" : Long.toString(r.before()), r.after(),
          r.before() == r.after() ? " (unchanged, nothing written)"
              : "; restart the node that holds the partition (or the pipeline) so that it is assigned again");
      return 0;
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
  }

  private static long target(Flags flags, PartitionId partition) throws Exception {
    String to = flags.require("to");
    if (!to.equals("earliest") && !to.equals("latest")) {
      try {
        long offset = Long.parseLong(to);
        if (offset >= 0) {
          return offset;
        }
      } catch (NumberFormatException e) {
        // below
      }
      throw new Flags.UsageError("offsets reset: --to must be earliest, latest or an offset >= 0, was [" + to + "]");
    }
    TopicPartition tp = new TopicPartition(partition.topic(), partition.partition());
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", flags.require("bootstrap")))) {
      return admin.listOffsets(Map.of(tp, to.equals("earliest") ? OffsetSpec.earliest() : OffsetSpec.latest()))
          .partitionResult(tp).get(30, TimeUnit.SECONDS).offset();
    }
  }

  @Override
  public String summary() {
    return "move a partition's stored offset: offsets reset --partition p --to earliest|latest|offset";
  }
}
