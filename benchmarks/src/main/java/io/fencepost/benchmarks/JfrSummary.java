package io.fencepost.benchmarks;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordingFile;

/**
 * Where the time went in a JFR recording, as Markdown: CPU load (this JVM against the whole
 * machine, whose rest is mostly PostgreSQL), execution samples by component, by thread, by top frame
 * and by first frame outside the JDK, garbage collection and the most allocated classes.
 *
 * <p>Run: {@code java -cp ... io.fencepost.benchmarks.JfrSummary <recording.jfr>}.
 */
public final class JfrSummary {

  private static final int TOP = 15;

  /**
   * A stretch of the recording to summarise.
   *
   * @param from inclusive
   * @param to exclusive
   */
  record Window(Instant from, Instant to) {
    boolean contains(Instant t) {
      return !t.isBefore(from) && t.isBefore(to);
    }
  }

  /** Package prefix to component, the first match wins. */
  private static final Map<String, String> COMPONENTS = components();

  private final Map<String, Long> byComponent = new HashMap<>();
  private final Map<String, Long> byThread = new HashMap<>();
  private final Map<String, Long> byTopFrame = new HashMap<>();
  private final Map<String, Long> byOwnFrame = new HashMap<>();
  private final Map<String, Long> allocations = new HashMap<>();
  private long samples;
  private double jvmCpu;
  private double machineCpu;
  private int cpuEvents;
  private long gcCount;
  private long gcPauseNanos;
  private long allocatedBytes;

  private JfrSummary() {
  }

  public static void main(String[] args) throws IOException {
    if (args.length != 1) {
      System.err.println("usage: JfrSummary <recording.jfr>");
      System.exit(2);
    }
    System.out.print(of(Path.of(args[0]), List.of(new Window(Instant.MIN, Instant.MAX))));
  }

  /** The summary of the events of a recording that start within one of the windows. */
  static String of(Path recording, List<Window> windows) throws IOException {
    JfrSummary s = new JfrSummary();
    for (RecordedEvent e : RecordingFile.readAllEvents(recording)) {
      if (windows.stream().anyMatch(w -> w.contains(e.getStartTime()))) {
        s.add(e);
      }
    }
    return s.render();
  }

  private void add(RecordedEvent e) {
    switch (e.getEventType().getName()) {
      case "jdk.ExecutionSample" -> sample(e);
      case "jdk.CPULoad" -> {
        jvmCpu += e.getFloat("jvmUser") + e.getFloat("jvmSystem");
        machineCpu += e.getFloat("machineTotal");
        cpuEvents++;
      }
      case "jdk.GarbageCollection" -> {
        gcCount++;
        gcPauseNanos += e.getDuration("sumOfPauses").toNanos();
      }
      case "jdk.ObjectAllocationSample" -> {
        long weight = e.getLong("weight");
        allocatedBytes += weight;
        allocations.merge(e.getClass("objectClass").getName(), weight, Long::sum);
      }
      default -> {
      }
    }
  }

  private void sample(RecordedEvent e) {
    RecordedStackTrace stack = e.getStackTrace();
    if (stack == null || stack.getFrames().isEmpty()) {
      return;
    }
    samples++;
    List<RecordedFrame> frames = stack.getFrames();
    byTopFrame.merge(name(frames.get(0)), 1L, Long::sum);
    frames.stream().filter(f -> !isJdk(type(f))).findFirst()
        .ifPresent(f -> byOwnFrame.merge(name(f), 1L, Long::sum));
    byComponent.merge(component(frames), 1L, Long::sum);
    String thread = e.getThread("sampledThread") == null ? "?" : e.getThread("sampledThread").getJavaName();
    byThread.merge(thread == null ? "?" : thread.replaceAll("\\d+", "N"), 1L, Long::sum);
  }

