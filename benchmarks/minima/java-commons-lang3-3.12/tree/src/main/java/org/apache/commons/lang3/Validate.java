package org.apache.commons.lang3;
public class Validate {
    public static void inclusiveBetween(final long start, final long end, final long value, final String message) {
            throw new IllegalArgumentException(message);
    }
}
