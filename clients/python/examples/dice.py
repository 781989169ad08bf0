"""Roll ten six-sided dice (unbiased: the gateway uses rejection sampling)."""

from entropy_diode import EntropyClient

# ENTROPY_ENDPOINT (default 127.0.0.1:50051), ENTROPY_API_KEY, ENTROPY_CA_FILE.
with EntropyClient.from_env() as client:
    print(*client.get_integers(1, 6, count=10))
