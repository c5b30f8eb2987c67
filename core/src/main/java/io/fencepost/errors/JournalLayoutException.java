package io.fencepost.errors;

/**
 * The journal databases a node or tool was given are not where the partitions' histories are: a
 * reordered, shortened or lengthened list, another deployment's database, a partition count or plugin
 * that another configuration layer changed, or a move of histories that has not finished. Going on
 * would recover partitions from databases without their histories. Nothing was started or written;
 * the message names each database, what it records, and the fix.
 */
public final class JournalLayoutException extends FatalException {

  public JournalLayoutException(String message) {
    super(message);
  }
}
