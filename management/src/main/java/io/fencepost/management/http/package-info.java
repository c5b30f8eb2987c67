/**
 * What a service plugs into the management port's routes: {@link io.fencepost.management.http.HttpQuery}
 * turns a request into a pipeline query for a route configured under
 * {@code fencepost.management.queries}.
 */
package io.fencepost.management.http;
