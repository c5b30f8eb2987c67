package io.fencepost.embedded;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValueFactory;

/**
 * Mutual TLS for the Pekko cluster's Artery transport ({@code tls-tcp}), for tests: generates a
 * PKCS12 key store with the JDK's {@code keytool} and gives the configuration that uses it.
 * Nodes that share a key store (or trust each other's certificates) form a cluster; a node whose
 * certificate its peers do not trust cannot join or send them anything.
 */
public final class ClusterTls {

  private ClusterTls() {
  }

  /**
   * A new key store at {@code dir/name.p12} holding one self-signed RSA key pair for
   * {@code CN=name} (valid for 127.0.0.1 and localhost), protected by {@code password}.
   */
  public static Path selfSignedKeyStore(Path dir, String name, String password) {
    Path store = dir.resolve(name + ".p12");
    try {
      Files.createDirectories(dir);
      Files.deleteIfExists(store);
      Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "keytool").toString(),
          "-genkeypair", "-alias", name, "-keyalg", "RSA", "-keysize", "2048", "-validity", "2",
          "-dname", "CN=" + name, "-ext", "SAN=ip:127.0.0.1,dns:localhost", "-storetype", "PKCS12",
          "-keystore", store.toString(), "-storepass", password, "-keypass", password)
          .redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes());
      if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IllegalStateException("keytool could not create " + store + ": " + out);
      }
      return store;
    } catch (IOException e) {
      throw new IllegalStateException("cannot run keytool for " + store + ": " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /**
   * Artery over TLS with mutual authentication: this node presents the key in {@code keyStore} and
   * accepts peers whose certificate is in {@code trustStore} (PKCS12 files, one password).
   */
  public static Config config(Path keyStore, Path trustStore, String password) {
    String engine = "pekko.remote.artery.ssl.config-ssl-engine.";
    return ConfigFactory.empty()
        .withValue("pekko.remote.artery.transport", ConfigValueFactory.fromAnyRef("tls-tcp"))
        .withValue(engine + "key-store", ConfigValueFactory.fromAnyRef(keyStore.toAbsolutePath().toString()))
        .withValue(engine + "trust-store", ConfigValueFactory.fromAnyRef(trustStore.toAbsolutePath().toString()))
        .withValue(engine + "key-store-password", ConfigValueFactory.fromAnyRef(password))
        .withValue(engine + "key-password", ConfigValueFactory.fromAnyRef(password))
        .withValue(engine + "trust-store-password", ConfigValueFactory.fromAnyRef(password))
        .withValue(engine + "require-mutual-authentication", ConfigValueFactory.fromAnyRef(true))
        .withValue(engine + "protocol", ConfigValueFactory.fromAnyRef("TLSv1.3"))
        .withValue(engine + "enabled-algorithms", ConfigValueFactory.fromIterable(List.of("TLS_AES_256_GCM_SHA384",
            "TLS_AES_128_GCM_SHA256")));
  }
}
