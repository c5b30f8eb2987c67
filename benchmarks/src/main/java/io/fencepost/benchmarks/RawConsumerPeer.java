package io.fencepost.benchmarks;

import java.time.Duration;
import java.util.List;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;

/**
 * The upper bound: a plain KafkaConsumer crediting an in-memory map and committing after each poll
 * (at-least-once, nothing durable). Latency ends when the record's in-memory effect is done.
 */
final class RawConsumerPeer implements Peer {

  @Override
  public String name() {
    return "raw";
  }

  @Override
  public String description() {
    return "raw KafkaConsumer, in-memory effect, commit per poll";
  }

  @Override
  public Promise promise() {
    return Promise.AT_LEAST_ONCE;
  }

  @Override
  public Outcome run(Run run) {
    Heap.resetPeak();
    int records = records(run.workload());
    MemoryLedger ledger = new MemoryLedger();
    Latency.Recorder latency = run.latency() ? run.probe().recorder() : null;
    Progress progress = new Progress();
    long deadline = System.nanoTime() + Consumers.RUN_TIMEOUT.toNanos();
    try (KafkaConsumer<String, String> consumer = Consumers.create(run.infra().bootstrapServers(),
        run.infra().uniqueName("bench-raw"))) {
      consumer.subscribe(List.of(run.topic()));
      boolean ready = false;
      while (ledger.distinct() < records && System.nanoTime() < deadline) {
        var polled = consumer.poll(Duration.ofMillis(100));
        if (!ready && consumer.assignment().size() == run.partitions()) {
          ready = true;
          progress.started();
          run.ready();
        }
        for (ConsumerRecord<String, String> r : polled) {
          progress.started();
          ledger.credit(Payment.parse(r.value()));
          if (latency != null) {
            latency.done(r.timestamp());
          }
        }
        if (!polled.isEmpty()) {
          consumer.commitSync();
        }
      }
      progress.finished();
    }
    return ledger.outcome(records, progress.seconds(), Heap.peakMib(), latency == null ? null : run.probe().steady());
  }
}
