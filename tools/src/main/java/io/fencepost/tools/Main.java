package io.fencepost.tools;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;

import io.fencepost.errors.JournalLayoutException;
import io.fencepost.errors.SettingsException;

/**
 * The {@code fencepost} command line: {@code java -jar tools/target/fencepost.jar <command>}.
 * Each command prints its own {@code --help}; a bad flag, setting or connection prints one line naming
 * it and exits 2 ({@code --verbose}: with the stack trace).
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
   * {@link #run}, with a command's failure reported on {@code err}: exit code 2, one line naming what
   * was refused or failed and its causes (the stack trace only with {@code --verbose}), so that exit
   * code 1 keeps meaning what a command returns it for ({@code verify}: something missing or doubled;
   * {@code status}: a partition unowned or halted). A command that failed after starting threads (an
   * actor system, a Kafka client) must still end the process: {@link #main} exits.
   */
  static int runReporting(String[] args, PrintStream err) {
    boolean verbose = Arrays.asList(args).contains(VERBOSE);
    String[] rest = Arrays.stream(args).filter(a -> !a.equals(VERBOSE)).toArray(String[]::new);
    try {
      return run(rest);
    } catch (Exception | Error e) {
      String command = rest.length > 0 ? rest[0] : "";
      boolean refused = e instanceof SettingsException || e instanceof JournalLayoutException
          || e instanceof IllegalArgumentException;
      err.println("fencepost " + command + (refused ? ": " : " failed: ") + oneLine(e)
          + (verbose ? "" : " (--verbose prints the stack trace)"));
      if (verbose) {
        e.printStackTrace(err);
      }
      return 2;
    }
  }

  /** The flag that prints a failure's stack trace; any command takes it. */
  static final String VERBOSE = "--verbose";

  /**
   * A failure and its causes on one line: each cause's message unless the one before already says it
   * (wrappers often repeat their cause's), the exception's class where a message is missing.
   */
  static String oneLine(Throwable e) {
    StringBuilder line = new StringBuilder();
    String previous = "";
    java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
    for (Throwable t = e; t != null && seen.add(t); t = t.getCause()) {
      String message = t.getMessage() == null || t.getMessage().isBlank() ? t.getClass().getName()
          : t.getMessage().lines().findFirst().orElse("");
      if (!previous.contains(message)) {
        line.append(line.length() == 0 ? "" : ": ").append(message);
        previous = message;
      }
    }
    return line.toString();
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
    System.out.println("exit codes: 0 done; 1 the check failed (verify: missing or doubled; status: a partition "
        + "unowned or halted); 2 a flag, setting, classpath or connection problem (one line; --verbose: the stack "
        + "trace)");
    System.out.println();
    COMMANDS.forEach((name, c) -> System.out.printf("  %-10s %s%n", name, c.summary()));
  }
}
