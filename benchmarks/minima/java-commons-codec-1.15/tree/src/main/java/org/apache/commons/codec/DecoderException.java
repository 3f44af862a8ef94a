package org.apache.commons.codec;
public class DecoderException extends Exception {
    public DecoderException(final String message) {
        super(message);
    }
}
