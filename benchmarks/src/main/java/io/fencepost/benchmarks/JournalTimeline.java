package io.fencepost.benchmarks;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.fencepost.PartitionId;
import io.fencepost.jdbc.JournalDatabase;

/**
 * What {@link Failover} measures: when each partition of one consumer group wrote to the journal and
 * by which actor incarnation (read incrementally from {@code event_journal}), and which node owned
 * each partition when (read from the nodes' logs).
 *
 * <p>Ownership comes from the logs because only they name the node: the journal's {@code writer} is a
 * random id per actor incarnation that no log line mentions. A partition's owner at a time is the
 * node that last logged {@code seeking to stored offsets} for it at or before that time. The
 * {@code revoked} / {@code lost} lines are not needed: a SIGKILLed node logs nothing when it dies,
 * and a partition has one owner at a time, so the next node's seek is what ends the previous
 * owner's turn (a revoking node's last writes, between its {@code revoked} line and the next seek,
 * stay its own). The journal supplies the times (the journal plugin's {@code write_timestamp}) and
 * tells a new owner's writes from the old owner's last ones (the {@code writer} column).
 */
final class JournalTimeline implements AutoCloseable {

  /** One journal row: when the journal plugin took the write and which actor incarnation wrote it. */
  record Write(long at, String writer) {
  }

  /** A node started a partition's stream (its {@code seeking to stored offsets} line). */
  private record Start(long at, int node) {
  }

  /**
   * Rows at least this old are taken as final. {@code ordering} is drawn at insert, not at commit,
   * so a row can become visible after rows of higher ordering: each refresh reads again everything
   * after the newest row that was already this old at the previous refresh.
   */
  private static final long SETTLE_MS = 5_000;

  private final JournalDatabase db;
  private final Map<String, Integer> partitionOf = new HashMap<>();
  /** Per partition, by sequence number (sequence order is time order within one partition). */
  private final List<TreeMap<Long, Write>> writes = new ArrayList<>();
  /** One String per writer id, however many rows carry it. */
  private final Map<String, String> writers = new HashMap<>();
  private final Pattern startedPartition;
  private List<List<Start>> starts = new ArrayList<>();
  private Connection connection;
  private long rereadAfter;

  JournalTimeline(JournalDatabase db, String group, String topic, int partitions) {
    this.db = db;
    for (int p = 0; p < partitions; p++) {
      partitionOf.put(new PartitionId(group, topic, p).persistenceId(), p);
      writes.add(new TreeMap<>());
      starts.add(List.of());
    }
    // "[ledger] seeking to stored offsets {payments-3=1234}"
    this.startedPartition = Pattern.compile(Pattern.quote(topic) + "-(\\d+)=");
  }

  /** Reads the journal rows written since the last refresh. */
  void refresh() throws SQLException {
    long settled = System.currentTimeMillis() - SETTLE_MS;
    long next = rereadAfter;
    if (connection == null || connection.isClosed()) {
      connection = db.connect();
    }
    try (PreparedStatement st = connection.prepareStatement("SELECT ordering, persistence_id, sequence_number, "
        + "write_timestamp, writer FROM event_journal WHERE ordering > ? ORDER BY ordering")) {
      st.setLong(1, rereadAfter);
      st.setQueryTimeout(30);
      try (ResultSet rs = st.executeQuery()) {
        while (rs.next()) {
          Integer p = partitionOf.get(rs.getString(2));
          long at = rs.getLong(4);
          if (p != null) {
            writes.get(p).putIfAbsent(rs.getLong(3), new Write(at, writers.computeIfAbsent(rs.getString(5), w -> w)));
          }
          if (at <= settled) {
            next = Math.max(next, rs.getLong(1));
          }
        }
      }
    }
    rereadAfter = next;
  }

  /** Reads again who started which partition when; {@code logs.get(i)} is node i's log (all its incarnations). */
  void readLogs(List<Path> logs) {
    List<List<Start>> found = new ArrayList<>();
    for (int p = 0; p < writes.size(); p++) {
      found.add(new ArrayList<>());
    }
    long now = System.currentTimeMillis();
    for (int node = 0; node < logs.size(); node++) {
      for (String line : lines(logs.get(node))) {
        if (!line.contains("seeking to stored offsets")) {
          continue;
        }
        long at = epochMillis(line, now);
        Matcher m = startedPartition.matcher(line);
        while (at >= 0 && m.find()) {
          int p = Integer.parseInt(m.group(1));
          if (p < found.size()) {
            found.get(p).add(new Start(at, node));
          }
        }
      }
    }
    found.forEach(list -> list.sort(Comparator.comparingLong(Start::at)));
    starts = found;
  }

