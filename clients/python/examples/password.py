"""A 20-character password: each character an unbiased draw from the alphabet."""

import string

from entropy_diode import EntropyClient

ALPHABET = string.ascii_letters + string.digits + "!#$%&*+-=?@^_"

with EntropyClient.from_env() as client:
    picks = client.get_integers(0, len(ALPHABET) - 1, count=20)
    print("".join(ALPHABET[i] for i in picks))
