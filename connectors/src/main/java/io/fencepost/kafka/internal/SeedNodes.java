package io.fencepost.kafka.internal;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.Optional;

import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.AddressFromURIString;

/** Compares seed node addresses with a node's own as addresses, not as strings. */
public final class SeedNodes {

  private SeedNodes() {
  }

  /**
   * Whether {@code seed} ({@code pekko://system@host:port}) names the node at {@code self}: same
   * protocol, system and port, and hosts that are equal or resolve to a common IP address (a host
   * name in the seed list, an IP as the canonical address). A seed that does not parse or resolve is
   * not this node.
   */
  public static boolean isSelf(String seed, Address self) {
    Address address;
    try {
      address = AddressFromURIString.parse(seed);
    } catch (Exception e) {   // (MalformedURLException, thrown without being declared)
      return false;
    }
    if (!address.protocol().equals(self.protocol()) || !address.system().equals(self.system())
        || !address.getPort().equals(self.getPort())) {
      return false;
    }
    Optional<String> host = address.getHost();
    Optional<String> own = self.getHost();
    if (host.isEmpty() || own.isEmpty()) {
      return host.equals(own);
    }
    if (host.get().equalsIgnoreCase(own.get())) {
      return true;
    }
    try {
      InetAddress[] ours = InetAddress.getAllByName(own.get());
      return Arrays.stream(InetAddress.getAllByName(host.get())).anyMatch(a -> Arrays.asList(ours).contains(a));
    } catch (UnknownHostException e) {
      return false;
    }
  }
}
