package io.fencepost.jdbc.internal;

import com.typesafe.config.Config;
import io.fencepost.annotation.InternalApi;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.persistence.jdbc.config.DurableStateTableConfiguration;
import org.apache.pekko.persistence.jdbc.db.SlickDatabase;
import org.apache.pekko.persistence.jdbc.db.SlickExtension;
import org.apache.pekko.persistence.jdbc.db.SlickExtensionImpl;
import org.apache.pekko.persistence.jdbc.state.scaladsl.JdbcDurableStateStore;
import org.apache.pekko.persistence.state.DurableStateStoreProvider;
import org.apache.pekko.persistence.state.javadsl.DurableStateStore;
import org.apache.pekko.serialization.SerializationExtension;

/**
 * INTERNAL API: pekko-persistence-jdbc's durable-state store, configured from the plugin's own
 * configuration block. pekko-persistence-jdbc 1.1's provider reads the root
 * {@code jdbc-durable-state-store} block whatever id the plugin is registered under, so one actor
 * system could hold only one such store; each journal database of several needs its own (the outbox
 * relays' positions live beside their partitions' histories).
 */
@InternalApi
public final class DatabaseDurableStateStoreProvider implements DurableStateStoreProvider {

  private final JdbcDurableStateStore<Object> scaladsl;
  private final DurableStateStore<Object> javadsl;

  /** Called by Pekko with the plugin's configuration and path. */
  public DatabaseDurableStateStoreProvider(ExtendedActorSystem system, Config config, String configPath) {
    SlickDatabase slick = ((SlickExtensionImpl) SlickExtension.get(system)).database(config);
    DurableStateTableConfiguration tables = new DurableStateTableConfiguration(config);
    this.scaladsl = new JdbcDurableStateStore<>(slick.database(), slick.profile(), tables,
        SerializationExtension.get(system), system);
    this.javadsl = new org.apache.pekko.persistence.jdbc.state.javadsl.JdbcDurableStateStore<>(slick.profile(),
        tables, scaladsl, system.dispatcher());
  }

  @Override
  public org.apache.pekko.persistence.state.scaladsl.DurableStateStore<Object> scaladslDurableStateStore() {
    return scaladsl;
  }

  @Override
  public DurableStateStore<Object> javadslDurableStateStore() {
    return javadsl;
  }
}
