"""Five random (version 4) UUIDs."""

from entropy_diode import EntropyClient

with EntropyClient.from_env() as client:
    for u in client.get_uuids(5):
        print(u)
