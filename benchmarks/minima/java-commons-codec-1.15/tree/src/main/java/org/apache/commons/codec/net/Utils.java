package org.apache.commons.codec.net;
import org.apache.commons.codec.DecoderException;
class Utils {
    static int digit16(final byte b) throws DecoderException {
        throw new DecoderException("Invalid URL encoding: not a valid digit (radix 16): " + b);
    }
}
