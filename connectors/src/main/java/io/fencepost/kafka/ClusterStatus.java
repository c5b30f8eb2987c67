package io.fencepost.kafka;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

import io.fencepost.PartitionId;
import io.fencepost.kafka.internal.NodeNames;
import io.fencepost.kafka.internal.StatusRequest;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;

/**
 * Every partition of a pipeline across the cluster: each node's pipeline registers a small actor
 * under the pipeline's key (its consumer group) that answers with {@link Pipeline#status()}; the
 * cluster view asks every registered node and lists every partition of the pipeline's topics,
 * those without an owner that answered included ({@link #NO_OWNER}).
 */
final class ClusterStatus {

  /** {@link PartitionView#ownerNode()} of a partition no node reported. */
  static final String NO_OWNER = "-";

  private static final AtomicLong RESPONDERS = new AtomicLong();

  private final ActorSystem<?> system;
  private final Membership membership;
  private final PipelineSettings settings;
  private final TopicPartitionCounts counts;
  private final ActorRef<Object> responder;
  private final ServiceKey<StatusRequest> key;

  ClusterStatus(ActorSystem<?> system, PipelineSettings settings, TopicPartitionCounts counts,
      Supplier<CompletionStage<List<PartitionView>>> status) {
    this.system = system;
    this.membership = Membership.of(system);
    this.settings = settings;
    this.counts = counts;
    this.key = ServiceKey.create(StatusRequest.class, "fencepost-pipeline|" + settings.groupId());
    this.responder = system.systemActorOf(responder(status), "fencepost-status-"
        + URLEncoder.encode(settings.name(), StandardCharsets.UTF_8) + "-" + RESPONDERS.incrementAndGet(),
        Props.empty());
    membership.serve(key, responder.narrow());
  }

  private enum Close { INSTANCE }

  private Behavior<Object> responder(Supplier<CompletionStage<List<PartitionView>>> status) {
    String node = NodeNames.of(system);
    return Behaviors.receive(Object.class)
        .onMessage(StatusRequest.class, q -> {
          status.get().whenComplete((views, e) ->
              q.replyTo().tell(new StatusRequest.Reply(node, e == null ? views.stream().map(ClusterStatus::row).toList()
                  : List.of())));
          return Behaviors.same();
        })
        .onMessageEquals(Close.INSTANCE, Behaviors::stopped)
        .build();
  }

  /** Every partition of the pipeline's topics, by topic and partition, as the nodes that own them report. */
  CompletionStage<List<PartitionView>> all() {
    Duration timeout = settings.askTimeout().compareTo(Duration.ofSeconds(10)) < 0 ? settings.askTimeout()
        : Duration.ofSeconds(10);
    Optional<String> localOnly = membership.localOnly();
    Optional<ActorSystem<?>> cluster = membership.cluster();
    if (localOnly.isPresent() || cluster.isEmpty()) {
      return CompletableFuture.failedFuture(new IllegalStateException("[" + settings.name() + "] the cluster view "
          + "cannot be listed on this node now: " + localOnly.orElse("it is not a cluster member") + "; "
          + "Pipeline.status() lists this node's partitions"));
    }
    ActorSystem<?> via = cluster.get();
    CompletionStage<Set<ActorRef<StatusRequest>>> nodes = bounded(() -> AskPattern.<Receptionist.Command,
        Receptionist.Listing>ask(via.receptionist(), replyTo -> Receptionist.find(key, replyTo), timeout,
        via.scheduler()), timeout).thenApply(listing -> listing.getServiceInstances(key));
    return nodes.thenCompose(refs -> {
      List<CompletableFuture<StatusRequest.Reply>> replies = new ArrayList<>();
      for (ActorRef<StatusRequest> ref : refs) {
        replies.add(bounded(() -> AskPattern.<StatusRequest, StatusRequest.Reply>ask(ref, StatusRequest::new, timeout,
            via.scheduler()), timeout).exceptionally(e -> null));
      }
      List<CompletableFuture<Integer>> topicCounts = settings.topics().stream()
          .map(t -> counts.of(t).toCompletableFuture().exceptionally(e -> 0)).toList();
      List<CompletableFuture<?>> all = new ArrayList<>(replies);
      all.addAll(topicCounts);
      return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).thenApply(v -> {
        Map<PartitionId, PartitionView> byPartition = new TreeMap<>(Comparator.comparing(PartitionId::topic)
            .thenComparingInt(PartitionId::partition));
        for (CompletableFuture<StatusRequest.Reply> r : replies) {
          StatusRequest.Reply reply = r.join();
          if (reply != null) {
            // Two nodes may both report a partition while it moves: the one further ahead is its owner.
            reply.rows().stream().map(ClusterStatus::view).forEach(view -> byPartition.merge(view.partition(), view,
                (a, b) -> b.nextOffset().orElse(-1) > a.nextOffset().orElse(-1) ? b : a));
          }
        }
        for (int t = 0; t < settings.topics().size(); t++) {
          for (int p = 0; p < topicCounts.get(t).join(); p++) {
            byPartition.putIfAbsent(new PartitionId(settings.groupId(), settings.topics().get(t), p),
                new PartitionView(new PartitionId(settings.groupId(), settings.topics().get(t), p), NO_OWNER,
                    OptionalLong.empty(), OptionalLong.empty(), 0, 0, 0, 0, 0, "", ""));
          }
        }
        return List.copyOf(byPartition.values());
      });
    });
  }

  /** An ask bounded by the JDK's timer too, continuing on this system's dispatcher ({@link Stages#bounded}). */
  private <T> CompletableFuture<T> bounded(Supplier<CompletionStage<T>> ask, Duration timeout) {
    return Stages.bounded(ask, timeout.toMillis() + 100, system.executionContext());
  }

  private static StatusRequest.Row row(PartitionView v) {
    return new StatusRequest.Row(v.partition(), v.ownerNode(), v.nextOffset().orElse(Long.MIN_VALUE),
        v.lag().orElse(Long.MIN_VALUE), v.appliedRecords(), v.droppedByKey(), v.droppedRedelivery(), v.deadLettered(),
        v.retries(), v.lastError() == null ? "" : v.lastError(), v.halted() == null ? "" : v.halted());
  }

  private static PartitionView view(StatusRequest.Row r) {
    return new PartitionView(r.partition(), r.ownerNode(), optional(r.nextOffset()), optional(r.lag()),
        r.appliedRecords(), r.droppedByKey(), r.droppedRedelivery(), r.deadLettered(), r.retries(), r.lastError(),
        r.halted());
  }

  private static OptionalLong optional(long value) {
    return value == Long.MIN_VALUE ? OptionalLong.empty() : OptionalLong.of(value);
  }

  void close() {
    membership.unserve(key, responder.narrow());
    responder.tell(Close.INSTANCE);
  }
}
