package io.fencepost.jdbc.internal;

import java.util.List;

import com.typesafe.config.Config;
import io.fencepost.annotation.InternalApi;
import io.fencepost.internal.PluginDatabases;

/** INTERNAL API: checks that the plugins a tool reads or writes with reach the database it was given. */
@InternalApi
public final class PluginChecks {

  private PluginChecks() {
  }

  /**
   * Refuses, naming {@code who}, a plugin of {@code pluginIds} (roles {@code roles}) that the
   * configuration points at another database than {@code url}.
   */
  public static void requireOn(Config config, String who, String url, List<String> pluginIds, List<String> roles) {
    for (int i = 0; i < pluginIds.size(); i++) {
      String id = pluginIds.get(i);
      String role = roles.get(i);
      PluginDatabases.urlOf(config, id).filter(reached -> !reached.equals(url)).ifPresent(reached -> {
        throw new IllegalArgumentException(who + " was given journal database [" + url + "], but its " + role + " plugin [" + id + "] reaches [" + reached + "]: it would read or move "
            + "another database's rows. Pass that plugin's database, or the plugin ids configured for this one");
      });
    }
  }
}
