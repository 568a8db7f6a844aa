"""The seeded fault schedule: which faults, in which order, under which writer, between which input slices.

Everything here is a pure function of the arguments, so ``python -m soak --seed S`` with the same
``--records/--faults/--writers/--executor-writer`` replays the same schedule: the same kinds in the
same order, the same input records (keys, sequence numbers, malformed ones) in the same slices, the
same jitters and the same target picks. What a pick lands on (which broker coordinates a transaction
right now) depends on the live cluster; the pick only makes the choice among the candidates
reproducible.

The executor writer (the spec's ``executor_writer``) decides one thing here. On the JVM writer
(``jvm``, the product's default) every phase runs its tasks in the executor JVM: the executors
phase its writer tasks, the driver phase its spill tasks (docs/design-notes.md note 43); and,
json_enrich having no Python UDF, neither starts a PySpark Python worker at all (a soak run sampled
none over a whole executors phase; ``tests/dags/test_secured_pipeline.py`` sees none either), so
``kill_python_worker`` would find nothing to kill there and the soak would silently prove less.
:func:`build` therefore turns every ``kill_python_worker`` drawn under the JVM writer into
``kill_executor`` (the event keeps ``replaces="kill_python_worker"``). The executor JVM is the process
that runs the JVM writer's task and holds its producer and open transaction (or its spill file), as
the Python worker does for the Python writer, so its SIGKILL is that writer's process-level form of
the same fault: a writer task dying mid-task. It is the harder form (every task of that executor
dies with it, and Spark must find another executor); a single task attempt dying while its executor
lives is what the JVM writer's crash points cover (``tests/chaos/test_executor_crash_points.py``,
and ``tests/integration/test_driver_writer_streamed.py`` for the spill).

Replacing rather than leaving the fault out keeps the phase's fault count, its input slices and the
random stream (the substitution happens after every draw), so every other event is the same
whichever executor writer runs, and a replaced event keeps its jitter and pick. The Python executor
writer (``python``) keeps ``kill_python_worker`` in both phases: its tasks, and its spill tasks, run
in Python workers. (Runs before note 43 kept it in the driver phase on ``jvm`` too, when the spill
always ran in Python workers.)
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

#: The fault kinds, in the order the report lists them.
KINDS: tuple[str, ...] = (
    "kill_driver",
    "kill_python_worker",
    "kill_executor",
    "kill_transaction_coordinator",
    "kill_group_coordinator",
    "kill_output_leader",
    "restart_broker",
    "pause_broker",
    "slow_transaction",
)
#: Each kind drawn at least this often once the schedule is large enough to hold it for every kind (a
#: phase on the JVM writer then runs its drawn ``kill_python_worker`` as ``kill_executor``).
MIN_PER_KIND = 5
WRITERS: tuple[str, ...] = ("driver", "executors")
#: What runs the executor writers' tasks (the spec's ``executor_writer``); ``jvm`` is the product's default.
EXECUTOR_WRITERS: tuple[str, ...] = ("jvm", "python")
DEFAULT_EXECUTOR_WRITER = "jvm"
#: The kinds a phase on the JVM writer runs instead: it has no Python worker to kill.
JVM_WRITER_SUBSTITUTES: dict[str, str] = {"kill_python_worker": "kill_executor"}
#: Seconds to wait after a slice is produced before looking for the fault's window (an open
#: transaction): spreads the hits over different moments of a batch and different batches.
MAX_JITTER_S = 4.0


@dataclass(frozen=True)
class FaultEvent:
    """One scheduled fault.

    :param index: position in the whole schedule (0-based, across phases).
    :param phase: the writers of the phase it belongs to (``driver`` or ``executors``).
    :param kind: one of :data:`KINDS`.
    :param jitter_s: seconds between producing the slice before it and looking for its window.
    :param pick: in [0, 1): chooses among candidate targets (brokers, partitions, processes).
    :param replaces: the kind drawn for this event when ``kind`` stands in for it (``kill_python_worker``
        in an executors phase on the JVM writer), else None.
    """

    index: int
    phase: str
    kind: str
    jitter_s: float
    pick: float
    replaces: str | None = None


@dataclass(frozen=True)
class Phase:
    """One pipeline run through faults: its writers, its faults and its input in slices.

    Slice ``k`` is produced right before ``events[k]`` (the job first starts after slice 0), and the
    last slice after the last fault: the job has fresh work whenever a fault lands.
    """

    writers: str
    events: tuple[FaultEvent, ...]
    slices: tuple[int, ...]
    record_seed: str

    @property
    def records(self) -> int:
        return sum(self.slices)


@dataclass(frozen=True)
class Schedule:
    seed: int
    records: int
    faults: int
    phases: tuple[Phase, ...]
    executor_writer: str = DEFAULT_EXECUTOR_WRITER

    def counts(self) -> dict[str, int]:
        """Faults per kind, every kind listed (0 when absent)."""
        found = Counter(e.kind for p in self.phases for e in p.events)
        return {kind: found.get(kind, 0) for kind in KINDS}

    def events(self) -> list[FaultEvent]:
        return [e for p in self.phases for e in p.events]

    def to_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "records_per_phase": self.records, "faults": self.faults,
                "executor_writer": self.executor_writer, "counts": self.counts(),
                "replaced": dict(Counter(f"{e.replaces}->{e.kind}" for e in self.events() if e.replaces)),
                "phases": [{"writers": p.writers, "record_seed": p.record_seed, "slices": list(p.slices),
                            "events": [asdict(e) for e in p.events]} for p in self.phases]}


def kind_multiset(total: int, rng: random.Random) -> list[str]:
    """``total`` kinds: each at least :data:`MIN_PER_KIND` times when ``total`` allows it for all of them
    (9 x 5 = 45), the rest drawn at random; below that as even as possible (``total=9``: each once)."""
    if total < 1:
        raise ValueError(f"need at least one fault, got {total}")
    if total >= MIN_PER_KIND * len(KINDS):
        kinds = [k for k in KINDS for _ in range(MIN_PER_KIND)]
        kinds += rng.choices(KINDS, k=total - len(kinds))
        return kinds
    # Whole rounds of every kind, then a seeded choice of kinds for the remainder (no kind twice in it).
    rounds, rest = divmod(total, len(KINDS))
    return [k for k in KINDS for _ in range(rounds)] + rng.sample(KINDS, rest)


def deal(kinds: list[str], phases: int) -> list[list[str]]:
    """Split ``kinds`` over ``phases`` so each kind is shared as evenly as possible and phase sizes differ
    by at most one: sort by kind, deal round robin (the caller shuffles each hand)."""
    ordered = sorted(kinds, key=KINDS.index)
    return [ordered[i::phases] for i in range(phases)]


def split(total: int, parts: int) -> tuple[int, ...]:
    """``total`` as ``parts`` near-equal positive sizes, larger ones first."""
    if parts < 1 or total < parts:
        raise ValueError(f"cannot split {total} records into {parts} non-empty slices")
    base, extra = divmod(total, parts)
    return tuple(base + (1 if i < extra else 0) for i in range(parts))


def phase_kind(kind: str, writers: str, executor_writer: str) -> str:
    """The kind a phase runs for a drawn ``kind``: a phase on the JVM writer (the executor writers' tasks or
    the driver writer's spill) has no Python worker, so it kills the executor JVM instead
    (:data:`JVM_WRITER_SUBSTITUTES`); otherwise ``kind``.

    :param writers: the phase's writers (``driver`` or ``executors``): both run their tasks where
        ``executor_writer`` says.
    """
    if writers not in WRITERS:
        raise ValueError(f"writers must be one of {WRITERS}, got {writers!r}")
    if executor_writer == "jvm":
        return JVM_WRITER_SUBSTITUTES.get(kind, kind)
    return kind


def build(seed: int, *, records: int, faults: int, writers: tuple[str, ...] = WRITERS,
          executor_writer: str = DEFAULT_EXECUTOR_WRITER) -> Schedule:
    """The schedule for ``seed``: ``faults`` in total dealt over one phase per writer; each phase gets
    ``records`` input records in ``len(events) + 1`` slices.

    :param executor_writer: what runs every phase's tasks (``jvm`` or ``python``); on ``jvm`` the
        ``kill_python_worker`` faults become ``kill_executor`` (module docstring).
    """
    unknown = [w for w in writers if w not in WRITERS]
    if not writers or unknown:
        raise ValueError(f"writers must be a non-empty subset of {WRITERS}, got {list(writers)}")
    if executor_writer not in EXECUTOR_WRITERS:
        raise ValueError(f"executor_writer must be one of {EXECUTOR_WRITERS}, got {executor_writer!r}")
    if faults < len(writers):
        raise ValueError(f"{faults} fault(s) cannot cover {len(writers)} phase(s): give each at least one")
    rng = random.Random(seed)
    hands = deal(kind_multiset(faults, rng), len(writers))
    phases, index = [], 0
    for phase_writers, hand in zip(writers, hands, strict=True):
        rng.shuffle(hand)
        events = []
        for drawn in hand:
            # Substituted after the draws: the random stream, hence every other event, stays the same.
            kind = phase_kind(drawn, phase_writers, executor_writer)
            events.append(FaultEvent(index=index, phase=phase_writers, kind=kind,
                                     jitter_s=round(rng.uniform(0, MAX_JITTER_S), 2), pick=round(rng.random(), 6),
                                     replaces=drawn if kind != drawn else None))
            index += 1
        phases.append(Phase(writers=phase_writers, events=tuple(events), slices=split(records, len(events) + 1),
                            record_seed=f"{seed}-{phase_writers}"))
    return Schedule(seed=seed, records=records, faults=faults, phases=tuple(phases), executor_writer=executor_writer)


def choose(candidates: list[Any], pick: float) -> Any:
    """The candidate ``pick`` (in [0, 1)) lands on, after sorting, so the same live set gives the same choice."""
    if not candidates:
        raise ValueError("no candidates to choose from")
    ordered = sorted(candidates)
    return ordered[min(int(pick * len(ordered)), len(ordered) - 1)]
