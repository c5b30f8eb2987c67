package io.fencepost.management.internal;

import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.fencepost.kafka.ClusterMembership;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.PartitionView;
import io.fencepost.kafka.Pipeline;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCode;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.server.Directives;
import org.apache.pekko.http.javadsl.server.PathMatchers;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.management.javadsl.ManagementRouteProvider;
import org.apache.pekko.management.javadsl.ManagementRouteProviderSettings;

/**
 * Pekko Management route: {@code GET /pipelines/<name>/partitions} is the cluster view of a
 * pipeline running on this node ({@link Pipeline#clusterStatus()}): one JSON object per partition
 * of its topics, whichever node owns it. 404 naming the pipelines that run here when none has the name.
 * {@code GET /cluster} is this node's {@link ClusterMembership}: {@code {"node", "member", "starts",
 * "notMember" (why not, when not), "members": {address: status}}}; 404 on a node without one.
 */
public final class PipelineRoutes implements ManagementRouteProvider {

  private static final ObjectMapper JSON = new ObjectMapper();

  private final ActorSystem<?> system;

  public PipelineRoutes(ExtendedActorSystem system) {
    this.system = Adapter.toTyped(system);
  }

  @Override
  public Route routes(ManagementRouteProviderSettings settings) {
    return Directives.concat(
        Directives.pathPrefix("pipelines", () -> Directives.pathPrefix(PathMatchers.segment(), name ->
            Directives.path("partitions", () -> Directives.get(() -> Directives.completeWithFuture(partitions(name)))))),
        Directives.path("cluster", () -> Directives.get(() -> Directives.completeWithFuture(cluster()))));
  }

  /** This node's {@link ClusterMembership}: whether it is a member, why not, and the members it sees. */
  private CompletionStage<HttpResponse> cluster() {
    Optional<ClusterMembership> membership = ClusterMembership.of(system);
    if (membership.isEmpty()) {
      return respond(StatusCodes.NOT_FOUND, error("this node runs no ClusterMembership (its pipelines' actor system "
          + "is its cluster node, if any): see docs/deployment.md, \"What the cluster is for\""));
    }
    ClusterMembership m = membership.get();
    ObjectNode o = JSON.createObjectNode();
    o.put("node", m.node());
    o.put("member", m.isMember());
    o.put("starts", m.starts());
    m.notMemberReason().ifPresent(r -> o.put("notMember", r));
    ObjectNode members = o.putObject("members");
    m.members().forEach(members::put);
    return respond(StatusCodes.OK, o.toString());
  }

  private CompletionStage<HttpResponse> partitions(String name) {
    List<Pipeline> running = KafkaPipeline.running(system);
    Optional<Pipeline> pipeline = running.stream().filter(p -> p.name().equals(name)).findFirst();
    if (pipeline.isEmpty()) {
      return respond(StatusCodes.NOT_FOUND, error("no pipeline [" + name + "] runs on this node; running: "
          + running.stream().map(Pipeline::name).toList()));
    }
    return pipeline.get().clusterStatus().thenApply(views -> {
      ArrayNode array = JSON.createArrayNode();
      views.forEach(v -> array.add(json(v)));
      return response(StatusCodes.OK, array.toString());
    }).exceptionally(e -> {
      Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
      return response(StatusCodes.SERVICE_UNAVAILABLE, error(String.valueOf(cause.getMessage())));
    });
  }

  static ObjectNode json(PartitionView v) {
    ObjectNode o = JSON.createObjectNode();
    o.put("topic", v.partition().topic());
    o.put("partition", v.partition().partition());
    o.put("owner", v.ownerNode());
    if (v.nextOffset().isPresent()) {
      o.put("nextOffset", v.nextOffset().getAsLong());
    } else {
      o.putNull("nextOffset");
    }
    if (v.lag().isPresent()) {
      o.put("lag", v.lag().getAsLong());
    } else {
      o.putNull("lag");
    }
    o.put("applied", v.appliedRecords());
    o.put("deadLettered", v.deadLettered());
    o.put("halted", !v.halted().isEmpty());
    if (!v.halted().isEmpty()) {
      o.put("haltedReason", v.halted());
    }
    return o;
  }

  private static String error(String message) {
    return JSON.createObjectNode().put("error", message).toString();
  }

  private static CompletionStage<HttpResponse> respond(StatusCode status, String body) {
    return CompletableFuture.completedFuture(response(status, body));
  }

  private static HttpResponse response(StatusCode status, String body) {
    return HttpResponse.create().withStatus(status).withEntity(HttpEntities.create(ContentTypes.APPLICATION_JSON, body));
  }
}
