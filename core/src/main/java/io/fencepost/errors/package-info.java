/**
 * Fencepost's public exceptions, rooted at {@link io.fencepost.errors.FencepostException} and split
 * into retriable and fatal. Each message says what happened, where (partition, offset, key or
 * setting) and what to do.
 */
package io.fencepost.errors;
