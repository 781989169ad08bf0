package io.github.entropydiode.client;

/**
 * Random bytes together with where they came from ({@link EntropyClient#draw(int)}).
 *
 * @param data the bytes
 * @param provenance where they came from; null only from a gateway that sends none
 */
public record Draw(byte[] data, Provenance provenance) {}
