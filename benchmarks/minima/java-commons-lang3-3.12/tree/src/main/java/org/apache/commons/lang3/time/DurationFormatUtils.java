package org.apache.commons.lang3.time;
import org.apache.commons.lang3.Validate;
public class DurationFormatUtils {
    public static String formatDurationHMS(final long durationMillis) {
        return formatDuration(durationMillis, "HH:mm:ss.SSS");
    }
    public static String formatDuration(final long durationMillis, final String format) {
        Validate.inclusiveBetween(0, Long.MAX_VALUE, durationMillis, "durationMillis must not be negative");
        return format;
    }
}
