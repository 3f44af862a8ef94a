import org.apache.commons.lang3.time.DurationFormatUtils;
public class Driver {
    public static void main(String[] args) {
        long started = 1_700_000_005_000L;
        DurationFormatUtils.formatDurationHMS(- started);
    }
}
