package io.fencepost.benchmarks;

import java.util.Locale;

/** A minimal SVG document builder for the benchmark charts (no dependency). */
final class Svg {

  /** Series colours, in order. */
  static final String[] PALETTE = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

  private final StringBuilder sb = new StringBuilder();

  Svg(int width, int height) {
    sb.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
        + "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">%n", width, height, width, height));
    rect(0, 0, width, height, "#ffffff");
  }

  Svg rect(double x, double y, double w, double h, String fill) {
    sb.append(String.format(Locale.ROOT, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>%n",
        x, y, w, h, fill));
    return this;
  }

  Svg line(double x1, double y1, double x2, double y2, String stroke, double width) {
    sb.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
        + "stroke-width=\"%.1f\"/>%n", x1, y1, x2, y2, stroke, width));
    return this;
  }

  Svg polyline(double[] xs, double[] ys, String stroke) {
    StringBuilder points = new StringBuilder();
    for (int i = 0; i < xs.length; i++) {
      points.append(String.format(Locale.ROOT, "%s%.1f,%.1f", i == 0 ? "" : " ", xs[i], ys[i]));
    }
    sb.append(String.format("<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>%n", points,
        stroke));
    return this;
  }

  Svg circle(double x, double y, double r, String fill) {
    sb.append(String.format(Locale.ROOT, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\"/>%n", x, y, r, fill));
    return this;
  }

  /** Text at (x, y); anchor is start, middle or end. */
  Svg text(double x, double y, String text, String anchor, String style) {
    sb.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s>%s</text>%n", x, y, anchor,
        style.isEmpty() ? "" : " " + style, escape(text)));
    return this;
  }

  /** The document, closed. */
  String render() {
    return sb + "</svg>\n";
  }

  static String escape(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
  }

  /** A round tick step (1, 2, 2.5 or 5 times a power of ten) for an axis from 0 to {@code max} with about {@code ticks} ticks. */
  static double niceStep(double max, int ticks) {
    double raw = Math.max(max, 1e-9) / ticks;
    double power = Math.pow(10, Math.floor(Math.log10(raw)));
    for (double m : new double[] {1, 2, 2.5, 5, 10}) {
      if (m * power >= raw) {
        return m * power;
      }
    }
    return 10 * power;
  }

  /** How many steps of {@code step} the axis needs to reach {@code max} (at least one). */
  static int tickCount(double max, double step) {
    return Math.max(1, (int) Math.ceil(max / step - 1e-9));
  }

  /** An axis label: 12k, 1.5M, 250. */
  static String shortNumber(double v) {
    if (v >= 1e6) {
      return trim(v / 1e6) + "M";
    }
    if (v >= 1e3) {
      return trim(v / 1e3) + "k";
    }
    return trim(v);
  }

  private static String trim(double v) {
    return v == Math.rint(v) ? String.valueOf((long) v) : String.format(Locale.ROOT, "%.1f", v);
  }
}
