package io.fencepost.benchmarks;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.fencepost.embedded.FreePorts;
import io.fencepost.embedded.JvmProcess;
import org.apache.pekko.actor.AbstractActor;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.Props;
import org.apache.pekko.pattern.Patterns;

/**
 * What one ask over Pekko Artery (TCP on loopback) costs in CPU on this machine, with nothing of
 * Fencepost in it: an echo actor in a second JVM, asked {@value #RATE} times a second from this one for
 * {@value #SECONDS} s (a short string each way, Pekko's own string serializer); each JVM's process CPU
 * with the asks, less over as long without, per ask. It is the floor under the CPU a remote query takes
 * ({@link QueryLatency}): a remote query is one such ask, plus routing and the answer.
 *
 * <p>Run: {@code ArteryFloor}; three measurements, the first one still compiling the path.
 */
final class ArteryFloor {

  static final int RATE = 1_000;
  static final int SECONDS = 10;
  static final int MEASUREMENTS = 3;

  private ArteryFloor() {
  }

  public static void main(String[] args) throws Exception {
    if (args.length == 2 && args[0].equals("echo")) {
      echo(Integer.parseInt(args[1]));
      return;
    }
    try {
      run(System.out);
      System.exit(0);
    } catch (Exception | Error e) {
      e.printStackTrace();
      System.exit(1);
    }
  }

  private static Config config(int port) {
    return ConfigFactory.parseString("pekko.actor.provider = remote\n"
        + "pekko.remote.artery.canonical.hostname = \"127.0.0.1\"\n"
        + "pekko.remote.artery.canonical.port = " + port + "\n"
        + "pekko.remote.warn-about-direct-use = off\n"
        + "pekko.loglevel = WARNING").withFallback(ConfigFactory.load());
  }

  /** The second JVM: an echo actor at /user/echo. */
  private static void echo(int port) throws Exception {
    ActorSystem system = ActorSystem.create("floor", config(port));
    system.actorOf(Props.create(Echo.class), "echo");
    System.out.println("READY");
    system.getWhenTerminated().toCompletableFuture().get();
  }

  /** Replies with what it was sent. */
  static final class Echo extends AbstractActor {
    @Override
    public Receive createReceive() {
      return receiveBuilder().matchAny(m -> getSender().tell(m, getSelf())).build();
    }
  }

  private static void run(PrintStream out) throws Exception {
    int echoPort = FreePorts.next();
    Path log = Path.of("target", "artery-floor", "echo.log").toAbsolutePath();
    try (JvmProcess echo = JvmProcess.start("echo", ArteryFloor.class.getName(), List.of("echo",
        Integer.toString(echoPort)), log)) {
      echo.awaitLine("READY", Duration.ofSeconds(60));
      ActorSystem system = ActorSystem.create("floor", config(FreePorts.next()));
      try {
        ActorRef target = system.actorSelection("pekko://floor@127.0.0.1:" + echoPort + "/user/echo")
            .resolveOne(Duration.ofSeconds(10)).toCompletableFuture().get(15, TimeUnit.SECONDS);
        out.printf(Locale.ROOT, "echo actor in JVM %d, asked from this one over Artery TCP on loopback%n", echo.pid());
        for (int m = 1; m <= MEASUREMENTS; m++) {
          Thread.sleep(1_000);   // the last answers of the asks before
          long[] quiet = ProcessCpu.over(echo.pid(), SECONDS);
          Asks asks = new Asks(target);
          long[] busy = ProcessCpu.over(echo.pid(), SECONDS);
          asks.stop();
          long answered = asks.answered.get();
          out.printf(Locale.ROOT, "measurement %d: %,d asks/s for %d s, %,d answered, %,d failed; CPU per ask: asking "
              + "JVM %.0f us, answering JVM %.0f us, %.0f us in all%n", m, RATE, SECONDS, answered, asks.failed.get(),
              ProcessCpu.microsEach(busy[0] - quiet[0], answered), ProcessCpu.microsEach(busy[1] - quiet[1], answered),
              ProcessCpu.microsEach(busy[0] + busy[1] - quiet[0] - quiet[1], answered));
        }
      } finally {
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
      }
    }
  }

  /** Open-loop asks at {@value #RATE}/s. */
  private static final class Asks {
    final AtomicLong answered = new AtomicLong();
    final AtomicLong failed = new AtomicLong();
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "asks");
      t.setDaemon(true);
      return t;
    });

    Asks(ActorRef target) {
      AtomicLong n = new AtomicLong();
      timer.scheduleAtFixedRate(() -> {
        CompletableFuture<Object> reply = Patterns.ask(target, "ping-" + n.incrementAndGet(), Duration.ofSeconds(5))
            .toCompletableFuture();
        reply.whenComplete((r, e) -> (e == null ? answered : failed).incrementAndGet());
      }, 0, 1_000_000L / RATE, TimeUnit.MICROSECONDS);
    }

    void stop() throws InterruptedException {
      timer.shutdown();
      timer.awaitTermination(5, TimeUnit.SECONDS);
    }
  }
}
