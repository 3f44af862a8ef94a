import org.apache.commons.codec.net.URLCodec;
public class Driver {
    public static void main(String[] args) throws Exception {
        new URLCodec().decode("q=caf%zz&lang=fr");
    }
}
