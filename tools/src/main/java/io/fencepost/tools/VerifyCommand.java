package io.fencepost.tools;

import java.time.Duration;

import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.tools.Reconciliation;

/** {@code fencepost verify}: reconciles the input topic against the ledger's journal. */
final class VerifyCommand implements Main.Command {

  @Override
  public int run(String[] args) {
    Flags flags = new Flags("verify")
        .value("bootstrap", "host:port", "FENCEPOST_BOOTSTRAP", null, "Kafka bootstrap servers")
        .value("topic", "name", "FENCEPOST_TOPIC", "payments", "input topic")
        .value("group", "id", "FENCEPOST_GROUP", "ledger", "the pipeline's consumer group")
        .value("jdbc-url", "url", "FENCEPOST_JDBC_URL", null, "journal database")
        .value("jdbc-user", "user", "FENCEPOST_JDBC_USER", "postgres", "journal database user")
        .value("jdbc-password", "password", "FENCEPOST_JDBC_PASSWORD", "", "journal database password")
        .value("bucket-seconds", "n", null, "60", "width of the report's time buckets")
        .bool("json", "print the report as JSON");
    if (!flags.parse(args)) {
      return 0;
    }
    JournalDatabase db = JournalDatabase.of(flags.require("jdbc-url"), flags.require("jdbc-user"),
        flags.require("jdbc-password"));
    Reconciliation.Report report = LedgerReconciliation.of(flags.require("bootstrap"), flags.require("topic"),
            flags.require("group"), db)
        .bucket(Duration.ofSeconds(flags.intValue("bucket-seconds", 1, 86_400)))
        .run();
    System.out.println(flags.isSet("json") ? report.toJson() : report.render());
    return report.ok() ? 0 : 1;
  }

  @Override
  public String summary() {
    return "reconcile the input topic against the journal: missing and doubled effects (exit 1 if any)";
  }
}
