#!/usr/bin/env python3
"""Validates the sequences sample_schemas wrote, independently of encore.

    validate_samples.py SCHEMAS.json SAMPLES.jsonl N [--expect-invalid] [--min-finished F]

Every finished sequence must parse as JSON (Python's json) and validate
against its schema (python3-jsonschema, Draft 2020-12, formats checked where
the library can: date, email, ipv4, uuid, ...). At least a share F
(default 0.8) of the sequences of each schema must have finished, and every schema must have N
samples. With --expect-invalid (the mutation test) it succeeds only when some
finished sequence fails: the broken grammar rule was caught."""
import json
import sys

import jsonschema


def main():
    schemas = json.load(open(sys.argv[1], encoding="utf-8"))
    n_want = int(sys.argv[3])
    expect_invalid = "--expect-invalid" in sys.argv[4:]
    min_finished = 0.8
    if "--min-finished" in sys.argv:
        min_finished = float(sys.argv[sys.argv.index("--min-finished") + 1])
    counts = [[0, 0] for _ in schemas]  # [samples, finished]
    invalid = 0
    for line in open(sys.argv[2], encoding="utf-8"):
        rec = json.loads(line)
        i = rec["schema"]
        counts[i][0] += 1
        if not rec["finished"]:
            continue
        counts[i][1] += 1
        raw = bytes.fromhex(rec["hex"])
        try:
            value = json.loads(raw.decode("utf-8"))
            jsonschema.Draft202012Validator(
                schemas[i], format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
            ).validate(value)
        except (ValueError, jsonschema.ValidationError) as e:
            invalid += 1
            if not expect_invalid or invalid <= 3:
                print(f"schema {i} sample {rec['sample']}: {raw!r}: {str(e).splitlines()[0]}")
    short = [i for i, (n, f) in enumerate(counts) if n != n_want or f < min_finished * n_want]
    total = sum(f for _, f in counts)
    print(f"{len(schemas)} schemas, {sum(n for n, _ in counts)} samples, {total} finished, {invalid} invalid")
    if expect_invalid:
        return 0 if invalid else 1
    for i in short:
        print(f"schema {i}: {counts[i][0]} samples, {counts[i][1]} finished (want {n_want}, {min_finished:.0%} finished)")
    return 1 if invalid or short else 0


if __name__ == "__main__":
    sys.exit(main())
