"""Tokens the way the standard library's `secrets` makes them, from the gateway."""

from entropy_diode import EntropyClient, EntropySecrets

with EntropyClient.from_env() as client:
    secrets = EntropySecrets(client)
    print(secrets.token_hex(16), secrets.token_urlsafe(), f"{secrets.randbelow(10**6):06d}")
