package io.fencepost.kafka;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Locale;
import java.util.Optional;

import com.typesafe.config.Config;

/**
 * Says when a node's cluster port accepts plain TCP from beyond this machine: any process that
 * reaches it could join the cluster. Logged once as a WARN when a pipeline starts.
 */
final class TransportCheck {

  private TransportCheck() {
  }

  static Optional<String> plainTcpWarning(Config config) {
    String provider = config.getString("pekko.actor.provider").toLowerCase(Locale.ROOT);
    if (!provider.contains("cluster") && !provider.contains("remote")) {
      return Optional.empty();
    }
    String transport = config.getString("pekko.remote.artery.transport");
    if (!transport.equals("tcp")) {
      return Optional.empty();   // tls-tcp, or aeron-udp (which has no TLS and is not Fencepost's concern)
    }
    String bind = config.getString("pekko.remote.artery.bind.hostname");
    String host = bind.isEmpty() ? config.getString("pekko.remote.artery.canonical.hostname") : bind;
    if (isLoopback(host)) {
      return Optional.empty();
    }
    return Optional.of("the Pekko cluster port on [" + host + "] accepts plain TCP beyond this machine: any process "
        + "that reaches it can join the cluster and message its actors. Use pekko.remote.artery.transport = tls-tcp "
        + "with mutual authentication (docs/security.md), or keep the port on a private network");
  }

  private static boolean isLoopback(String host) {
    if (host.equals("<getHostAddress>") || host.equals("<getHostName>") || host.equals("0.0.0.0")
        || host.equals("::")) {
      return false;
    }
    try {
      return InetAddress.getByName(host).isLoopbackAddress();
    } catch (UnknownHostException e) {
      return false;
    }
  }
}
