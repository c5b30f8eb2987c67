package io.fencepost.kafka;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

import io.fencepost.PartitionId;
import io.fencepost.PartitionStatus;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;

/**
 * What a running pipeline says about itself on this node: each partition's view (its actor asked,
 * the log end read) and the node's health (alive, ready, and why not, in words).
 */
final class PipelineStatus {

  private final PipelineSettings settings;
  private final Admin admin;
  private final Map<String, Object> consumerProperties;
  private final PartitionOwnership ownership;
  private final SeekTargets targets;
  private final JournalLiveness journal;
  private final Ticker ticker;

  PipelineStatus(PipelineSettings settings, Admin admin, Map<String, Object> consumerProperties,
      PartitionOwnership ownership, SeekTargets targets, JournalLiveness journal, Ticker ticker) {
    this.ticker = ticker;
    this.settings = settings;
    this.admin = admin;
    this.consumerProperties = consumerProperties;
    this.ownership = ownership;
    this.targets = targets;
    this.journal = journal;
  }

  /** See {@link Pipeline#status()}. */
  CompletionStage<List<PartitionView>> status() {
    List<PartitionId> ids = new ArrayList<>(ownership.assigned().keySet());
    Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
    for (PartitionId id : ids) {
      specs.put(new TopicPartition(id.topic(), id.partition()), OffsetSpec.latest());
    }
    CompletionStage<Map<TopicPartition, Long>> ends = admin.listOffsets(specs).all().toCompletionStage()
        .thenApply(m -> {
          Map<TopicPartition, Long> out = new HashMap<>();
          m.forEach((tp, info) -> out.put(tp, info.offset()));
          return out;
        })
        .exceptionally(e -> Map.of());
    List<CompletableFuture<PartitionStatus>> statuses = new ArrayList<>();
    Duration probe = settings.askTimeout().compareTo(Duration.ofSeconds(5)) < 0 ? settings.askTimeout()
        : Duration.ofSeconds(5);
    for (PartitionId id : ids) {
      statuses.add(targets.askStatus(id, probe).toCompletableFuture());
    }
    return ends.thenCompose(endOffsets -> CompletableFuture.allOf(statuses.toArray(new CompletableFuture[0]))
        .handle((v, e) -> {
          List<PartitionView> views = new ArrayList<>();
          for (int i = 0; i < ids.size(); i++) {
            PartitionId id = ids.get(i);
            PartitionProgress progress = ownership.assigned().getOrDefault(id,
                new PartitionProgress(ticker.nanoTime()));
            PartitionStatus s = statuses.get(i).isCompletedExceptionally() ? null : statuses.get(i).join();
            Long end = endOffsets.get(new TopicPartition(id.topic(), id.partition()));
            OptionalLong next = s == null ? OptionalLong.empty() : s.nextOffset();
            // Without the actor's answer its stored offset is unknown, and so is the lag.
            OptionalLong lag = end == null || s == null ? OptionalLong.empty() : OptionalLong.of(end - next.orElse(0));
            views.add(new PartitionView(id, s == null ? PartitionView.UNANSWERED : s.node(), next, lag,
                s == null ? 0 : s.appliedRecords(), s == null ? 0 : s.droppedByKey(),
                s == null ? 0 : s.droppedRedelivery(), s == null ? 0 : s.deadLettered(), progress.retries.get(),
                progress.lastError, progress.halted == null ? "" : progress.halted));
          }
          views.sort(Comparator.comparing((PartitionView pv) -> pv.partition().topic())
              .thenComparingInt(pv -> pv.partition().partition()));
          return views;
        }));
  }

  /** See {@link Pipeline#health()}; {@code stopping} once its stop began. */
  PipelineHealth health(boolean stopping) {
    String name = "[" + settings.name() + "] ";
    if (!ownership.running() && !stopping) {
      return new PipelineHealth(settings.name(), false, false, name + "its consumer thread ended without a stop");
    }
    long maxPoll = maxPollIntervalMillis();
    long sinceTurn = ownership.sinceLastTurnNanos() / 1_000_000;
    if (!stopping && sinceTurn > maxPoll) {
      return new PipelineHealth(settings.name(), false, false, name + "its consumer thread is stuck: it has not gone "
          + "round its loop for " + sinceTurn / 1000 + " s (max.poll.interval.ms " + maxPoll + ")");
    }
    if (!stopping) {
      String dead = journal.deadReason(settings.deadAfter());
      if (!dead.isEmpty()) {
        return new PipelineHealth(settings.name(), false, false, name + dead);
      }
    }
    String notReady = notReadyReason(stopping);
    return new PipelineHealth(settings.name(), true, notReady.isEmpty(), notReady.isEmpty() ? "" : name + notReady);
  }

  /** Why this node's part of the pipeline is not ready, or empty. */
  private String notReadyReason(boolean stopping) {
    if (stopping) {
      return "stopping";
    }
    String failure = ownership.consumerFailure();
    if (failure != null) {
      return "its consumer failed and is being replaced: " + failure;
    }
    String missing = journal.missingReason();
    if (!missing.isEmpty()) {
      return missing;
    }
    if (!ownership.joined()) {
      return "waiting for an assignment from group [" + settings.groupId() + "]";
    }
    long sinceChange = ownership.sinceAssignmentChangedNanos();
    if (sinceChange < PipelineHealth.SETTLE.toNanos()) {
      return "its assignment changed " + sinceChange / 1_000_000 + " ms ago (a rebalance may have a second round)";
    }
    long now = ticker.nanoTime();
    List<String> problems = new ArrayList<>();
    Map<PartitionId, PartitionProgress> byPartition = new TreeMap<>(
        Comparator.comparing(PartitionId::topic).thenComparingInt(PartitionId::partition));
    byPartition.putAll(ownership.assigned());
    byPartition.forEach((id, p) -> {
      String tp = id.topic() + "-" + id.partition();
      if (p.halted != null) {
        problems.add(tp + " halted: " + (p.halted.length() > 160 ? p.halted.substring(0, 160) + "..." : p.halted));
      } else if (!p.flowing) {
        problems.add(tp + " recovering for " + (now - p.assignedNanos) / 1_000_000_000 + " s");
      } else if (p.stalled(settings.stallTimeout(), now)) {
        String error = Objects.toString(p.lastError, "");
        problems.add(tp + " stalled: no batch finished for " + (now - Math.max(p.lastProgressNanos,
            p.busySinceNanos)) / 1_000_000_000 + " s" + (error.isEmpty() ? "" : " (" + error + ")"));
      }
    });
    return String.join("; ", problems);
  }

  private long maxPollIntervalMillis() {
    try {
      return Long.parseLong(String.valueOf(consumerProperties.getOrDefault(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG,
          "300000")).trim());
    } catch (NumberFormatException e) {
      return 300_000;
    }
  }
}
