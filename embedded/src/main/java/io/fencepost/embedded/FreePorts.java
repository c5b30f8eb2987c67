package io.fencepost.embedded;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Free loopback ports for servers a test starts, in this process or in others. They are taken below
 * the operating system's ephemeral range ({@code /proc/sys/net/ipv4/ip_local_port_range}): a port
 * from that range, free when it is chosen, can be taken by any outgoing connection (a Kafka client's,
 * say) before the server binds it. A port is handed out once per process.
 */
public final class FreePorts {

  private static final Set<Integer> GIVEN = ConcurrentHashMap.newKeySet();
  private static final int LOWEST = 10_000;

  private FreePorts() {
  }

  /** A port that was free on 127.0.0.1 a moment ago, outside the ephemeral range where possible. */
  public static int next() {
    int ephemeralStart = ephemeralStart();
    if (ephemeralStart - LOWEST >= 1_000) {
      for (int attempt = 0; attempt < 500; attempt++) {
        int port = ThreadLocalRandom.current().nextInt(LOWEST, ephemeralStart);
        if (GIVEN.add(port)) {
          if (bindable(port)) {
            return port;
          }
        }
      }
    }
    for (int attempt = 0; ; attempt++) {
      try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
        // The system can hand out a port it just freed again: never the same one twice.
        if (GIVEN.add(socket.getLocalPort()) || attempt >= 100) {
          return socket.getLocalPort();
        }
      } catch (IOException e) {
        throw new UncheckedIOException("cannot find a free loopback port", e);
      }
    }
  }

  private static boolean bindable(int port) {
    try (ServerSocket socket = new ServerSocket()) {
      socket.setReuseAddress(false);
      socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** The first port of the ephemeral range (Linux), or 32768 where it cannot be read. */
  private static int ephemeralStart() {
    try {
      // Read by line: /proc files report size 0, and Files.readString then returns a truncated value.
      try (BufferedReader in = Files.newBufferedReader(Path.of("/proc/sys/net/ipv4/ip_local_port_range"))) {
        int start = Integer.parseInt(in.readLine().trim().split("\\s+")[0]);
        return start >= 1_024 ? start : 32_768;
      }
    } catch (IOException | RuntimeException e) {
      return 32_768;
    }
  }
}