  /** The component a sample's time belongs to, judged from its whole stack. */
  private static String component(List<RecordedFrame> frames) {
    boolean consumer = false;
    for (RecordedFrame f : frames) {
      String t = type(f);
      if (t.startsWith("kafka.") || t.startsWith("org.apache.kafka.server.") || t.startsWith("org.apache.kafka.raft.")
          || t.startsWith("org.apache.kafka.controller.") || t.startsWith("org.apache.kafka.storage.")
          || t.startsWith("org.apache.kafka.coordinator.") || t.startsWith("org.apache.kafka.queue.")) {
        return "Kafka broker (in-process)";
      }
      consumer |= t.startsWith("org.apache.pekko.kafka.");
    }
    for (RecordedFrame f : frames) {
      String t = type(f);
      if (isJdk(t)) {
        continue;
      }
      if (t.startsWith("org.apache.kafka.")) {
        return consumer ? "Kafka consumer (via pekko-connectors-kafka)" : "Kafka clients";
      }
      for (Map.Entry<String, String> c : COMPONENTS.entrySet()) {
        if (t.startsWith(c.getKey())) {
          return c.getValue();
        }
      }
      return "other: " + t.substring(0, Math.max(0, t.lastIndexOf('.')));
    }
    return "JDK only";
  }

  private static Map<String, String> components() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("io.fencepost.benchmarks.", "benchmark harness");
    m.put("io.fencepost.", "Fencepost");
    m.put("org.apache.pekko.persistence.jdbc.", "journal plugin (pekko-persistence-jdbc, Slick)");
    m.put("slick.", "journal plugin (pekko-persistence-jdbc, Slick)");
    m.put("org.postgresql.", "PostgreSQL JDBC driver, HikariCP");
    m.put("com.zaxxer.hikari.", "PostgreSQL JDBC driver, HikariCP");
    m.put("org.apache.pekko.kafka.", "pekko-connectors-kafka");
    m.put("org.apache.pekko.persistence.", "Pekko Persistence");
    m.put("org.apache.pekko.cluster.", "Pekko Cluster, Sharding");
    m.put("org.apache.pekko.stream.", "Pekko Streams");
    m.put("org.apache.pekko.", "Pekko actors, dispatchers, remoting");
    m.put("com.fasterxml.jackson.", "Jackson (journal event serialization)");
    m.put("io.micrometer.", "Micrometer");
    m.put("org.HdrHistogram.", "Micrometer");
    m.put("ch.qos.logback.", "logging");
    m.put("org.slf4j.", "logging");
    m.put("scala.", "Scala library");
    return m;
  }

  private static boolean isJdk(String type) {
    return type.startsWith("java.") || type.startsWith("javax.") || type.startsWith("jdk.") || type.startsWith("sun.")
        || type.startsWith("com.sun.");
  }

  private static String type(RecordedFrame f) {
    return f.getMethod() == null ? "?" : f.getMethod().getType().getName();
  }

  private static String name(RecordedFrame f) {
    return f.getMethod() == null ? "?" : type(f) + "." + f.getMethod().getName();
  }

  private String render() {
    StringBuilder sb = new StringBuilder();
    if (cpuEvents > 0) {
      sb.append(String.format(Locale.ROOT, "CPU (mean of %d jdk.CPULoad samples, share of all cores): this JVM %.0f%%, "
          + "whole machine %.0f%% (the difference is other processes, essentially PostgreSQL).%n%n", cpuEvents,
          100 * jvmCpu / cpuEvents, 100 * machineCpu / cpuEvents));
    }
    sb.append(String.format(Locale.ROOT, "Garbage collection: %d collections, %.0f ms paused in all. Allocation "
        + "(jdk.ObjectAllocationSample weights): %,d MiB.%n%n", gcCount, gcPauseNanos / 1e6, allocatedBytes >> 20));
    table(sb, "Execution samples by component (" + String.format(Locale.ROOT, "%,d", samples)
        + " samples; a sample counts for the component of its innermost non-JDK frame, broker threads for the broker)",
        "component", byComponent, samples);
    table(sb, "By thread (digits folded to N)", "thread", byThread, samples);
    table(sb, "Top frames (where the CPU was, JDK included)", "method", byTopFrame, samples);
    table(sb, "Innermost frames outside the JDK (who asked for that work)", "method", byOwnFrame, samples);
    table(sb, "Most allocated classes (sampled bytes)", "class", allocations, allocatedBytes);
    return sb.toString();
  }

  private static void table(StringBuilder sb, String title, String key, Map<String, Long> counts, long total) {
    sb.append("#### ").append(title).append("\n\n| ").append(key).append(" | share |\n|---|---:|\n");
    counts.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(TOP)
        .forEach(e -> sb.append(String.format(Locale.ROOT, "| `%s` | %.1f%% |%n", e.getKey(),
            100.0 * e.getValue() / Math.max(1, total))));
    sb.append('\n');
  }
}
