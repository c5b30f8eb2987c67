package io.fencepost.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import org.junit.jupiter.api.Test;

class TransportCheckTest {

  private static Config with(String hocon) {
    return ConfigFactory.parseString(hocon).withFallback(ConfigFactory.defaultReference());
  }

  @Test
  void plainTcpBeyondLoopbackIsWarnedAboutAndNothingElse() {
    assertEquals(Optional.empty(), TransportCheck.plainTcpWarning(with("pekko.actor.provider = local")));
    assertEquals(Optional.empty(), TransportCheck.plainTcpWarning(with(
        "pekko.actor.provider = cluster\npekko.remote.artery.canonical.hostname = \"127.0.0.1\"")));
    assertEquals(Optional.empty(), TransportCheck.plainTcpWarning(with(
        "pekko.actor.provider = cluster\npekko.remote.artery.canonical.hostname = \"10.0.0.11\"\n"
            + "pekko.remote.artery.transport = tls-tcp")));
    Optional<String> warning = TransportCheck.plainTcpWarning(with(
        "pekko.actor.provider = cluster\npekko.remote.artery.canonical.hostname = \"10.0.0.11\""));
    assertTrue(warning.orElseThrow().startsWith("the Pekko cluster port on [10.0.0.11] accepts plain TCP"),
        warning.toString());
    assertTrue(TransportCheck.plainTcpWarning(with("pekko.actor.provider = cluster\n"
        + "pekko.remote.artery.canonical.hostname = \"127.0.0.1\"\npekko.remote.artery.bind.hostname = \"0.0.0.0\""))
        .isPresent(), "bound to every interface");
    assertTrue(TransportCheck.plainTcpWarning(with("pekko.actor.provider = cluster")).isPresent(),
        "Pekko's default canonical hostname is this machine's address");
  }
}
