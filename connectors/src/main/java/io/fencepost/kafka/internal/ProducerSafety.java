package io.fencepost.kafka.internal;

import java.util.Locale;
import java.util.Map;
import java.util.Properties;

import io.fencepost.errors.SettingsException;
import org.apache.kafka.clients.producer.ProducerConfig;

/**
 * Producer settings that keep hop 1 duplicate-free: idempotence on, {@code acks=all}, at most five
 * requests in flight, all set explicitly (KIP-679 changed the defaults in Kafka 3.0; KAFKA-13598 kept
 * idempotence off by mistake in some 3.x releases, and a conflicting acks, retries or in-flight value
 * still switches it off silently). User overrides that would weaken this are refused.
 */
public final class ProducerSafety {

  private ProducerSafety() {
  }

  /**
   * The properties of a framework producer: the user's pass-through values, validated, with the
   * safe settings set explicitly.
   *
   * @param keyPrefix the configuration path of the pass-through block, for error messages
   */
  public static Properties safeProperties(String bootstrap, Map<String, String> overrides, String keyPrefix) {
    check(overrides, keyPrefix);
    Properties p = new Properties();
    p.putAll(overrides);
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.putIfAbsent(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5");
    return p;
  }

  /** Refuses overrides that would silently disable idempotence or weaken durability. */
  public static void check(Map<String, String> overrides, String keyPrefix) {
    String idem = overrides.get(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG);
    if (idem != null && !idem.trim().equalsIgnoreCase("true")) {
      throw new SettingsException(keyPrefix + "." + ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, idem,
          "must be true: without idempotence a retried send is stored twice (hop 1 duplicates); remove it");
    }
    String acks = overrides.get(ProducerConfig.ACKS_CONFIG);
    if (acks != null && !acks.trim().toLowerCase(Locale.ROOT).equals("all") && !acks.trim().equals("-1")) {
      throw new SettingsException(keyPrefix + "." + ProducerConfig.ACKS_CONFIG, acks,
          "must be all (or -1): idempotence requires it and fewer acks can lose acknowledged records; remove it");
    }
    String inFlight = overrides.get(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION);
    if (inFlight != null) {
      int n;
      try {
        n = Integer.parseInt(inFlight.trim());
      } catch (NumberFormatException e) {
        throw new SettingsException(keyPrefix + "." + ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, inFlight,
            "must be an integer between 1 and 5");
      }
      if (n < 1 || n > 5) {
        throw new SettingsException(keyPrefix + "." + ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, inFlight,
            "must be between 1 and 5: more than 5 disables the idempotent producer's ordering and dedup guarantee");
      }
    }
    String retries = overrides.get(ProducerConfig.RETRIES_CONFIG);
    if (retries != null && retries.trim().equals("0")) {
      throw new SettingsException(keyPrefix + "." + ProducerConfig.RETRIES_CONFIG, retries,
          "must not be 0: a send that fails once is then lost; bound delivery.timeout.ms instead");
    }
    String tx = overrides.get(ProducerConfig.TRANSACTIONAL_ID_CONFIG);
    if (tx != null) {
      throw new SettingsException(keyPrefix + "." + ProducerConfig.TRANSACTIONAL_ID_CONFIG, tx,
          "must not be set: Fencepost's producers are idempotent, not transactional; remove it");
    }
  }
}
