package io.fencepost.kafka.internal;

import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.AddressFromURIString;

/** Compares seed node addresses with a node's own as addresses, not as strings. */
public final class SeedNodes {

  private SeedNodes() {
  }

  /**
   * Whether {@code seed} ({@code pekko://system@host:port}) is the address {@code self}, as Pekko compares
   * them: protocol, system, host and port equal once parsed. (A seed that names the node by another
   * host name is not the node to Pekko either: it never joins through it, and remoting drops messages
   * sent to it.) A seed that does not parse is not this node.
   */
  public static boolean isSelf(String seed, Address self) {
    try {
      return AddressFromURIString.parse(seed).equals(self);
    } catch (Exception e) {   // (MalformedURLException, thrown without being declared)
      return false;
    }
  }
}
