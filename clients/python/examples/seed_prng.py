"""Seed a fast local PRNG with 256 quantum bits: reproducible (print and keep the seed) yet
unpredictable. For draws that must each be fresh, use EntropyRandom instead (last lines)."""

import random

from entropy_diode import EntropyClient, EntropyRandom

with EntropyClient.from_env() as client:
    seed = int.from_bytes(client.get_bytes(32), "big")
    local = random.Random(seed)
    print(f"seed={seed:064x}", "gauss:", round(local.gauss(0, 1), 6))

    fresh = EntropyRandom(client)  # every call draws from the gateway
    print("shuffled:", fresh.sample(range(10), 10))
