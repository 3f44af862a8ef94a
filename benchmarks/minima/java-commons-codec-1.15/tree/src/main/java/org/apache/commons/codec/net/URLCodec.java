package org.apache.commons.codec.net;
import org.apache.commons.codec.DecoderException;
public class URLCodec {
    public static final byte[] decodeUrl(final byte[] bytes) throws DecoderException {
        for (int i = 0; i < bytes.length; i++) {
            if (bytes[i] == '%') {
                Utils.digit16(bytes[++i]);
            }
        }
        return bytes;
    }
    public String decode(final String str) throws DecoderException {
        return new String(decodeUrl(str.getBytes()));
    }
}
