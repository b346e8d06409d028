"""The input fuzzer in CI: mutated platform and schedule documents through the
command line give a valid plan or one clean line and exit 2 -- never a traceback, a warning,
a negative, infinite or NaN time, a broadcast that misses nodes, or a file left behind.

The mutations and verdicts live in ``tests/_fuzz.py``; ``benchmarks/fuzzing/fuzz_inputs.py`` runs
the same fuzzer over 10 000 files.  Here hypothesis draws a small, fixed (derandomised)
set of cases, each run in-process (a few milliseconds), so the budget stays a few seconds.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _fuzz import Case, mutate, run_case, seeds

SEEDS = seeds()


@settings(max_examples=150)
@given(st.sampled_from(SEEDS), st.randoms(use_true_random=False))
def test_mutated_inputs_give_a_valid_plan_or_one_clean_line(seed, rng):
    case = mutate(seed, rng)
    with tempfile.TemporaryDirectory() as tmp:
        outcome, detail = run_case(seed, case, Path(tmp))
    assert outcome in ("valid", "clean error"), f"{outcome}: {detail} ({case.options})"


@pytest.mark.parametrize("seed", SEEDS, ids=[s.name for s in SEEDS])
def test_every_seed_is_valid_unmutated(seed, tmp_path):
    import json

    outcome, detail = run_case(seed, Case(".json", json.dumps(seed.data).encode()), tmp_path)
    assert outcome == "valid", detail


def test_a_case_is_a_pure_function_of_its_seed_and_draws():
    import copy
    import random

    import _fuzz

    before = copy.deepcopy(_fuzz.SPECIAL)
    first = [mutate(SEEDS[i % len(SEEDS)], random.Random(i)) for i in range(1200)]
    assert repr(_fuzz.SPECIAL) == repr(before)  # no mutation changed the shared values
    assert mutate(SEEDS[0], random.Random(0)) == first[0]
