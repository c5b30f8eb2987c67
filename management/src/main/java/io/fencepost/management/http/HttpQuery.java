package io.fencepost.management.http;

import java.util.Map;

import io.fencepost.Query;

/**
 * Turns an HTTP request into a pipeline query, for a query route configured under
 * {@code fencepost.management.queries.<name>}: {@code GET /queries/<name>/<key>?<parameters>} on
 * the management port asks the node that owns {@code key}'s partition of the route's topic, on any
 * node of the cluster, and answers the reply as JSON. No HTTP code of your own:
 *
 * <pre>{@code
 * public final class BalanceRequests implements HttpQuery {
 *   public Query<?> toQuery(String key, Map<String, String> parameters) {
 *     return new BalanceOf(key);
 *   }
 * }
 * // application.conf
 * fencepost.management.queries.balances {
 *   pipeline = "ledger", topic = "payments", request = "com.acme.BalanceRequests"
 * }
 * }</pre>
 *
 * <p>The class needs a public no-argument constructor; one instance serves every request, from
 * several threads at once. The key is the record key as a string, partitioned as Kafka's default
 * partitioner does a {@code StringSerializer} key (its UTF-8 bytes). docs/queries.md, "Queries over HTTP", lists the answers and status codes.
 */
@FunctionalInterface
public interface HttpQuery {

  /**
   * The query for record key {@code key} (the path's last segment, URL-decoded) and the request's
   * query-string {@code parameters} ({@code after} excluded). An {@link IllegalArgumentException}
   * answers 400 with its message.
   */
  Query<?> toQuery(String key, Map<String, String> parameters);
}