  /** The node that owned the partition at {@code t}: the last to start it at or before t; -1 if none had. */
  int ownerAt(int p, long t) {
    int owner = -1;
    for (Start s : starts.get(p)) {
      if (s.at() > t) {
        break;
      }
      owner = s.node();
    }
    return owner;
  }

  /** The partitions {@code node} started in [from, to]. */
  List<Integer> startedBy(int node, long from, long to) {
    List<Integer> out = new ArrayList<>();
    for (int p = 0; p < starts.size(); p++) {
      if (starts.get(p).stream().anyMatch(s -> s.node() == node && s.at() >= from && s.at() <= to)) {
        out.add(p);
      }
    }
    return out;
  }

  /** The partition's writes with {@code from <= at <= to}, in time order. */
  List<Write> between(int p, long from, long to) {
    List<Write> out = new ArrayList<>();
    for (Write w : writes.get(p).descendingMap().values()) {
      if (w.at() < from) {
        break;
      }
      if (w.at() <= to) {
        out.add(w);
      }
    }
    Collections.reverse(out);
    return out;
  }

  /** The partition's last write at or before {@code t}. */
  Optional<Write> lastAtOrBefore(int p, long t) {
    for (Write w : writes.get(p).descendingMap().values()) {
      if (w.at() <= t) {
        return Optional.of(w);
      }
    }
    return Optional.empty();
  }

  /** The partition's first write after {@code t} that {@code which} accepts. */
  Optional<Write> firstAfter(int p, long t, Predicate<Write> which) {
    return between(p, t + 1, Long.MAX_VALUE).stream().filter(which).findFirst();
  }

  /** The longest time in [from, to] without a write of the partition, the edges of the window included. */
  long longestGap(int p, long from, long to) {
    long previous = from;
    long gap = 0;
    for (Write w : between(p, from, to)) {
      gap = Math.max(gap, w.at() - previous);
      previous = w.at();
    }
    return Math.max(gap, to - previous);
  }

  /** How many actor incarnations wrote the partition in [from, to] (more than one: it moved). */
  long writersBetween(int p, long from, long to) {
    return between(p, from, to).stream().map(Write::writer).distinct().count();
  }

  /** The longest any partition has gone without a write, up to {@code now} (Long.MAX_VALUE if one never wrote). */
  long quietest(long now) {
    long quiet = 0;
    for (TreeMap<Long, Write> w : writes) {
      quiet = Math.max(quiet, w.isEmpty() ? Long.MAX_VALUE : now - w.lastEntry().getValue().at());
    }
    return quiet;
  }

  /**
   * Journal writes per second in [from, to), by the node owning the partition at the write:
   * {@code counts[node][second]}, with row {@code nodes} for writes before any node's log started
   * the partition.
   */
  long[][] writesPerSecond(long from, long to, int nodes) {
    long[][] counts = new long[nodes + 1][(int) ((to - from + 999) / 1000)];
    for (int p = 0; p < writes.size(); p++) {
      for (Write w : between(p, from, to - 1)) {
        int owner = ownerAt(p, w.at());
        counts[owner < 0 || owner >= nodes ? nodes : owner][(int) ((w.at() - from) / 1000)]++;
      }
    }
    return counts;
  }

  @Override
  public void close() {
    try {
      if (connection != null) {
        connection.close();
      }
    } catch (SQLException e) {
      // the server stops next anyway
    }
  }

  /** The file's lines; malformed bytes become replacement characters instead of failing the read. */
  private static List<String> lines(Path log) {
    try {
      return new String(Files.readAllBytes(log), StandardCharsets.UTF_8).lines().toList();
    } catch (IOException e) {
      return List.of();
    }
  }

  /**
   * The epoch milliseconds of a log line starting with {@code HH:mm:ss.SSS} (the nodes' logback
   * pattern), taken on the day that puts it before {@code now}; -1 for a line without a time.
   */
  static long epochMillis(String line, long now) {
    if (line.length() < 12) {
      return -1;
    }
    LocalTime time;
    try {
      time = LocalTime.parse(line.substring(0, 12));
    } catch (DateTimeParseException e) {
      return -1;
    }
    ZoneId zone = ZoneId.systemDefault();
    LocalDate today = Instant.ofEpochMilli(now).atZone(zone).toLocalDate();
    long at = time.atDate(today).atZone(zone).toInstant().toEpochMilli();
    // A line stamped before midnight, read after it.
    return at > now + 60_000 ? time.atDate(today.minusDays(1)).atZone(zone).toInstant().toEpochMilli() : at;
  }
}
