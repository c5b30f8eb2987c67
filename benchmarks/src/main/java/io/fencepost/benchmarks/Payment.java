package io.fencepost.benchmarks;

import java.nio.charset.StandardCharsets;

/**
 * One record of the workload, parsed. Wire format (UTF-8, every peer parses it with {@link #parse}):
 * {@code p<id>,<merchant>,<cents>,<padding>}; the record key is the merchant, the business key is
 * {@code p<id>}.
 *
 * @param id the payment's number in its topic, 0-based (the business key without its prefix)
 * @param merchant whose balance the payment credits
 * @param cents the amount
 */
public record Payment(int id, String merchant, long cents) {

  /** Parses a record value without splitting off the padding. */
  public static Payment parse(String value) {
    int first = value.indexOf(',');
    int second = value.indexOf(',', first + 1);
    int third = value.indexOf(',', second + 1);
    return new Payment(Integer.parseInt(value, 1, first, 10), value.substring(first + 1, second),
        Long.parseLong(value, second + 1, third < 0 ? value.length() : third, 10));
  }

  /** Parses UTF-8 bytes. */
  public static Payment parse(byte[] value) {
    return parse(new String(value, StandardCharsets.UTF_8));
  }

  /** The business key, {@code p<id>}. */
  public String businessKey() {
    return "p" + id;
  }
}
