"""The relevance floor on everyday memories (issue 35): what reaches a prompt, per language.

For each probe set and language (:mod:`benchmarks.datasets.floor_probe`: 50 memories of one user,
50 questions each answered by one memory in other words, 20 off-topic questions without a time word
and 20 with one), the product (``MemoryManager.search``, limit 20, as ``build_context`` asks) is asked
every question; what reaches a prompt is the hits that cleared the floor (``not hit.below_floor``):

- ``missing``: answerable questions whose memory is not among them (target: ≤ 1 of 45 per language);
- ``no-answer``: off-topic questions that get none of them, per kind (target: ≥ 0.9);
- ``in prompt``: how many memories reach the prompt per question (off-topic: what should be 0).

``--sweep NAME=v1,v2`` tries settings; each configuration is chosen on one set and reported on the
other (two folds: tune on ``a``, report ``b``, and the reverse), so every reported figure is held out.

    nice -n 10 python -m benchmarks.floor_probe --embed-cache /tmp/e5-cache --json probe.json
    nice -n 10 python -m benchmarks.floor_probe --embed-cache DIR --sweep floor_z=2.5,3,3.5 --json cv.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks.crossval import parse_sweep
from benchmarks.datasets.floor_probe import ASKED, KINDS, LANGS, SETS, ProbeSet, load

LIMIT = 20  # what build_context asks for


@dataclass(frozen=True, slots=True)
class SetScore:
    """What reached a prompt for one set in one language."""

    set: str
    lang: str
    answerable: int
    missing: int  # answerable questions whose memory did not clear the floor
    first: int  # answerable questions whose memory is the first of those that did
    prompt_answerable: float  # memories in the prompt per answerable question
    no_answer: dict[str, float]  # per kind of off-topic question: the share that got nothing
    prompt_off_topic: dict[str, float]  # memories in the prompt per off-topic question, per kind
    missed: tuple[str, ...]  # the answerable questions missing their memory
    answered_off_topic: tuple[str, ...]  # the off-topic questions that got something

    @property
    def found(self) -> float:
        """Share of answerable questions whose memory reached the prompt."""
        return 1.0 - self.missing / self.answerable

    @property
    def balanced(self) -> float:
        """The selection objective: the mean of ``found`` and the mean no-answer rate over kinds."""
        return (self.found + sum(self.no_answer.values()) / len(self.no_answer)) / 2


class Probe:
    """One ``MemoryManager`` per set and language (one user each) in a temporary home.

    ``configure`` swaps query-time settings on the same stores (nothing is embedded again).
    """

    def __init__(self, *, embed_cache: Path | None, memory_type: str, overrides: dict[str, Any]) -> None:
        from hello_memory import MemoryManager, Settings

        self._home = Path(tempfile.mkdtemp(prefix="hm-floor-probe-"))
        self._base = dict(overrides)
        self._constants: dict[str, Any] = {}  # floor constants changed by configure, and their values
        self._settings = Settings
        embedder: Any = None
        if embed_cache is not None:
            from benchmarks.systems.encoder import CachedE5Embedder, shared_encoder

            embedder = CachedE5Embedder(shared_encoder(embed_cache))
        self.managers: dict[tuple[str, str], Any] = {}
        for name, lang in itertools.product(SETS, LANGS):
            settings = Settings(home=self._home / f"{name}_{lang}")
            mm = MemoryManager(settings, user_id=f"{name}-{lang}", embedder=embedder)
            probe = load(name, lang)
            added = mm.add_many([{"content": m.text, "memory_type": memory_type, "created_at": m.created_at,
                                  "metadata": {"probe": m.key}} for m in probe.memories])  # fmt: skip
            assert len(added) == len(probe.memories)
            self.managers[name, lang] = mm
        self.configure({})

    def configure(self, overrides: dict[str, Any]) -> None:
        """Search with the base settings plus ``overrides`` from now on. A name ``floor.NAME`` sets a
        constant of :mod:`hello_memory.core.floor` instead (for exploring them; restored by :meth:`close`)."""
        from hello_memory.core import floor

        merged = {**self._base, **overrides}
        for key, value in merged.items():
            if key.startswith("floor."):
                self._constants.setdefault(key[6:], getattr(floor, key[6:]))
                setattr(floor, key[6:], value)
        for name, value in self._constants.items():
            if f"floor.{name}" not in merged:
                setattr(floor, name, value)
        settings = {k: v for k, v in merged.items() if not k.startswith("floor.")}
        for (name, lang), mm in self.managers.items():
            mm.settings = self._settings(home=self._home / f"{name}_{lang}", **settings)

    def prompt(self, name: str, lang: str, question: str) -> list[str]:
        """The probe ids of the memories that reach a prompt for ``question``, best first."""
        hits = self.managers[name, lang].search(question, limit=LIMIT, reference_time=ASKED)
        return [str(h.item.metadata["probe"]) for h in hits if not h.below_floor]

    def score(self, probe: ProbeSet) -> SetScore:
        """Ask every question of ``probe``."""
        missed, first, sizes = [], 0, []
        for q in probe.answerable:
            got = self.prompt(probe.name, probe.lang, q.text)
            sizes.append(len(got))
            first += bool(got) and got[0] == q.target
            if q.target not in got:
                missed.append(q.text)
        no_answer, prompt_off, answered = {}, {}, []
        for kind in KINDS:
            got_all = [(q.text, self.prompt(probe.name, probe.lang, q.text)) for q in probe.off_topic(kind)]
            no_answer[kind] = sum(not g for _, g in got_all) / len(got_all)
            prompt_off[kind] = sum(len(g) for _, g in got_all) / len(got_all)
            answered += [text for text, g in got_all if g]
        return SetScore(probe.name, probe.lang, len(probe.answerable), len(missed), first,
                        sum(sizes) / len(sizes), no_answer, prompt_off, tuple(missed), tuple(answered))  # fmt: skip

    def close(self) -> None:
        """Close every manager, restore the floor's constants and delete the home."""
        from hello_memory.core import floor

        for name, value in self._constants.items():
            setattr(floor, name, value)
        for mm in self.managers.values():
            mm.close()
        shutil.rmtree(self._home, ignore_errors=True)


