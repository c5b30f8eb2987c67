package io.fencepost.embedded;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialAlteration;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.storage.Formatter;
import org.apache.kafka.server.common.MetadataVersion;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real, single-node Apache Kafka broker running in this JVM in KRaft combined mode
 * (broker and controller in one process), on free loopback ports.
 *
 * <p>The broker keeps its data in one directory. {@link #stop()} followed by {@link #start()}
 * restarts it on the same directory and the same ports, so records and committed consumer
 * offsets survive, exactly as they would on a real restart. {@link #close()} stops the broker and,
 * when the directory was created by {@link #create()}, deletes it.
 *
 * <pre>{@code
 * try (KafkaBroker broker = KafkaBroker.create().start()) {
 *   broker.createTopic("payments", 4);
 *   String bootstrap = broker.bootstrapServers();
 * }
 * }</pre>
 *
 * <p>{@link #main(String[])} runs a broker as its own process, for tests that crash the nodes of a
 * pipeline independently of the broker.
 */
public final class KafkaBroker implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(KafkaBroker.class);
  private static final Duration READY_TIMEOUT = Duration.ofSeconds(60);

  private final Path dataDir;
  private final boolean ownsDataDir;
  private final int brokerPort;
  private final int controllerPort;
  private final Map<String, String> overrides;
  private KafkaRaftServer server;
  /** SCRAM-SHA-512 users of the SASL_PLAINTEXT listener (none: no such listener). */
  private final Map<String, String> scramUsers = new TreeMap<>();
  private int saslPort = -1;

  private KafkaBroker(Path dataDir, boolean ownsDataDir, int brokerPort, int controllerPort,
      Map<String, String> overrides) {
    this.dataDir = dataDir;
    this.ownsDataDir = ownsDataDir;
    this.brokerPort = brokerPort;
    this.controllerPort = controllerPort;
    this.overrides = Map.copyOf(overrides);
  }

  /** A broker in a fresh temporary directory (deleted on {@link #close()}), on free ports. */
  public static KafkaBroker create() {
    return onPort(0);
  }

  /**
   * A broker on a new temporary directory, deleted on {@link #close()}, whose clients connect on
   * {@code brokerPort} (0: a free port).
   */
  public static KafkaBroker onPort(int brokerPort) {
    try {
      return new KafkaBroker(Files.createTempDirectory("fencepost-kafka-"), true,
          brokerPort == 0 ? FreePorts.next() : brokerPort, FreePorts.next(), Map.of());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create a temporary directory for the Kafka broker", e);
    }
  }

  /**
   * A broker on the given directory, which is kept on {@link #close()}. A directory that already
   * holds a broker's data is reused (its records survive); an empty one is formatted.
   *
   * @param brokerPort the client port, or 0 for a free one
   * @param overrides broker properties that replace the defaults (e.g. {@code log.retention.ms})
   */
  public static KafkaBroker create(Path dataDir, int brokerPort, Map<String, String> overrides) {
    Objects.requireNonNull(dataDir, "dataDir");
    return new KafkaBroker(dataDir, false, brokerPort == 0 ? FreePorts.next() : brokerPort,
        FreePorts.next(), overrides);
  }

  /**
   * Adds a second client listener, SASL_PLAINTEXT with SCRAM-SHA-512, on which {@code user} may
   * log in with {@code password} (call before {@link #start()}; repeat for more users). The
   * PLAINTEXT listener stays, for the test's own clients. Clients connect with
   * {@link #saslBootstrapServers()} and {@link #scramClientProperties}.
   */
  public synchronized KafkaBroker withScramUser(String user, String password) {
    if (server != null) {
      throw new IllegalStateException("add SCRAM users before the broker starts");
    }
    scramUsers.put(Objects.requireNonNull(user, "user"), Objects.requireNonNull(password, "password"));
    if (saslPort < 0) {
      saslPort = FreePorts.next();
    }
    return this;
  }

  /** The {@code bootstrap.servers} of the SASL_PLAINTEXT listener ({@link #withScramUser}). */
  public String saslBootstrapServers() {
    if (saslPort < 0) {
      throw new IllegalStateException("no SASL listener: call withScramUser before start");
    }
    return "127.0.0.1:" + saslPort;
  }

  /** The client properties that log in as {@code user} on the SASL_PLAINTEXT listener. */
  public static Map<String, String> scramClientProperties(String user, String password) {
    return Map.of("security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "SCRAM-SHA-512",
        "sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
            + user + "\" password=\"" + password + "\";");
  }

  /** Starts the broker (formatting its directory on first start) and waits until it serves requests. */
  public synchronized KafkaBroker start() {
    if (server != null) {
      return this;
    }
    try {
      Files.createDirectories(dataDir);
      KafkaConfig config = new KafkaConfig(brokerProperties(), false);
      if (!Files.exists(logDir().resolve("meta.properties"))) {
        format();
      }
      KafkaRaftServer raft = new KafkaRaftServer(config, Time.SYSTEM);
      raft.startup();
      server = raft;
      awaitReady();
      if (!scramUsers.isEmpty()) {
        addScramUsers();
      }
      log.info("Kafka broker ready at [{}] with data in [{}]", bootstrapServers(), dataDir);
      return this;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot prepare Kafka data directory " + dataDir, e);
    }
  }

  /** Stops the broker, keeping its data directory; {@link #start()} brings it back on the same ports. */
  public synchronized void stop() {
    if (server == null) {
      return;
    }
    KafkaRaftServer raft = server;
    server = null;
    raft.shutdown();
    raft.awaitShutdown();
    log.info("Kafka broker at [{}] stopped", bootstrapServers());
  }

  /** Whether the broker is running. */
  public synchronized boolean isRunning() {
    return server != null;
  }

  /** The {@code bootstrap.servers} value for clients: {@code 127.0.0.1:<port>}. */
  public String bootstrapServers() {
    return "127.0.0.1:" + brokerPort;
  }

  /** The directory holding the broker's logs and metadata. */
  public Path dataDirectory() {
    return dataDir;
  }

  /** Creates a topic with {@code partitions} partitions (replication factor 1); an existing topic is kept. */
  public void createTopic(String topic, int partitions) {
    createTopic(topic, partitions, Map.of());
  }

  /** Sets one config of an existing topic (e.g. {@code max.message.bytes}), as an operator would. */
  public void setTopicConfig(String topic, String key, String value) {
    try (Admin admin = admin()) {
      ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
      admin.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(new ConfigEntry(key, value),
          AlterConfigOp.OpType.SET)))).all().get(30, TimeUnit.SECONDS);
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("cannot set " + key + " = " + value + " on topic [" + topic + "]: " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while setting a config of topic [" + topic + "]", e);
    }
  }

  /** Creates a topic with the given partitions and topic configs; an existing topic is kept. */
  public void createTopic(String topic, int partitions, Map<String, String> configs) {
    try (Admin admin = admin()) {
      try {
        admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1).configs(configs)))
            .all().get(30, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof TopicExistsException)) {
          throw new IllegalStateException("cannot create topic [" + topic + "]: " + e.getCause(), e.getCause());
        }
      }
      awaitLeaders(admin, topic, partitions);
    } catch (IllegalStateException e) {
      throw e;
    } catch (Exception e) {
      throw new IllegalStateException("cannot create topic [" + topic + "]: " + e, e);
    }
  }

  /**
   * createTopics returns before every partition's leader serves it; a producer sending at once can
   * then fail (an idempotent one with OUT_OF_ORDER_SEQUENCE_NUMBER). Waits until the metadata shows
   * a leader for each partition.
   */
  private static void awaitLeaders(Admin admin, String topic, int partitions) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (true) {
      try {
        var description = admin.describeTopics(List.of(topic)).allTopicNames().get(10, TimeUnit.SECONDS).get(topic);
        if (description.partitions().size() >= partitions
            && description.partitions().stream().allMatch(p -> p.leader() != null && !p.leader().isEmpty())) {
          return;
        }
      } catch (ExecutionException e) {
        // not in the metadata yet
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("topic [" + topic + "]: not every partition has a leader after 30 s");
      }
      Thread.sleep(50);
    }
  }

  /** A new admin client on this broker; the caller closes it. */
  public Admin admin() {
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
    props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
    return Admin.create(props);
  }

  /** Stops the broker; deletes its directory when {@link #create()} made it. */
  @Override
  public void close() {
    stop();
    if (ownsDataDir) {
      Directories.deleteRecursively(dataDir);
    }
  }

  private Path logDir() {
    return dataDir.resolve("kraft-combined-logs");
  }

  private Properties brokerProperties() {
    Properties p = new Properties();
    p.put("process.roles", "broker,controller");
    p.put("node.id", "1");
    p.put("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
    if (saslPort < 0) {
      p.put("listeners", "PLAINTEXT://127.0.0.1:" + brokerPort + ",CONTROLLER://127.0.0.1:" + controllerPort);
      p.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + brokerPort);
      p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
    } else {
      p.put("listeners", "PLAINTEXT://127.0.0.1:" + brokerPort + ",SASL_PLAINTEXT://127.0.0.1:" + saslPort
          + ",CONTROLLER://127.0.0.1:" + controllerPort);
      p.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + brokerPort + ",SASL_PLAINTEXT://127.0.0.1:" + saslPort);
      p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT");
      p.put("sasl.enabled.mechanisms", "SCRAM-SHA-512");
      p.put("listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config",
          "org.apache.kafka.common.security.scram.ScramLoginModule required;");
    }
    p.put("controller.listener.names", "CONTROLLER");
    p.put("inter.broker.listener.name", "PLAINTEXT");
    p.put("log.dirs", logDir().toString());
    p.put("offsets.topic.replication.factor", "1");
    p.put("offsets.topic.num.partitions", "4");
    p.put("transaction.state.log.replication.factor", "1");
    p.put("transaction.state.log.min.isr", "1");
    p.put("transaction.state.log.num.partitions", "4");
    p.put("group.initial.rebalance.delay.ms", "0");
    p.put("num.partitions", "1");
    p.put("auto.create.topics.enable", "false");
    p.put("log.flush.interval.messages", Long.toString(Long.MAX_VALUE));
    p.put("num.network.threads", "2");
    p.put("num.io.threads", "4");
    p.put("log.cleaner.dedupe.buffer.size", Integer.toString(2 * 1024 * 1024));
    p.put("shutdown.delay.ms", "0");
    p.putAll(overrides);
    return p;
  }

  private void format() {
    try {
      new Formatter()
          .setPrintStream(new PrintStream(OutputStream.nullOutputStream()))
          .setClusterId(Uuid.randomUuid().toString())
          .setNodeId(1)
          .setControllerListenerName("CONTROLLER")
          .setMetadataLogDirectory(logDir().toString())
          .setDirectories(Set.of(logDir().toString()))
          .setReleaseVersion(MetadataVersion.LATEST_PRODUCTION)
          .run();
    } catch (Exception e) {
      throw new IllegalStateException("cannot format the KRaft log directory " + logDir() + ": " + e, e);
    }
  }

  /** Stores the SCRAM credentials (through the PLAINTEXT listener) and waits until each can log in. */
  private void addScramUsers() {
    List<UserScramCredentialAlteration> upserts = new ArrayList<>();
    scramUsers.forEach((user, password) -> upserts.add(new UserScramCredentialUpsertion(
        user, new ScramCredentialInfo(
            ScramMechanism.SCRAM_SHA_512, 4096), password)));
    try (Admin admin = admin()) {
      admin.alterUserScramCredentials(upserts).all().get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException("cannot store SCRAM credentials on the broker: " + e, e);
    }
    long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
    for (Map.Entry<String, String> user : scramUsers.entrySet()) {
      Exception last = null;
      while (true) {
        Properties props = new Properties();
        props.putAll(scramClientProperties(user.getKey(), user.getValue()));
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, saslBootstrapServers());
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "5000");
        try (Admin admin = Admin.create(props)) {
          admin.describeCluster().nodes().get(5, TimeUnit.SECONDS);
          break;
        } catch (Exception e) {
          last = e;
        }
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("SCRAM user [" + user.getKey() + "] cannot log in at "
              + saslBootstrapServers() + " within " + READY_TIMEOUT.toSeconds() + " s", last);
        }
        sleep(100);
      }
    }
  }

  private void awaitReady() {
    long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
    Exception last = null;
    while (System.nanoTime() < deadline) {
      try (Admin admin = admin()) {
        if (!admin.describeCluster().nodes().get(5, TimeUnit.SECONDS).isEmpty()) {
          return;
        }
      } catch (Exception e) {
        last = e;
      }
      sleep(100);
    }
    throw new IllegalStateException("Kafka broker at " + bootstrapServers() + " did not become ready within "
        + READY_TIMEOUT.toSeconds() + " s", last);
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for the Kafka broker", e);
    }
  }

  /**
   * Runs a broker as its own process until it is killed or its standard input closes.
   *
   * <p>Arguments: {@code --dir <path>} (data directory, default a new temporary one),
   * {@code --port <n>} (client port, default free), {@code --topic <name>:<partitions>} (repeatable).
   * Prints {@code BOOTSTRAP=<host:port>} on standard output once ready, for a parent process to read.
   */
  public static void main(String[] args) throws Exception {
    try {
      BrokerMain.run(args);
    } catch (IllegalArgumentException e) {
      System.err.println("broker: " + e.getMessage());
      System.exit(2);
    }
  }

  /**
   * What {@link #main} runs, for a command line of its own ({@code fencepost broker}): a mistake in
   * {@code args} throws {@link IllegalArgumentException} naming the flag instead of ending the process.
   */
  public static void runCommand(String[] args) throws IOException, InterruptedException {
    BrokerMain.run(args);
  }

  /** A helper for random names; topics and groups in tests should be fresh per test. */
  public static String uniqueName(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }
}
