package io.fencepost.embedded;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;


/** Entry point behind {@link KafkaBroker#main(String[])}. */
final class BrokerMain {

  private BrokerMain() {
  }

  static void run(String[] args) throws IOException, InterruptedException {
    Path dir = null;
    int port = 0;
    List<String[]> topics = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      String flag = args[i];
      if (flag.equals("--help") || flag.equals("-h")) {
        System.out.println("usage: broker [--dir <path>] [--port <n>] [--topic <name>:<partitions>]...");
        return;
      }
      if (!List.of("--dir", "--port", "--topic").contains(flag)) {
        usage("unknown flag [" + flag + "]; accepted: --dir, --port, --topic, --help");
      }
      if (i + 1 >= args.length) {
        usage("flag " + flag + " needs a value");
      }
      String value = args[++i];
      switch (flag) {
        case "--dir" -> dir = Path.of(value);
        case "--port" -> port = parsePort(value);
        case "--topic" -> {
          String[] parts = value.split(":");
          if (parts.length != 2 || !parts[1].matches("[1-9][0-9]*")) {
            usage("--topic must be <name>:<partitions> with partitions >= 1, was [" + value + "]");
          }
          topics.add(parts);
        }
        default -> throw new IllegalStateException(flag);
      }
    }
    KafkaBroker broker = dir == null ? KafkaBroker.onPort(port) : KafkaBroker.create(dir, port, Map.of());
    Runtime.getRuntime().addShutdownHook(new Thread(broker::close, "broker-shutdown"));
    broker.start();
    for (String[] t : topics) {
      broker.createTopic(t[0], Integer.parseInt(t[1]));
    }
    System.out.println("BOOTSTRAP=" + broker.bootstrapServers());
    System.out.flush();
    if (System.getenv(JvmProcess.EXIT_WITH_PARENT) != null) {
      // A child of JvmProcess: runs until killed, or until the parent (a test, the demo) closes our
      // standard input, so that a parent that dies leaves no broker behind.
      InputStream in = System.in;
      while (in.read() != -1) {
        // keep reading
      }
      broker.stop();
      return;
    }
    // Run by hand, in the foreground or in the background (where standard input is /dev/null, or a
    // terminal it may not read): until SIGTERM or Ctrl-C, whose shutdown hook stops the broker.
    System.err.println("broker: running; stop it with Ctrl-C or SIGTERM");
    new CountDownLatch(1).await();
  }

  private static int parsePort(String value) {
    try {
      int port = Integer.parseInt(value);
      if (port < 0 || port > 65535) {
        usage("--port must be between 0 and 65535, was [" + value + "]");
      }
      return port;
    } catch (NumberFormatException e) {
      usage("--port must be a number, was [" + value + "]");
      return -1;
    }
  }

  private static void usage(String message) {
    throw new IllegalArgumentException(message);
  }
}
