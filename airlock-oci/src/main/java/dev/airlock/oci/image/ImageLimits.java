package dev.airlock.oci.image;

/**
 * How much an image may be: the bytes of its files (after decompression), its entries (over all
 * layers), its layers, and the size of an archive's JSON documents. An archive past any of them is
 * refused before it fills the disk.
 */
public record ImageLimits(long maxBytes, long maxEntries, int maxLayers, int maxJsonBytes) {

    /** 8 GiB of files, a million entries, 256 layers, 4 MiB per JSON document. */
    public static final ImageLimits DEFAULTS = new ImageLimits(8L << 30, 1_000_000, 256, 4 << 20);
}
