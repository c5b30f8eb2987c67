package io.fencepost.tools;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;

import io.fencepost.errors.JournalLayoutException;
import io.fencepost.errors.SettingsException;

/**
 * The {@code fencepost} command line: {@code java -jar tools/target/fencepost.jar <command>}.
 * Each command prints its own {@code --help}; a bad flag prints one line naming it and exits 2.
 */
public final class Main {

  /** A subcommand: runs with its arguments and returns the process exit code. */
  interface Command {
    int run(String[] args) throws Exception;

    String summary();
  }

  private static final Map<String, Command> COMMANDS = new TreeMap<>();

  static {
    COMMANDS.put("broker", new BrokerCommand());
    COMMANDS.put("ledger", new LedgerCommand());
    COMMANDS.put("demo", new DemoCommand());
    COMMANDS.put("produce", new ProduceCommand());
    COMMANDS.put("verify", new VerifyCommand());
    COMMANDS.put("dlq", new DlqCommand());
    COMMANDS.put("offsets", new OffsetsCommand());
    COMMANDS.put("journal", new JournalCommand());
    COMMANDS.put("chaos", new ChaosCommand());
    COMMANDS.put("status", new StatusCommand());
  }

  private Main() {
  }

  public static void main(String[] args) {
    System.exit(runReporting(args, System.err));
  }

  /**
   * {@link #run}, with a command's failure reported on {@code err} and exit code 1: a command that
   * failed after starting threads (an actor system, a Kafka client) must still end the process. A
   * refused setting or argument is one line (it names the key or input and the fix); anything else
   * comes with its stack trace.
   */
  static int runReporting(String[] args, PrintStream err) {
    try {
      return run(args);
    } catch (SettingsException | JournalLayoutException | IllegalArgumentException e) {
      err.println("fencepost " + args[0] + ": " + e.getMessage());
      return 1;
    } catch (Exception | Error e) {
      err.println("fencepost " + (args.length > 0 ? args[0] : "") + " failed: " + e);
      e.printStackTrace(err);
      return 1;
    }
  }

  static int run(String[] args) throws Exception {
    if (args.length == 0 || args[0].equals("--help") || args[0].equals("-h") || args[0].equals("help")) {
      printUsage();
      return args.length == 0 ? 2 : 0;
    }
    Command command = COMMANDS.get(args[0]);
    if (command == null) {
      System.err.println("fencepost: unknown command [" + args[0] + "]; accepted: " + String.join(", ", COMMANDS.keySet()));
      return 2;
    }
    try {
      return command.run(Arrays.copyOfRange(args, 1, args.length));
    } catch (Flags.UsageError e) {
      System.err.println(e.getMessage());
      return 2;
    }
  }

  private static void printUsage() {
    System.out.println("usage: fencepost <command> [flags]   (fencepost <command> --help for its flags)");
    System.out.println();
    COMMANDS.forEach((name, c) -> System.out.printf("  %-10s %s%n", name, c.summary()));
  }
}
