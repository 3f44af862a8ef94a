import java.io.File;
import java.nio.charset.StandardCharsets;
import org.apache.commons.io.input.ReversedLinesFileReader;
public class Driver {
    public static void main(String[] args) throws Exception {
        new ReversedLinesFileReader(new File("service.log"), StandardCharsets.UTF_16);
    }
}
