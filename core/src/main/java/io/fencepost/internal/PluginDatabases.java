package io.fencepost.internal;

import java.util.List;
import java.util.Optional;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import io.fencepost.annotation.InternalApi;

/**
 * INTERNAL API: which database a pekko-persistence-jdbc plugin reaches, read from the configuration
 * as the plugin reads it: the pool it names in {@code use-shared-db}
 * ({@code pekko-persistence-jdbc.shared-databases.<name>.db.url}), else its own {@code slick.db.url}.
 * Plugins of another kind, and pools that name a JNDI data source or a data source class, reach no
 * database this can tell.
 */
@InternalApi
public final class PluginDatabases {

  /** Settings by which Slick or HikariCP reach a database without (or despite) {@code db.url}. */
  private static final List<String> OTHER_SOURCES = List.of("jndiName", "jndiDbName", "db.jndiName",
      "db.dataSourceClass", "db.dataSourceClassName");

  private PluginDatabases() {
  }

  /** The JDBC URL plugin {@code pluginId} reaches; empty when the configuration does not tell. */
  public static Optional<String> urlOf(Config config, String pluginId) {
    try {
      if (pluginId.isBlank() || !config.hasPath(pluginId)) {
        return Optional.empty();
      }
      Config plugin = config.getConfig(pluginId);   // a plugin id is a configuration path
      String slick = plugin.hasPath("use-shared-db") && !plugin.getString("use-shared-db").isBlank()
          ? "pekko-persistence-jdbc.shared-databases." + plugin.getString("use-shared-db")
          : pluginId + ".slick";
      if (!config.hasPath(slick + ".db.url")
          || OTHER_SOURCES.stream().anyMatch(key -> config.hasPath(slick + "." + key))) {
        return Optional.empty();   // no url, or one a JNDI name or a data source class takes the place of
      }
      return Optional.of(config.getString(slick + ".db.url"));
    } catch (ConfigException e) {   // not a path, or not a block: not a JDBC plugin this can read
      return Optional.empty();
    }
  }

  /**
   * Why plugins {@code others} do not reach the database {@code reference} reaches (one clause per
   * plugin that reaches another), or empty when each reaches it or the configuration does not tell.
   * {@code what} names each plugin's role, in the order of {@code others}.
   */
  public static Optional<String> mismatch(Config config, String reference, List<String> others, List<String> what) {
    Optional<String> expected = urlOf(config, reference);
    if (expected.isEmpty()) {
      return Optional.empty();
    }
    StringBuilder why = new StringBuilder();
    for (int i = 0; i < others.size(); i++) {
      Optional<String> url = urlOf(config, others.get(i));
      if (url.isPresent() && !url.get().equals(expected.get())) {
        why.append(why.length() == 0 ? "" : "; ").append("the ").append(what.get(i)).append(" plugin [")
            .append(others.get(i)).append("] reaches ").append(url.get());
      }
    }
    return why.length() == 0 ? Optional.empty()
        : Optional.of(why + ", while [" + reference + "] reaches " + expected.get());
  }
}
