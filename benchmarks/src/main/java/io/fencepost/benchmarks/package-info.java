/** Side-by-side throughput and latency runs of Fencepost against its peers, in one invocation. */
package io.fencepost.benchmarks;