def run(probe: Probe, configs: Sequence[dict[str, Any]]) -> list[dict[tuple[str, str], SetScore]]:
    """Every configuration's scores, per set and language."""
    out = []
    for config in configs:
        probe.configure(config)
        out.append({(s, lang): probe.score(load(s, lang)) for s, lang in itertools.product(SETS, LANGS)})
    return out


def choose(scores: list[dict[tuple[str, str], SetScore]], on: str) -> int:
    """The configuration with the best :attr:`SetScore.balanced` on set ``on`` (mean over languages);
    ties go to the earlier one (the first offered is the default)."""
    def objective(i: int) -> float:
        return sum(scores[i][on, lang].balanced for lang in LANGS) / len(LANGS)

    return max(range(len(scores)), key=lambda i: (objective(i), -i))


def folds(configs: Sequence[dict[str, Any]], scores: list[dict[tuple[str, str], SetScore]]) -> list[dict[str, Any]]:
    """Tune on one set, report on the other: the chosen configuration and its held-out scores."""
    out = []
    for train, test in ((SETS[0], SETS[1]), (SETS[1], SETS[0])):
        i = choose(scores, train)
        out.append({"train": train, "test": test, "chosen": configs[i],
                    "held_out": {lang: _row(scores[i][test, lang]) for lang in LANGS}})  # fmt: skip
    return out


def _row(s: SetScore) -> dict[str, Any]:
    return {**asdict(s), "found": round(s.found, 3), "balanced": round(s.balanced, 3)}


def markdown(configs: Sequence[dict[str, Any]], scores: list[dict[tuple[str, str], SetScore]]) -> str:
    """One row per configuration, set and language; then the folds when there was a choice."""
    lines = ["| configuration | set | lang | missing (of 50) | first | in prompt (answerable) | "
             "no-answer plain / time | in prompt (off-topic plain / time) |", "|---|---|---|---|---|---|---|---|"]
    for config, by_set in zip(configs, scores, strict=True):
        name = ", ".join(f"{k}={v}" for k, v in config.items()) or "defaults"
        for (s, lang), r in by_set.items():
            lines.append(f"| {name} | {s} | {lang} | {r.missing} | {r.first} | {r.prompt_answerable:.1f} | "
                         f"{r.no_answer['plain']:.2f} / {r.no_answer['time']:.2f} | "
                         f"{r.prompt_off_topic['plain']:.1f} / {r.prompt_off_topic['time']:.1f} |")
    if len(configs) > 1:
        lines += ["", "Held out (chosen on the other set by the mean of found and no-answer):", ""]
        for fold in folds(configs, scores):
            for lang, r in fold["held_out"].items():
                lines.append(f"- tuned on {fold['train']}, {fold['chosen'] or 'defaults'} → set {fold['test']} "
                             f"{lang}: missing {r['missing']}, no-answer plain {r['no_answer']['plain']:.2f} "
                             f"time {r['no_answer']['time']:.2f}")
    return "\n".join(lines)


def configurations(sweeps: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """The grid of ``sweeps`` (the empty configuration when there is none)."""
    names = list(sweeps)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*(sweeps[n] for n in names))]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the probe; write JSON (and Markdown); print the table."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.floor_probe", description=__doc__.split("\n\n")[0])
    p.add_argument("--embed-cache", type=Path, help="e5 embedding cache directory (benchmarks.systems.encoder)")
    p.add_argument("--memory-type", default="episodic", choices=("episodic", "semantic"))
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a Settings override")
    p.add_argument("--sweep", action="append", default=[], metavar="NAME=v1,v2", help="settings to try")
    p.add_argument("--json", type=Path, required=True)
    p.add_argument("--markdown", type=Path)
    args = p.parse_args(argv)
    base = {s.name: s.values[0] for s in parse_sweep(args.set)}
    configs = configurations({s.name: list(s.values) for s in parse_sweep(args.sweep)})
    probe = Probe(embed_cache=args.embed_cache, memory_type=args.memory_type, overrides=base)
    try:
        scores = run(probe, configs)
    finally:
        probe.close()
    text = markdown(configs, scores)
    print(text)
    report = {"settings": base, "memory_type": args.memory_type,
              "configurations": [{"config": c, "scores": [_row(r) for r in s.values()]}
                                 for c, s in zip(configs, scores, strict=True)],
              "folds": folds(configs, scores) if len(configs) > 1 else []}  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.markdown:
        args.markdown.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
