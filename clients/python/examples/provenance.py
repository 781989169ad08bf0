"""Bytes with their provenance, a source filter (quantum only), and a quality check of the pool."""

from entropy_diode import EntropyClient, FailedPreconditionError, SourceKind

with EntropyClient.from_env() as client:  # ENTROPY_ENDPOINT, ENTROPY_API_KEY, ENTROPY_CA_FILE
    d = client.draw(32)
    p = d.provenance
    kinds = [k.name for k in p.kinds]
    print(d.data.hex(), kinds, list(p.collector_ids), f"{p.chunk_count} chunk(s)")
    try:
        key = client.get_bytes(32, accept_kinds=[SourceKind.QUANTUM])  # quantum only
        print("quantum key:", key.hex())
    except FailedPreconditionError as e:
        print("no quantum source:", e.details)  # what the pool holds instead
    r = client.check_quality(4096)  # needs the quality:check scope
    verdict = "passed" if r.passed else "failed: " + "; ".join(r.failures)
    print(f"quality {verdict}, min-entropy {r.min_entropy_bits_per_byte:.3f} bits/byte")
