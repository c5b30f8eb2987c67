package io.fencepost.tools;

import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * {@code fencepost status}: every partition of a pipeline across the cluster, asked of one node's
 * management port ({@code GET /pipelines/<name>/partitions}): owner node, stored next offset, lag,
 * applied and dead-lettered records, halted or not. Exit status 1 when a partition has no owner or is
 * halted, 2 when the node cannot be asked.
 */
final class StatusCommand implements Main.Command {

  @Override
  public int run(String[] args) throws Exception {
    Flags flags = new Flags("status")
        .value("management-port", "n", "FENCEPOST_MANAGEMENT_PORT", null, "a node's management port")
        .value("management-host", "address", "FENCEPOST_MANAGEMENT_HOST", "127.0.0.1", "that node's address")
        .value("pipeline", "name", null, "ledger", "the pipeline's name");
    if (!flags.parse(args)) {
      return 0;
    }
    int port = flags.intValue("management-port", 1, 65535);
    String url = "http://" + flags.require("management-host") + ":" + port + "/pipelines/"
        + URLEncoder.encode(flags.require("pipeline"), StandardCharsets.UTF_8) + "/partitions";
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    HttpResponse<String> response;
    try {
      response = http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30)).build(),
          HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      System.err.println("fencepost status: cannot reach " + url + " (" + e + "); is the node started with "
          + "--management-port " + port + "?");
      return 2;
    }
    JsonNode body = new ObjectMapper().readTree(response.body());
    if (response.statusCode() != 200) {
      System.err.println("fencepost status: " + url + " answered " + response.statusCode() + ": "
          + body.path("error").asText(response.body()));
      return 2;
    }
    return print(body, System.out);
  }

  /** The table; 1 when a partition has no owner or is halted. */
  static int print(JsonNode partitions, PrintStream out) {
    out.printf("%-24s %9s  %-44s %12s %8s %10s %6s %s%n", "TOPIC", "PARTITION", "OWNER", "NEXT-OFFSET", "LAG",
        "APPLIED", "DLT", "HALTED");
    int unhealthy = 0;
    for (JsonNode p : partitions) {
      boolean halted = p.path("halted").asBoolean();
      boolean owned = !p.path("owner").asText().equals("-");
      if (halted || !owned) {
        unhealthy++;
      }
      out.printf("%-24s %9d  %-44s %12s %8s %10d %6d %s%n", p.path("topic").asText(), p.path("partition").asInt(),
          owned ? p.path("owner").asText() : "- (no owner answered)",
          p.path("nextOffset").isNull() ? "-" : p.path("nextOffset").asText(),
          p.path("lag").isNull() ? "-" : p.path("lag").asText(), p.path("applied").asLong(),
          p.path("deadLettered").asLong(), halted ? "HALTED: " + p.path("haltedReason").asText() : "no");
    }
    out.printf("%d partition(s), %d without owner or halted%n", partitions.size(), unhealthy);
    return unhealthy == 0 ? 0 : 1;
  }

  @Override
  public String summary() {
    return "every partition of a pipeline across the cluster, from one node's management port";
  }
}
