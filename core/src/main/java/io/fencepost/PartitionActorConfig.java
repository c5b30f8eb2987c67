package io.fencepost;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import io.fencepost.errors.SettingsException;

/**
 * Reads {@link PartitionActorSettings} from a section laid out like {@code fencepost.partition-actor};
 * a key that is missing or of the wrong type is refused naming it under the section's path.
 */
final class PartitionActorConfig {

  private PartitionActorConfig() {
  }

  static PartitionActorSettings read(Config section, String pathForErrors) {
    String key = null;
    PartitionActorSettings.Values v = new PartitionActorSettings.Values();
    try {
      key = "delivery-mode";
      v.deliveryMode = DeliveryMode.fromConfig(pathForErrors + "." + key, section.getString(key));
      key = "snapshot-every";
      v.snapshotEvery = section.getInt(key);
      key = "keep-snapshots";
      v.keepSnapshots = section.getInt(key);
      key = "key-window.enabled";
      v.keyWindowEnabled = section.getBoolean(key);
      key = "key-window.max-keys";
      v.keyWindowMaxKeys = section.getInt(key);
      key = "key-window.max-age";
      v.keyWindowMaxAge = section.getDuration(key);
      key = "key-window.header";
      v.keyHeader = section.getString(key);
      key = "journal-plugin-id";
      v.journalPluginId = section.getString(key);
      key = "snapshot-plugin-id";
      v.snapshotPluginId = section.getString(key);
      key = "journal-databases";
      v.journalDatabases = section.getInt(key);
      key = "failure-backoff.min";
      v.backoffMin = section.getDuration(key);
      key = "failure-backoff.max";
      v.backoffMax = section.getDuration(key);
      key = "failure-backoff.random-factor";
      v.backoffRandomFactor = section.getDouble(key);
      key = "per-key-ordering";
      v.perKeyOrdering = section.getBoolean(key);
      key = "external-call.timeout";
      v.callTimeout = section.getDuration(key);
      key = "at-most-once-linger";
      v.atMostOnceLinger = section.getDuration(key);
      return PartitionActorSettings.of(v);
    } catch (ConfigException.WrongType | ConfigException.BadValue e) {
      throw new SettingsException(pathForErrors + "." + key, describe(section, key),
          "has the wrong type or format (" + e.getMessage() + ")");
    } catch (ConfigException.Missing e) {
      throw new SettingsException(pathForErrors + "." + key, "missing", "must be set (see reference.conf)");
    } catch (SettingsException e) {
      if (pathForErrors.equals(PartitionActorSettings.CONFIG_PATH) || !e.key().startsWith(PartitionActorSettings.CONFIG_PATH)) {
        throw e;
      }
      throw new SettingsException(pathForErrors + e.key().substring(PartitionActorSettings.CONFIG_PATH.length()), e.value(), e.rule());
    }
  }

  private static String describe(Config section, String key) {
    try {
      return section.getValue(key).unwrapped().toString();
    } catch (RuntimeException e) {
      return "?";
    }
  }
}
