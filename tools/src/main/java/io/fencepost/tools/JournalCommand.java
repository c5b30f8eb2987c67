package io.fencepost.tools;

import java.util.Arrays;
import java.util.List;

import io.fencepost.jdbc.JournalDatabase;
import io.fencepost.jdbc.JournalAdoption;
import io.fencepost.jdbc.JournalMove;

/**
 * {@code fencepost journal move}: adds journal databases to a deployment, offline, moving the
 * histories of the partitions that map to other databases in the longer list ({@link JournalMove};
 * docs/deployment.md, Scaling the journal). {@code fencepost journal adopt}: makes a restored copy of
 * one of the deployment's databases that database ({@link JournalAdoption}).
 */
final class JournalCommand implements Main.Command {

  @Override
  public int run(String[] args) {
    if (args.length > 0 && args[0].equals("adopt")) {
      return adopt(Arrays.copyOfRange(args, 1, args.length));
    }
    if (args.length == 0 || !args[0].equals("move")) {
      if (args.length > 0 && (args[0].equals("--help") || args[0].equals("-h"))) {
        System.out.println("usage: fencepost journal move [flags]   (fencepost journal move --help)");
        System.out.println("       fencepost journal adopt [flags]  (fencepost journal adopt --help)");
        return 0;
      }
      throw new Flags.UsageError("journal: unknown subcommand [" + (args.length == 0 ? "" : args[0])
          + "]; accepted: move, adopt");
    }
    Flags flags = ToolInputs.journalFlags(new Flags("journal move")
            .value("deployment", "name", "FENCEPOST_DEPLOYMENT", null,
                "the deployment's name, as its databases record it (the ledger example: fencepost-ledger)"),
            "a database the deployment uses now, in its order")
        .repeatable("add-jdbc-url", "url", null, null, "a database to add (empty, schema installed or not), in the "
            + "order it will have after the current ones; same user and password");
    if (!flags.parse(Arrays.copyOfRange(args, 1, args.length))) {
      return 0;
    }
    List<JournalDatabase> current = ToolInputs.journals(flags);
    List<String> addedUrls = flags.all("add-jdbc-url");
    if (addedUrls.isEmpty()) {
      throw new Flags.UsageError("journal move: give at least one --add-jdbc-url (the databases to add)");
    }
    List<JournalDatabase> added = addedUrls.stream()
        .map(url -> JournalDatabase.of(url, flags.require("jdbc-user"), flags.require("jdbc-password"))).toList();
    added.forEach(JournalDatabase::installSchemaIfMissing);
    JournalMove.addDatabases(flags.require("deployment"), current, added,
        line -> {
          System.out.println(line);
          System.out.flush();
        });
    return 0;
  }

  /** {@code journal adopt}: each database given is, from now on, the one its identity says it is. */
  private static int adopt(String[] args) {
    Flags flags = ToolInputs.journalFlags(new Flags("journal adopt"), "a database of the deployment, the copies "
        + "refused at start in place of their originals included (only where the original is gone for good; stop "
        + "every node first)");
    if (!flags.parse(args)) {
      return 0;
    }
    JournalAdoption.adoptCopies(ToolInputs.journals(flags), line -> {
      System.out.println(line);
      System.out.flush();
    });
    return 0;
  }

  @Override
  public String summary() {
    return "add journal databases to a stopped deployment, moving the partitions' histories that map to them "
        + "(move); make a restored copy of a database that database (adopt)";
  }
}
