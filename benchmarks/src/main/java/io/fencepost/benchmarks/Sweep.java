package io.fencepost.benchmarks;

import java.util.List;

/**
 * One sweep: Fencepost exactly-once (and the raw consumer where cheap) at several values of one
 * parameter, everything else as in the side-by-side run.
 *
 * @param title what varies, for headings
 * @param file the base name of its .md and .svg files under results/
 * @param parameter the varied parameter as the x axis names it
 * @param points the measurements, in the order of the x axis
 */
record Sweep(String title, String file, String parameter, List<Point> points) {

  /**
   * One value of the parameter.
   *
   * @param label the value, as the x axis shows it
   * @param workload the workload at this point
   * @param fencepost Fencepost exactly-once's runs
   * @param raw the raw consumer's runs, or null when not run
   */
  record Point(String label, Workload workload, Repeated fencepost, Repeated raw) {
  }
}
