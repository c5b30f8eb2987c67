package io.fencepost.management.internal;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import io.fencepost.Query;
import io.fencepost.errors.PartitionMovingException;
import io.fencepost.errors.PositionNotReachedException;
import io.fencepost.errors.SettingsException;
import io.fencepost.kafka.KafkaPipeline;
import io.fencepost.kafka.Pipeline;
import io.fencepost.kafka.QueryOptions;
import io.fencepost.kafka.QueryResult;
import io.fencepost.kafka.QueryTarget;
import io.fencepost.management.http.HttpQuery;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCode;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.http.javadsl.server.Directives;
import org.apache.pekko.http.javadsl.server.PathMatchers;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.management.javadsl.ManagementRouteProvider;
import org.apache.pekko.management.javadsl.ManagementRouteProviderSettings;
import org.apache.pekko.serialization.jackson.JacksonObjectMapperProvider;

/**
 * Pekko Management route: {@code GET /queries/<name>/<key>[?after=<partition>:<offset>&...]} for each
 * query route configured under {@code fencepost.management.queries} ({@link HttpQuery}). 200 with
 * {@code {"reply", "partition", "appliedNextOffset", "position", "node", "local", "localOnly"}} and the
 * header {@value #POSITION_HEADER} (pass it back as {@code after} for monotonic reads); 400 for a bad
 * request; 404 for an unknown route; 503 with {@code Retry-After} while the partition moves or the
 * pipeline does not run here; 504 when the state did not reach {@code after} in time; 500 otherwise.
 */
public final class QueryRoutes implements ManagementRouteProvider {

  /** The response header naming the answer's position, {@code <partition>:<offset>}. */
  public static final String POSITION_HEADER = "Fencepost-Position";
  private static final String PATH = "fencepost.management.queries";

  private final ActorSystem<?> system;
  private final ObjectMapper json;
  private final Map<String, Configured> routes;

  private record Configured(String pipeline, String topic, HttpQuery request) {
  }

  public QueryRoutes(ExtendedActorSystem classic) {
    this.system = Adapter.toTyped(classic);
    this.json = JacksonObjectMapperProvider.get(classic).getOrCreate("jackson-json", Optional.empty());
    this.routes = read(classic.settings().config(), classic.dynamicAccess().classLoader());
  }

  /**
   * Refuses a misconfigured route before the endpoints start (FencepostManagement.start calls it), so
   * that the refusal is one line naming the key rather than Pekko's wrapped provider failure.
   */
  public static void check(ActorSystem<?> system) {
    read(system.settings().config(), system.dynamicAccess().classLoader());
  }

  static Map<String, Configured> read(Config config) {
    return read(config, QueryRoutes.class.getClassLoader());
  }

  /** The configured routes; a route missing a key, or naming a class that is no HttpQuery, is refused naming it. */
  static Map<String, Configured> read(Config config, ClassLoader loader) {
    Map<String, Configured> routes = new TreeMap<>();
    if (!config.hasPath(PATH)) {
      return routes;
    }
    Config queries;
    try {
      queries = config.getConfig(PATH);
    } catch (ConfigException e) {
      throw new SettingsException(PATH, config.getValue(PATH).unwrapped(), "must be a block of query routes");
    }
    for (Map.Entry<String, com.typesafe.config.ConfigValue> entry : queries.root().entrySet()) {
      String name = entry.getKey();
      String path = PATH + "." + com.typesafe.config.ConfigUtil.joinPath(List.of(name));
      if (!(entry.getValue() instanceof com.typesafe.config.ConfigObject block)) {
        throw new SettingsException(path, entry.getValue().unwrapped(), "must be a block { pipeline, topic, request }");
      }
      Config route = block.toConfig();
      routes.put(name, new Configured(string(route, path, "pipeline"), string(route, path, "topic"),
          instance(string(route, path, "request"), path + ".request", loader)));
    }
    return routes;
  }

  private static String string(Config route, String path, String key) {
    String value;
    try {
      value = route.hasPath(key) ? route.getString(key) : "";
    } catch (ConfigException e) {
      throw new SettingsException(path + "." + key, route.getValue(key).unwrapped(), "must be a string");
    }
    if (value.isBlank()) {
      throw new SettingsException(path + "." + key, value,
          "must be set (a query route names its pipeline, its topic and its request class)");
    }
    return value;
  }

  private static HttpQuery instance(String className, String key, ClassLoader loader) {
    try {
      Class<?> type = Class.forName(className, true, loader);
      if (!HttpQuery.class.isAssignableFrom(type)) {
        throw new SettingsException(key, className, "must name a class implementing " + HttpQuery.class.getName());
      }
      return (HttpQuery) type.getConstructor().newInstance();
    } catch (java.lang.reflect.InvocationTargetException e) {
      throw new SettingsException(key, className, "names a class whose constructor failed: " + e.getCause());
    } catch (ReflectiveOperationException | LinkageError e) {
      throw new SettingsException(key, className, "must name a class with a public no-argument constructor ("
          + e + ")");
    }
  }

