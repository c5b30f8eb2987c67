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

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.jdbc.JournalDatabase;
import org.apache.pekko.actor.BootstrapSetup;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * The actor systems the tools read and write a journal with. They load the service's configuration
 * (its serializers) but never its cluster or remoting: a tool run next to a running service must not
 * bind the service's port, nor join its cluster.
 */
final class ToolSystems {

  private ToolSystems() {
  }

  /**
   * A class loader over {@code classpath} (jars and directories separated by the platform's path
   * separator) on top of the tools' own classes; the tools' loader when empty.
   *
   * @throws Flags.UsageError naming an entry that does not exist
   */
  static ClassLoader classLoader(Optional<String> classpath) {
    if (classpath.isEmpty() || classpath.get().isBlank()) {
      return ToolSystems.class.getClassLoader();
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
        ToolSystems.class.getClassLoader());
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

  /** A local actor system on {@code journal}, with classes and configuration from {@code loader}. */
  static ActorSystem<Void> create(String name, JournalDatabase journal, ClassLoader loader) {
    // The journal is the one given: plugin ids in the service's configuration would point elsewhere.
    Config config = ConfigFactory.parseString("pekko.actor.provider = local\n"
            + "pekko.loglevel = WARNING\n"
            + "pekko.coordinated-shutdown.exit-jvm = off\n"
            + "fencepost.partition-actor.journal-plugin-id = \"\"\n"
            + "fencepost.partition-actor.snapshot-plugin-id = \"\"\n")
        .withFallback(journal.pekkoConfig())
        .withFallback(ConfigFactory.load(loader));
    return ActorSystem.create(Behaviors.empty(), name,
        BootstrapSetup.create(Optional.of(loader), Optional.of(config), Optional.empty()));
  }
}
