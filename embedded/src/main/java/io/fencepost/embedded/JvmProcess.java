package io.fencepost.embedded;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A separate JVM running a {@code main} class on this JVM's classpath, with its output in a log
 * file: for crash tests that need real processes (SIGKILL, SIGSTOP/SIGCONT, SIGTERM).
 */
public final class JvmProcess implements AutoCloseable {

  /**
   * Set in every child's environment: a child that serves until it is stopped (the broker) also
   * stops when this process closes its standard input, or dies.
   */
  static final String EXIT_WITH_PARENT = "FENCEPOST_EXIT_WITH_PARENT";

  private final String name;
  private final Process process;
  private final Path log;

  private JvmProcess(String name, Process process, Path log) {
    this.name = name;
    this.process = process;
    this.log = log;
  }

  /**
   * Starts {@code mainClass} with {@code args} in a new JVM ({@code -Xmx512m}, same classpath and
   * Java as this one); standard output and error go to {@code log} (appended).
   */
  public static JvmProcess start(String name, String mainClass, List<String> args, Path log) {
    return start(name, List.of(), mainClass, args, log);
  }

  /** {@link #start(String, String, List, Path)} with extra JVM options (e.g. {@code -Dkey=value}) before the class. */
  public static JvmProcess start(String name, List<String> jvmOptions, String mainClass, List<String> args,
      Path log) {
    return start(name, jvmOptions, List.of(), mainClass, args, log);
  }

  /**
   * {@link #start(String, List, String, List, Path)} with {@code classpathFirst} (class directories or
   * jars) ahead of this JVM's classpath: e.g. one version of an application's classes per process.
   */
  public static JvmProcess start(String name, List<String> jvmOptions, List<Path> classpathFirst, String mainClass,
      List<String> args, Path log) {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx512m");
    cmd.add("-XX:+UseSerialGC");
    cmd.addAll(jvmOptions);
    cmd.add("-cp");
    List<String> classpath = new ArrayList<>();
    classpathFirst.forEach(p -> classpath.add(p.toAbsolutePath().toString()));
    classpath.add(System.getProperty("java.class.path"));
    cmd.add(String.join(File.pathSeparator, classpath));
    cmd.add(mainClass);
    cmd.addAll(args);
    try {
      Files.createDirectories(log.toAbsolutePath().getParent());
      Files.writeString(log, "=== start " + name + ": " + String.join(" ", args) + System.lineSeparator(),
          StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
      ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
          .redirectInput(ProcessBuilder.Redirect.PIPE);
      pb.environment().put(EXIT_WITH_PARENT, "1");
      return new JvmProcess(name, pb.start(), log);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start JVM process " + name, e);
    }
  }

  /** Waits until the log holds a line starting with {@code prefix} (after this start) and returns it. */
  public String awaitLine(String prefix, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      Optional<String> line = lastStartLines().stream().filter(l -> l.startsWith(prefix)).findFirst();
      if (line.isPresent()) {
        return line.get();
      }
      if (!process.isAlive()) {
        throw new IllegalStateException(name + " exited with " + process.exitValue() + " before printing [" + prefix
            + "]; see " + log);
      }
      sleep(100);
    }
    throw new IllegalStateException(name + " did not print [" + prefix + "] within " + timeout + "; see " + log);
  }

  /** How many lines since this process started contain {@code text}. */
  public long countLines(String text) {
    return lastStartLines().stream().filter(l -> l.contains(text)).count();
  }

  /** The log lines written since this process started. */
  public List<String> lines() {
    return lastStartLines();
  }

  private List<String> lastStartLines() {
    try {
      List<String> all = Files.readAllLines(log, StandardCharsets.UTF_8);
      int start = 0;
      for (int i = 0; i < all.size(); i++) {
        if (all.get(i).startsWith("=== start " + name + ":")) {
          start = i;
        }
      }
      return all.subList(start, all.size());
    } catch (IOException e) {
      return List.of();
    }
  }

  /** Waits until the process exits and returns its exit status. */
  public int awaitExit(Duration timeout) {
    if (!waitFor(timeout)) {
      throw new IllegalStateException(name + " still runs after " + timeout + "; see " + log);
    }
    return process.exitValue();
  }

  public long pid() {
    return process.pid();
  }

  public boolean isAlive() {
    return process.isAlive();
  }

  /** SIGKILL: the process dies at once, mid-whatever. */
  public void kill() {
    process.destroyForcibly();
    waitFor(Duration.ofSeconds(30));
  }

  /** SIGTERM: a graceful stop (shutdown hooks run); waits up to {@code timeout}, then SIGKILL. */
  public void terminate(Duration timeout) {
    process.destroy();
    if (!waitFor(timeout)) {
      kill();
    }
  }

  /** SIGSTOP: the process freezes (a zombie-to-be: its sessions and leases expire). */
  public void pause() {
    signal("STOP");
  }

  /** SIGCONT: a paused process resumes where it stopped. */
  public void resume() {
    signal("CONT");
  }

  private void signal(String sig) {
    try {
      Process p = new ProcessBuilder("kill", "-" + sig, Long.toString(process.pid())).inheritIO().start();
      if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IllegalStateException("kill -" + sig + " " + process.pid() + " failed");
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private boolean waitFor(Duration timeout) {
    try {
      return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  public Path log() {
    return log;
  }

  /** Kills the process if it still runs. */
  @Override
  public void close() {
    if (process.isAlive()) {
      try {
        resume();
      } catch (RuntimeException e) {
        // it may have exited meanwhile
      }
      kill();
    }
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
