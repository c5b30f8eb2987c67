package io.fencepost.benchmarks;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A line chart as SVG: categories evenly spaced on x, a linear y axis from 0, one line per series,
 * the legend in a row above the plot.
 */
final class LineChart {

  private static final int WIDTH = 640;
  private static final int HEIGHT = 360;
  private static final int LEFT = 70;
  private static final int RIGHT = 20;
  private static final int TOP = 60;
  private static final int BOTTOM = 55;
  private static final int TICKS = 5;

  private record Series(String name, List<Double> values) {
  }

  private final String title;
  private final String xLabel;
  private final String yLabel;
  private final List<String> categories;
  private final List<Series> series = new ArrayList<>();

  LineChart(String title, String xLabel, String yLabel, List<String> categories) {
    this.title = title;
    this.xLabel = xLabel;
    this.yLabel = yLabel;
    this.categories = List.copyOf(categories);
  }

  /** Adds a series; {@code values} align with the categories, null where there is no value. */
  LineChart series(String name, List<Double> values) {
    if (values.size() != categories.size()) {
      throw new IllegalArgumentException(values.size() + " values for " + categories.size() + " categories");
    }
    series.add(new Series(name, values));
    return this;
  }

  String svg() {
    double max = 0;
    for (Series s : series) {
      for (Double v : s.values()) {
        max = v == null ? max : Math.max(max, v);
      }
    }
    double step = Svg.niceStep(max, TICKS);
    int ticks = Svg.tickCount(max, step);
    double top = step * ticks;
    double plotW = WIDTH - LEFT - RIGHT;
    double plotH = HEIGHT - TOP - BOTTOM;
    Svg svg = new Svg(WIDTH, HEIGHT);
    svg.text(WIDTH / 2.0, 22, title, "middle", "font-size=\"15\" font-weight=\"bold\"");
    for (int i = 0; i <= ticks; i++) {
      double y = TOP + plotH - plotH * i / ticks;
      svg.line(LEFT, y, LEFT + plotW, y, i == 0 ? "#333333" : "#dddddd", 1);
      svg.text(LEFT - 6, y + 4, Svg.shortNumber(step * i), "end", "");
    }
    svg.line(LEFT, TOP, LEFT, TOP + plotH, "#333333", 1);
    for (int i = 0; i < categories.size(); i++) {
      svg.text(x(i, plotW), TOP + plotH + 18, categories.get(i), "middle", "");
    }
    svg.text(LEFT + plotW / 2, HEIGHT - 12, xLabel, "middle", "");
    svg.text(16, TOP + plotH / 2, yLabel, "middle",
        String.format(Locale.ROOT, "transform=\"rotate(-90 16 %.1f)\"", TOP + plotH / 2));
    for (int s = 0; s < series.size(); s++) {
      String colour = Svg.PALETTE[s % Svg.PALETTE.length];
      List<Double> xs = new ArrayList<>();
      List<Double> ys = new ArrayList<>();
      List<Double> values = series.get(s).values();
      for (int i = 0; i < values.size(); i++) {
        if (values.get(i) != null) {
          xs.add(x(i, plotW));
          ys.add(TOP + plotH - plotH * values.get(i) / top);
        }
      }
      svg.polyline(xs.stream().mapToDouble(Double::doubleValue).toArray(),
          ys.stream().mapToDouble(Double::doubleValue).toArray(), colour);
      for (int i = 0; i < xs.size(); i++) {
        svg.circle(xs.get(i), ys.get(i), 3.5, colour);
      }
      double lx = LEFT + 230 * s;
      svg.line(lx, TOP - 20, lx + 20, TOP - 20, colour, 3);
      svg.text(lx + 26, TOP - 16, series.get(s).name(), "start", "");
    }
    return svg.render();
  }

  private double x(int i, double plotW) {
    return LEFT + plotW * (i + 0.5) / categories.size();
  }
}
