package io.fencepost.tools;

import java.io.File;
import java.io.IOException;
import java.io.Reader;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;

import io.fencepost.jdbc.JournalDatabase;


/**
 * What the tools take from a service: its classes (a class loader over {@code --classpath}) and its
 * Kafka client settings ({@code --client-config}). The actor systems they read and write a journal
 * with are {@link io.fencepost.jdbc.JournalDatabase#localSystem}.
 */
final class ToolInputs {

  private ToolInputs() {
  }

  /** Declares {@code --jdbc-url} (once per journal database, in order), {@code --jdbc-user} and {@code --jdbc-password}. */
  static Flags journalFlags(Flags flags, String urlHelp) {
    return flags
        .repeatable("jdbc-url", "url", "FENCEPOST_JDBC_URL", null, urlHelp + "; a deployment on several journal "
            + "databases gives one --jdbc-url each, in the order it first used them (checked against what each "
            + "database records)")
        .value("jdbc-user", "user", "FENCEPOST_JDBC_USER", "postgres", "journal database user")
        .value("jdbc-password", "password", "FENCEPOST_JDBC_PASSWORD", "", "journal database password");
  }

  /** The journal databases {@link #journalFlags} name; a usage error when none. */
  static List<JournalDatabase> journals(Flags flags) {
    List<String> urls = flags.all("jdbc-url");
    if (urls.isEmpty()) {
      flags.require("jdbc-url");
    }
    return urls.stream().map(url -> JournalDatabase.of(url, flags.require("jdbc-user"), flags.require("jdbc-password")))
        .toList();
  }

  /**
   * A class loader over {@code classpath} (jars and directories separated by the platform's path
   * separator) on top of the tools' own classes; the tools' loader when empty.
   *
   * @throws Flags.UsageError naming an entry that does not exist
   */
  static ClassLoader classLoader(Optional<String> classpath) {
    if (classpath.isEmpty() || classpath.get().isBlank()) {
      return ToolInputs.class.getClassLoader();
    }
    List<URL> urls = new ArrayList<>();
    for (String entry : classpath.get().split(File.pathSeparator)) {
      if (entry.isBlank()) {
        continue;
      }
      Path path = Path.of(entry.trim());
      if (!Files.exists(path)) {
        throw new Flags.UsageError("--classpath: [" + entry + "] does not exist (jars and directories, separated by '"
            + File.pathSeparator + "')");
      }
      try {
        urls.add(path.toUri().toURL());
      } catch (MalformedURLException e) {
        throw new Flags.UsageError("--classpath: [" + entry + "] is not a usable path: " + e.getMessage());
      }
    }
    return new URLClassLoader("service-classpath", urls.toArray(new URL[0]),
        ToolInputs.class.getClassLoader());
  }

  /**
   * Kafka client properties from a Java properties file (as Kafka's own tools take them with
   * {@code --command-config}): where a secured cluster's {@code security.protocol},
   * {@code sasl.*} and {@code ssl.*} settings go, so that no password is on the command line.
   *
   * @throws Flags.UsageError naming a file that cannot be read
   */
  static Map<String, String> clientConfig(Optional<String> file) {
    if (file.isEmpty()) {
      return Map.of();
    }
    Properties p = new Properties();
    try (Reader r = Files.newBufferedReader(Path.of(file.get()))) {
      p.load(r);
    } catch (IOException e) {
      throw new Flags.UsageError("--client-config: cannot read [" + file.get() + "]: " + e.getMessage());
    }
    Map<String, String> out = new TreeMap<>();
    p.forEach((k, v) -> out.put(String.valueOf(k), String.valueOf(v)));
    return out;
  }
}
