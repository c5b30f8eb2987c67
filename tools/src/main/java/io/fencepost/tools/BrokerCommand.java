package io.fencepost.tools;

import io.fencepost.embedded.KafkaBroker;

/** {@code fencepost broker}: a standalone in-process Kafka broker for multi-process runs. */
final class BrokerCommand implements Main.Command {

  @Override
  public int run(String[] args) throws Exception {
    try {
      KafkaBroker.runCommand(args);
    } catch (IllegalArgumentException e) {
      throw new Flags.UsageError("broker: " + e.getMessage());
    }
    return 0;
  }

  @Override
  public String summary() {
    return "run a single-node KRaft Kafka broker in this process (--dir, --port, --topic name:partitions)";
  }
}
