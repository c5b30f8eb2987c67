package io.fencepost.kafka.internal;

import java.util.ArrayList;
import java.util.List;

import com.typesafe.config.Config;
import io.fencepost.annotation.InternalApi;
import io.fencepost.errors.JournalLayoutException;
import io.fencepost.internal.PluginDatabases;

/** INTERNAL API: the pipeline's check that each journal database's plugins reach that one database. */
@InternalApi
public final class JournalPlugins {

  private JournalPlugins() {
  }

  /**
   * Refuses a journal plugin of database {@code index} that reaches another URL than the one
   * {@code verified} (the list {@code JournalDatabases.pekkoConfig()} checked, or empty) names for it.
   */
  public static void refuseElsewhere(Config config, String pipeline, int index, int count, String journal,
      List<String> verified) {
    if (verified.size() != count) {
      return;   // none verified, or a layer changed journal-databases: the identity read through the plugin says
    }
    if (PluginDatabases.urlOf(config, journal).isEmpty()) {
      throw new JournalLayoutException("[" + pipeline + "] refused to start: the journal plugin [" + journal + "] of "
          + "journal database " + index + " of " + count + " names no database this can check against the list "
          + "verified at start (" + verified.get(index) + "): a layer above JournalDatabases.pekkoConfig() gave its "
          + "pool a JNDI name or a data source class. Let the pool keep the URL the list gives; nothing was consumed");
    }
    PluginDatabases.urlOf(config, journal).filter(url -> !url.equals(verified.get(index))).ifPresent(url -> {
      throw new JournalLayoutException("[" + pipeline + "] refused to start: the journal plugin [" + journal + "] of "
          + "journal database " + index + " of " + count + " reaches " + url + ", but the list verified at start has "
          + verified.get(index) + " there: a layer above JournalDatabases.pekkoConfig() (application.conf, a -D "
          + "option) changed the pool's url. Change the URL in the list the node is given instead; nothing was "
          + "consumed");
    });
  }

  /**
   * Refuses plugins {@code others} (roles {@code what}) of journal database {@code index} of
   * {@code count} that reach another database than its journal plugin {@code journal} (whose identity
   * was read through it): a layer that changed one of them would put the partitions' snapshots, or
   * their relays' reads and positions, in another database than their histories. With several
   * databases a plugin whose database the configuration does not tell (a JNDI name, a
   * {@code dataSourceClass}) is refused too: it could be any database.
   */
  public static void refuseMixed(Config config, String pipeline, int index, int count, String journal,
      List<String> others, List<String> what) {
    if (count > 1) {
      List<String> ids = new ArrayList<>(List.of(journal));
      ids.addAll(others);
      List<String> roles = new ArrayList<>(List.of("journal"));
      roles.addAll(what);
      for (int i = 0; i < ids.size(); i++) {
        if (PluginDatabases.urlOf(config, ids.get(i)).isEmpty()) {
          throw new JournalLayoutException("[" + pipeline + "] refused to start: the " + roles.get(i) + " plugin ["
              + ids.get(i) + "] of journal database " + index + " of " + count + " names no database this can "
              + "check (neither use-shared-db with a pool's db.url nor its own slick.db.url: a JNDI name or a "
              + "dataSourceClass?). With several journal databases each plugin must reach its database through the "
              + "pool JournalDatabases.pekkoConfig() configures (use-shared-db = \"fencepost-db-" + index + "\"); "
              + "nothing was consumed");
        }
      }
    }
    PluginDatabases.mismatch(config, journal, others, what).ifPresent(why -> {
      throw new JournalLayoutException("[" + pipeline + "] refused to start: the plugins of journal database " + index
          + " of " + count + " reach different databases: " + why + ". Configure the plugins with "
          + "JournalDatabases.pekkoConfig() (or JournalDatabase.pekkoConfig() for one database) and let no other "
          + "layer change their use-shared-db or slick.db settings; nothing was consumed");
    });
  }
}
