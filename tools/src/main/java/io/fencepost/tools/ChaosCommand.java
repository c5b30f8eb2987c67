package io.fencepost.tools;

import java.nio.file.Path;
import java.util.List;

/** {@code fencepost chaos}: a seeded fault campaign ending in a reconciliation verdict. */
final class ChaosCommand implements Main.Command {

  @Override
  public int run(String[] args) throws Exception {
    Flags flags = new Flags("chaos")
        .value("seed", "n", null, "1", "random seed: the same seed replays the same campaign")
        .value("nodes", "n", null, "3", "ledger nodes")
        .value("partitions", "n", null, "12", "partitions of the payments topic")
        .value("payments", "n", null, "100000", "distinct payments to send")
        .value("rate", "per-second", null, "1500", "payments per second")
        .value("dup-rate", "fraction", null, "0.01", "producer-duplicate rate")
        .value("kills", "n", null, "3", "SIGKILLs of a node")
        .value("zombies", "n", null, "1", "SIGSTOP/SIGCONT of a node past its session timeout")
        .value("rebalances", "n", null, "1", "a node added, then removed")
        .value("broker-restarts", "n", null, "1", "broker restarts")
        .value("postgres-stops", "n", null, "0", "PostgreSQL stopped for 10 s (with several databases: one of them)")
        .value("databases", "n", null, "1", "journal databases, each on a PostgreSQL server of its own; the "
            + "partitions' histories are spread over them")
        .value("outbox-delivery", "mode", null, null, "also announce every credit on topic credited through the "
            + "outbox, exactly-once or at-least-once, and count what a read_committed reader sees there")
        .value("dir", "path", null, "fencepost-chaos", "working directory (wiped first)")
        .bool("json", "also print the reconciliation report as JSON");
    if (!flags.parse(args)) {
      return 0;
    }
    ChaosCampaign.Plan plan = new ChaosCampaign.Plan(flags.intValue("seed", 0, Integer.MAX_VALUE),
        flags.intValue("nodes", 3, 9), flags.intValue("partitions", 1, 1000),
        flags.intValue("payments", 100, Integer.MAX_VALUE), flags.intValue("rate", 1, 1_000_000),
        flags.doubleValue("dup-rate", 0, 1), flags.intValue("kills", 0, 1000), flags.intValue("zombies", 0, 1000),
        flags.intValue("rebalances", 0, 1000), flags.intValue("broker-restarts", 0, 1000),
        flags.intValue("postgres-stops", 0, 1000), flags.intValue("databases", 1, 8), Path.of(flags.require("dir")).toAbsolutePath(),
        flags.get("outbox-delivery"));
    plan.outboxDelivery().filter(d -> !List.of("exactly-once", "at-least-once").contains(d)).ifPresent(d -> {
      throw new IllegalArgumentException("--outbox-delivery must be exactly-once or at-least-once, was [" + d + "]");
    });
    ChaosCampaign.Outcome outcome = new ChaosCampaign(plan, System.out).run();
    System.out.print(outcome.report().render());
    System.out.println();
    if (flags.isSet("json")) {
      System.out.println(outcome.report().toJson());
    }
    System.out.println(outcome.verdict());
    return outcome.passed() ? 0 : 1;
  }

  @Override
  public String summary() {
    return "seeded fault campaign (SIGKILL, zombie, rebalance, broker restart, PostgreSQL stop), then the verdict";
  }
}
