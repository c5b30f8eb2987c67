package io.fencepost.benchmarks;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** A horizontal bar chart as SVG: one labelled bar per entry, a linear axis from 0. */
final class BarChart {

  private static final int WIDTH = 640;
  private static final int LEFT = 130;
  private static final int RIGHT = 70;
  private static final int TOP = 40;
  private static final int BAR = 26;
  private static final int TICKS = 5;

  private record Bar(String label, double value, boolean highlighted) {
  }

  private final String title;
  private final String valueLabel;
  private final List<Bar> bars = new ArrayList<>();

  BarChart(String title, String valueLabel) {
    this.title = title;
    this.valueLabel = valueLabel;
  }

  /** Adds a bar; a highlighted one is drawn in the second colour. */
  BarChart bar(String label, double value, boolean highlighted) {
    bars.add(new Bar(label, value, highlighted));
    return this;
  }

  String svg() {
    double max = bars.stream().mapToDouble(Bar::value).max().orElse(1);
    double step = Svg.niceStep(max, TICKS);
    int ticks = Svg.tickCount(max, step);
    double top = step * ticks;
    double plotW = WIDTH - LEFT - RIGHT;
    double plotH = BAR * bars.size();
    int height = (int) (TOP + plotH + 50);
    Svg svg = new Svg(WIDTH, height);
    svg.text(WIDTH / 2.0, 22, title, "middle", "font-size=\"15\" font-weight=\"bold\"");
    for (int i = 0; i <= ticks; i++) {
      double x = LEFT + plotW * i / ticks;
      svg.line(x, TOP, x, TOP + plotH, i == 0 ? "#333333" : "#dddddd", 1);
      svg.text(x, TOP + plotH + 16, Svg.shortNumber(step * i), "middle", "");
    }
    svg.text(LEFT + plotW / 2, TOP + plotH + 38, valueLabel, "middle", "");
    for (int i = 0; i < bars.size(); i++) {
      Bar b = bars.get(i);
      double y = TOP + BAR * i;
      double w = plotW * b.value() / top;
      svg.rect(LEFT, y + 4, w, BAR - 8, Svg.PALETTE[b.highlighted() ? 1 : 0]);
      svg.text(LEFT - 6, y + BAR / 2.0 + 4, b.label(), "end", "");
      svg.text(LEFT + w + 4, y + BAR / 2.0 + 4, String.format(Locale.ROOT, "%,.0f", b.value()), "start", "");
    }
    return svg.render();
  }
}
