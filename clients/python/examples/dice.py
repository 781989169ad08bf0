"""Roll ten six-sided dice (unbiased: the gateway uses rejection sampling)."""

import os

from entropy_diode import EntropyClient

# A dev gateway is plaintext; leave out tls=False for a TLS gateway.
with EntropyClient(os.environ.get("ENTROPY_ENDPOINT", "127.0.0.1:50051"),
                   os.environ["ENTROPY_API_KEY"], tls=False) as client:
    print(*client.get_integers(1, 6, count=10))
