package io.fencepost.tools;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A tiny command-line parser: {@code --name value} and boolean {@code --name} flags, each with a
 * description and an optional environment variable fallback; a flag is given once unless declared
 * {@link #repeatable}. A bad flag is a {@link UsageError}
 * whose one-line message names the flag and what is accepted; commands exit 2 on it.
 */
final class Flags {

  /** A command-line mistake; the message is shown as is, and the process exits 2. */
  static final class UsageError extends RuntimeException {
    UsageError(String message) {
      super(message);
    }
  }

  private record Spec(String name, String valueName, String env, String fallback, String help, boolean repeatable) {
  }

  private final String command;
  private final Map<String, Spec> specs = new LinkedHashMap<>();
  private final Map<String, List<String>> values = new HashMap<>();

  Flags(String command) {
    this.command = command;
  }

  /** A flag taking a value; {@code env} (may be null) and {@code fallback} (may be null) apply when it is absent. */
  Flags value(String name, String valueName, String env, String fallback, String help) {
    specs.put(name, new Spec(name, valueName, env, fallback, help, false));
    return this;
  }

  /** A flag taking a value that may be given several times ({@link #all}); any other flag only once. */
  Flags repeatable(String name, String valueName, String env, String fallback, String help) {
    specs.put(name, new Spec(name, valueName, env, fallback, help, true));
    return this;
  }

  /** A flag without a value. */
  Flags bool(String name, String help) {
    specs.put(name, new Spec(name, null, null, null, help, false));
    return this;
  }

  /** Parses; returns false when --help was asked for (usage is printed). */
  boolean parse(String[] args) {
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (a.equals("--help") || a.equals("-h")) {
        printUsage();
        return false;
      }
      if (!a.startsWith("--") || !specs.containsKey(a.substring(2))) {
        throw new UsageError(command + ": unknown flag [" + a + "]; accepted: " + accepted());
      }
      Spec spec = specs.get(a.substring(2));
      if (values.containsKey(spec.name()) && !spec.repeatable()) {
        throw new UsageError(command + ": flag --" + spec.name() + " is given twice; give it once");
      }
      List<String> given = values.computeIfAbsent(spec.name(), n -> new ArrayList<>());
      if (spec.valueName() == null) {
        given.add("true");
      } else {
        if (i + 1 >= args.length || args[i + 1].startsWith("--")) {
          throw new UsageError(command + ": flag --" + spec.name() + " needs a value <" + spec.valueName() + ">");
        }
        given.add(args[++i]);
      }
    }
    return true;
  }

  Optional<String> get(String name) {
    Spec spec = specs.get(name);
    if (spec == null) {
      throw new IllegalArgumentException("undeclared flag " + name);
    }
    List<String> given = values.get(name);
    String v = given == null ? null : given.get(given.size() - 1);
    if (v == null && spec.env() != null) {
      v = System.getenv(spec.env());
    }
    if (v == null) {
      v = spec.fallback();
    }
    return Optional.ofNullable(v);
  }

  /** Every value of a repeatable flag, in the order given; else its environment variable or fallback, if any. */
  List<String> all(String name) {
    List<String> given = values.get(name);
    return given != null ? List.copyOf(given) : get(name).map(List::of).orElse(List.of());
  }

  String require(String name) {
    return get(name).orElseThrow(() -> new UsageError(command + ": flag --" + name + " is required"
        + (specs.get(name).env() != null ? " (or set " + specs.get(name).env() + ")" : "")));
  }

  boolean isSet(String name) {
    return values.containsKey(name);
  }

  int intValue(String name, int min, int max) {
    return (int) number(name, min, max, true);
  }

  double doubleValue(String name, double min, double max) {
    return number(name, min, max, false);
  }

  private double number(String name, double min, double max, boolean integer) {
    String v = require(name);
    String range = integer ? (long) min + " and " + (long) max : min + " and " + max;
    double n;
    try {
      n = integer ? Long.parseLong(v.trim()) : Double.parseDouble(v.trim());
    } catch (NumberFormatException e) {
      throw new UsageError(command + ": flag --" + name + " must be " + (integer ? "an integer" : "a number")
          + " between " + range + ", was [" + v + "]");
    }
    if (n < min || n > max) {
      throw new UsageError(command + ": flag --" + name + " must be between " + range + ", was [" + v + "]");
    }
    return n;
  }

  private String accepted() {
    StringBuilder sb = new StringBuilder();
    for (String n : specs.keySet()) {
      sb.append(sb.length() == 0 ? "" : ", ").append("--").append(n);
    }
    return sb.append(", --help").toString();
  }

  void printUsage() {
    System.out.println("usage: fencepost " + command + " [flags]");
    for (Spec s : specs.values()) {
      String left = "--" + s.name() + (s.valueName() == null ? "" : " <" + s.valueName() + ">")
          + (s.repeatable() ? " ..." : "");
      String right = s.help() + (s.env() != null ? " [env " + s.env() + "]" : "")
          + (s.fallback() != null ? " (default " + s.fallback() + ")" : "");
      System.out.printf("  %-28s %s%n", left, right);
    }
  }
}
