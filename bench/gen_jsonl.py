#!/usr/bin/env python3
"""Seeded JSON-lines data for the load benchmarks: `gen_jsonl.py FILE RECORDS [SEED]`.

Each record is about 565 bytes: scalars of every JSON type, a nested object two levels deep and two arrays (one of
objects), the shape of an application's event export. The same seed writes the same bytes."""
import json
import random
import sys

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec "
         "romeo sierra tango uniform victor whiskey xray yankee zulu").split()
CITIES = ["Berlin", "Lisbon", "Osaka", "Quito", "Tromsø", "Nairobi", "Hanoi", "Perth"]


def record(rng, i):
    return {
        "id": i,
        "user": {
            "name": f"{rng.choice(WORDS).title()} {rng.choice(WORDS).title()}",
            "email": f"{rng.choice(WORDS)}.{i}@example.com",
            "address": {"city": rng.choice(CITIES), "zip": f"{rng.randrange(10000, 99999)}",
                        "geo": [round(rng.uniform(-90, 90), 5), round(rng.uniform(-180, 180), 5)]},
        },
        "tags": rng.sample(WORDS, rng.randrange(1, 5)),
        "events": [{"type": rng.choice(["view", "click", "buy"]), "at": 1700000000 + rng.randrange(10**7),
                    "value": round(rng.uniform(0, 500), 2)} for _ in range(rng.randrange(1, 4))],
        "amount": round(rng.uniform(0, 10000), 2),
        "active": rng.random() < 0.8,
        "score": rng.randrange(-1000, 1000),
        "created_at": f"2026-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}T{rng.randrange(24):02d}:"
                      f"{rng.randrange(60):02d}:{rng.randrange(60):02d}Z",
        "note": " ".join(rng.choice(WORDS) for _ in range(rng.randrange(8, 20))),
        "parent": None if rng.random() < 0.5 else rng.randrange(i + 1),
        "session": f"{rng.getrandbits(128):032x}",
        "referrer": f"https://www.example.com/{rng.choice(WORDS)}/{rng.choice(WORDS)}?q={rng.choice(WORDS)}",
    }


def main():
    path, count = sys.argv[1], int(sys.argv[2])
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    with open(path, "w", encoding="utf-8") as out:
        for i in range(count):
            out.write(json.dumps(record(rng, i), ensure_ascii=False, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
