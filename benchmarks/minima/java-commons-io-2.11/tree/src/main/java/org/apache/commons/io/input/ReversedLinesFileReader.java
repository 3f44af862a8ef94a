package org.apache.commons.io.input;
import java.io.File;
import java.io.IOException;
import java.io.UnsupportedEncodingException;
import java.nio.charset.Charset;
import java.nio.file.Path;
public class ReversedLinesFileReader {
    public ReversedLinesFileReader(final File file, final Charset charset) throws IOException {
        this(file.toPath(), charset);
    }
    public ReversedLinesFileReader(final Path file, final Charset charset) throws IOException {
        this(file, 4096, charset);
    }
    public ReversedLinesFileReader(final Path file, final int blockSize, final Charset charset) throws IOException {
        throw new UnsupportedEncodingException("For UTF-16, you need to specify the byte order (use UTF-16BE or UTF-16LE)");
    }
}