  @Override
  public Route routes(ManagementRouteProviderSettings settings) {
    return Directives.pathPrefix("queries", () -> Directives.pathPrefix(PathMatchers.segment(), name ->
        Directives.path(PathMatchers.segment(), key -> Directives.get(() -> Directives.parameterMap(parameters ->
            Directives.completeWithFuture(answer(name, key, parameters)))))));
  }

  private CompletionStage<HttpResponse> answer(String name, String key, Map<String, String> parameters) {
    Configured route = routes.get(name);
    if (route == null) {
      return respond(StatusCodes.NOT_FOUND, error("no query route [" + name + "]; configured: " + routes.keySet()
          + " (" + PATH + ")"));
    }
    List<Pipeline> running = KafkaPipeline.running(system);
    Optional<Pipeline> pipeline = running.stream().filter(p -> p.name().equals(route.pipeline())).findFirst();
    if (pipeline.isEmpty()) {
      return unavailable("pipeline [" + route.pipeline() + "] does not run on this node; running: "
          + running.stream().map(Pipeline::name).toList());
    }
    Map<String, String> rest = new HashMap<>(parameters);
    String after = rest.remove("after");
    long[] bound;
    Query<?> query;
    try {
      bound = after == null ? null : position(after);
      query = route.request().toQuery(key, Map.copyOf(rest));
      if (query == null) {
        throw new IllegalStateException(route.request().getClass().getName() + " made no query");
      }
    } catch (IllegalArgumentException e) {
      return respond(StatusCodes.BAD_REQUEST, error(String.valueOf(e.getMessage())));
    } catch (VirtualMachineError e) {
      throw e;
    } catch (RuntimeException | Error e) {
      return respond(StatusCodes.INTERNAL_SERVER_ERROR, error(e.toString()));
    }
    QueryTarget target = QueryTarget.key(route.topic(), key);
    Pipeline p = pipeline.get();
    return p.partitionOf(target).thenCompose(id -> {
      if (bound != null && bound[0] != id.partition()) {
        return respond(StatusCodes.BAD_REQUEST, error("key [" + key + "] is on partition " + id.partition()
            + " of [" + route.topic() + "], not " + bound[0] + " (after=" + after + ")"));
      }
      QueryOptions options = bound == null ? QueryOptions.defaults() : QueryOptions.defaults().afterOffset(bound[1]);
      return p.query(target, query, options).thenApply(this::ok);
    }).exceptionallyCompose(e -> {
      Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
      if (cause instanceof PositionNotReachedException) {
        return respond(StatusCodes.GATEWAY_TIMEOUT, error(String.valueOf(cause.getMessage())));
      }
      if (cause instanceof PartitionMovingException || cause instanceof io.fencepost.errors.RetriableException
          || cause instanceof org.apache.kafka.common.errors.RetriableException
          || cause instanceof java.util.concurrent.TimeoutException) {
        return unavailable(String.valueOf(cause.getMessage()));
      }
      if (cause instanceof IllegalArgumentException) {   // the route's topic is not the pipeline's, or its query
        return respond(StatusCodes.INTERNAL_SERVER_ERROR, error("query route [" + name + "] (" + PATH + "."
            + name + "): " + cause.getMessage()));
      }
      return respond(StatusCodes.INTERNAL_SERVER_ERROR, error(String.valueOf(cause)));
    });
  }

  /** {@code <partition>:<offset>}, both at least 0. */
  private static long[] position(String after) {
    String[] parts = after.split(":", 2);
    try {
      long[] position = {Integer.parseInt(parts[0]), Long.parseLong(parts[1])};
      if (position[0] >= 0 && position[1] >= 0 && position[1] < Long.MAX_VALUE) {
        return position;
      }
    } catch (RuntimeException e) {
      // refused below
    }
    throw new IllegalArgumentException("after must be <partition>:<offset> (both >= 0), was [" + after + "]");
  }

  /** The answer; its position only once the partition applied a record (an offset {@code after} accepts). */
  private HttpResponse ok(QueryResult<?> r) {
    String position = r.appliedNextOffset() > 0 ? r.partition().partition() + ":" + (r.appliedNextOffset() - 1) : null;
    ObjectNode body = json.createObjectNode();
    body.set("reply", json.valueToTree(r.reply()));
    body.put("partition", r.partition().partition());
    body.put("appliedNextOffset", r.appliedNextOffset());
    if (position != null) {
      body.put("position", position);
    }
    body.put("node", r.node());
    body.put("local", r.local());
    body.put("localOnly", r.localOnly());
    HttpResponse response = response(StatusCodes.OK, body.toString());
    return position == null ? response : response.addHeader(RawHeader.create(POSITION_HEADER, position));
  }

  private String error(String message) {
    return json.createObjectNode().put("error", message).toString();
  }

  private CompletionStage<HttpResponse> unavailable(String why) {
    return CompletableFuture.completedFuture(response(StatusCodes.SERVICE_UNAVAILABLE, error(why))
        .addHeader(RawHeader.create("Retry-After", "1")));
  }

  private static CompletionStage<HttpResponse> respond(StatusCode status, String body) {
    return CompletableFuture.completedFuture(response(status, body));
  }

  private static HttpResponse response(StatusCode status, String body) {
    return HttpResponse.create().withStatus(status).withEntity(HttpEntities.create(ContentTypes.APPLICATION_JSON, body));
  }
}
