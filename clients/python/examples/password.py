"""A 20-character password: each character an unbiased draw from the alphabet."""

import os
import string

from entropy_diode import EntropyClient

ALPHABET = string.ascii_letters + string.digits + "!#$%&*+-=?@^_"

with EntropyClient(os.environ.get("ENTROPY_ENDPOINT", "127.0.0.1:50051"),
                   os.environ["ENTROPY_API_KEY"], tls=False) as client:
    picks = client.get_integers(0, len(ALPHABET) - 1, count=20)
    print("".join(ALPHABET[i] for i in picks))
