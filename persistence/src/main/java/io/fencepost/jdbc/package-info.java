/**
 * The journal's database: {@link io.fencepost.jdbc.JournalDatabase} renders the Pekko configuration
 * for pekko-persistence-jdbc on PostgreSQL (production and tests) or H2 (the demo) and installs its
 * schema.
 */
package io.fencepost.jdbc;
