package io.fencepost.examples;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.fencepost.errors.PartitionMovingException;
import io.fencepost.errors.PositionNotReachedException;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.QueryOptions;
import io.fencepost.kafka.QueryResult;
import io.fencepost.kafka.QueryTarget;
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
 * {@code GET /balances/{merchant}[?after=<partition>:<offset>]} on a ledger node's management port:
 * the merchant's balance, asked of the ledger pipeline's owner of the merchant's partition, on any
 * node of the cluster. {@code after} is a position bound: the answer includes the record at that
 * offset of that partition (a producer's own payment, or the last answer a client saw). Answers JSON
 * ({@code merchant}, {@code balanceCents}, {@code partition}, {@code appliedNextOffset}, {@code node},
 * {@code local}); 503 with the reason while the partition moves or lags behind the bound, 400 for a
 * malformed {@code after}. Installed by {@link LedgerNode} under
 * {@code pekko.management.http.routes}; reads the topic from {@code fencepost-examples.ledger.topic}.
 */
// snippet: balances-route
public final class BalancesRoute implements ManagementRouteProvider {

  private static final ObjectMapper JSON = new ObjectMapper();

  private final ActorSystem<?> system;
  private final String topic;

  public BalancesRoute(ExtendedActorSystem system) {
    this.system = Adapter.toTyped(system);
    this.topic = system.settings().config().getString("fencepost-examples.ledger.topic");
  }

  @Override
  public Route routes(ManagementRouteProviderSettings settings) {
    return Directives.pathPrefix("balances", () -> Directives.path(PathMatchers.segment(), merchant ->
        Directives.get(() -> Directives.parameterOptional("after", after ->
            Directives.completeWithFuture(balance(merchant, after.orElse(null)))))));
  }

  private CompletionStage<HttpResponse> balance(String merchant, String after) {
    Pipeline ledger = KafkaPipeline.running(system).stream().filter(p -> p.name().equals("ledger")).findFirst()
        .orElse(null);
    if (ledger == null) {
      return respond(StatusCodes.SERVICE_UNAVAILABLE, Map.of("error", "the ledger pipeline does not run on this node"));
    }
    int boundPartition;
    long boundOffset;
    try {
      String[] parts = after == null ? new String[] {"-1", "-1"} : after.split(":", 2);
      boundPartition = Integer.parseInt(parts[0]);
      boundOffset = Long.parseLong(parts[1]);
      if (after != null && (boundPartition < 0 || boundOffset < 0)) {
        throw new IllegalArgumentException("negative");
      }
    } catch (RuntimeException e) {
      return respond(StatusCodes.BAD_REQUEST, Map.of("error", "after must be <partition>:<offset>, was " + after));
    }
    QueryTarget target = QueryTarget.key(topic, merchant);
    return ledger.partitionOf(target).thenCompose(id -> {
      if (after != null && boundPartition != id.partition()) {
        return respond(StatusCodes.BAD_REQUEST, Map.of("error", "merchant " + merchant + " is on partition "
            + id.partition() + ", not " + boundPartition));
      }
      QueryOptions options = after == null ? QueryOptions.defaults() : QueryOptions.defaults().afterOffset(boundOffset);
      return ledger.query(target, new BalanceOf(merchant), options)
          .thenCompose(r -> respond(StatusCodes.OK, body(merchant, r)));
    }).exceptionallyCompose(e -> {
      Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
      boolean unavailable = cause instanceof PartitionMovingException || cause instanceof PositionNotReachedException;
      return respond(unavailable ? StatusCodes.SERVICE_UNAVAILABLE : StatusCodes.INTERNAL_SERVER_ERROR,
          Map.of("error", String.valueOf(cause.getMessage())));
    });
  }

  private static Map<String, Object> body(String merchant, QueryResult<Long> r) {
    return Map.of("merchant", merchant, "balanceCents", r.reply(), "partition", r.partition().partition(),
        "appliedNextOffset", r.appliedNextOffset(), "node", r.node(), "local", r.local());
  }

  private static CompletionStage<HttpResponse> respond(StatusCode status, Map<String, Object> body) {
    ObjectNode json = JSON.valueToTree(new TreeMap<>(body));
    return CompletableFuture.completedFuture(HttpResponse.create().withStatus(status)
        .withEntity(HttpEntities.create(ContentTypes.APPLICATION_JSON, json.toString())));
  }
}
// end-snippet: balances-route
