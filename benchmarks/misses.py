"""Where a system misses: read the rankings a benchmark run wrote and explain its misses at k.

Usage::

    python -m benchmarks.retrieval --dataset longmemeval --data ../shared/data/longmemeval \\
        --system hello_memory --json runs/lme.json --rankings runs/lme.jsonl
    python -m benchmarks.misses runs/lme.jsonl --k 5
    python -m benchmarks.misses runs/lme.jsonl --k 5 --examples 3 --data ../shared/data/longmemeval

For every system in the file it prints the misses at ``k`` (queries with no relevant result in the
first ``k``) by category, and what the first ``k`` held instead:

- ``other gold``: a result that is another query's gold. In a pooled corpus (LongMemEval oracle:
  500 users' evidence in one memory) this is evidence of the same kind, of another user;
- ``right document``: for span tasks (docs_qa), a chunk of a document the gold spans are in, but
  not overlapping them.

``--examples N`` also prints N misses per category with the query, the gold texts and the top
results (it reloads the dataset from ``--data`` for the texts).

``--against OLD.jsonl`` compares with an earlier run of the same queries instead: per system, the
queries a change fixed (a miss at k before, a hit now) and broke, by category, listed with their text::

    python -m benchmarks.misses runs/after.jsonl --against runs/before.jsonl --k 5
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.chunking import parse_span_id
from benchmarks.datasets.base import Match, RetrievalTask
from benchmarks.evaluation import span_matches
from benchmarks.metrics import id_matches

NO_CATEGORY = "-"


@dataclass(frozen=True, slots=True)
class Ranked:
    """One query's ranking by one system, as written to a rankings file."""

    system: str
    qid: str
    corpus_id: str
    category: str
    query: str
    gold: frozenset[str]
    ranked: tuple[str, ...]
    match: Match

    def first_hit(self) -> int | None:
        """1-based rank of the first relevant result, or ``None``."""
        judge = span_matches if self.match is Match.SPAN else id_matches
        for i, matched in enumerate(judge(self.ranked, self.gold)):
            if matched:
                return i + 1
        return None


def ranking_records(task: RetrievalTask, system: str, rankings: Mapping[str, Sequence[str]]) -> list[dict[str, Any]]:
    """The JSON lines of one system's rankings (queries with gold only)."""
    return [
        {
            "system": system,
            "qid": q.qid,
            "corpus_id": q.corpus_id,
            "category": q.category or NO_CATEGORY,
            "query": q.text,
            "gold": sorted(q.gold),
            "ranked": list(rankings.get(q.qid, [])),
            "match": task.match.value,
        }
        for q in task.queries
        if q.gold
    ]


def read_rankings(path: Path) -> list[Ranked]:
    """Parse a rankings file written by ``benchmarks.retrieval --rankings``."""
    out = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
                out.append(
                    Ranked(
                        r["system"],
                        r["qid"],
                        r["corpus_id"],
                        r["category"],
                        r["query"],
                        frozenset(r["gold"]),
                        tuple(r["ranked"]),
                        Match(r["match"]),
                    )
                )
            except (ValueError, KeyError, TypeError) as e:
                raise ValueError(f"{path}:{n}: not a rankings line ({e})") from e
    return out


@dataclass(frozen=True, slots=True)
class MissReport:
    """Misses at ``k`` of one system, by category, with what the first ``k`` held instead."""

    system: str
    k: int
    n: int
    span: bool  # span task: the extra column is "right document", not "other gold"
    misses: dict[str, int]
    counts: dict[str, int]
    other_gold: dict[str, int]
    right_document: dict[str, int]
    missed: list[Ranked]


def _documents(ids: Iterable[str]) -> set[str]:
    return {s[0] for s in map(parse_span_id, ids) if s}


def miss_report(records: Sequence[Ranked], k: int) -> MissReport:
    """Misses at ``k`` of one system's records (all from the same system)."""
    gold_owner: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in records:
        for g in r.gold:
            gold_owner[(r.corpus_id, g)].add(r.qid)
    counts: Counter[str] = Counter(r.category for r in records)
    misses: Counter[str] = Counter()
    other: Counter[str] = Counter()
    document: Counter[str] = Counter()
    missed = []
    for r in records:
        hit = r.first_hit()
        if hit is not None and hit <= k:
            continue
        missed.append(r)
        misses[r.category] += 1
        top = r.ranked[:k]
        if r.match is Match.SPAN:
            if _documents(top) & _documents(r.gold):
                document[r.category] += 1
        elif any(gold_owner.get((r.corpus_id, t), set()) - {r.qid} for t in top):
            other[r.category] += 1
    return MissReport(
        records[0].system if records else "",
        k,
        len(records),
        any(r.match is Match.SPAN for r in records),
        dict(misses),
        dict(counts),
        dict(other),
        dict(document),
        missed,
    )


def to_markdown(report: MissReport) -> str:
    """A table of misses by category (and overall) for one system."""
    extra = "right document" if report.span else "other gold"
    found = report.right_document if report.span else report.other_gold
    lines = [
        f"### {report.system}: misses at {report.k} ({sum(report.misses.values())} of {report.n} queries)",
        "",
        f"| category | queries | misses | hit@{report.k} | misses with {extra} in the top {report.k} |",
        "|---|---|---|---|---|",
    ]
    for cat in sorted(report.counts):
        n, m = report.counts[cat], report.misses.get(cat, 0)
        lines.append(f"| {cat} | {n} | {m} | {1 - m / n:.3f} | {found.get(cat, 0)} |")
    total = sum(report.misses.values())
    lines.append(
        f"| **all** | {report.n} | {total} | {1 - total / max(1, report.n):.3f} | {sum(found.values())} |"
    )
    return "\n".join(lines)


def examples_markdown(report: MissReport, task: RetrievalTask, per_category: int, chars: int = 160) -> str:
    """``per_category`` missed queries per category, with gold and top texts from ``task``."""
    text_of = {(cid, d.doc_id): d.text for cid, docs in task.corpora.items() for d in docs}

    def text(cid: str, item: str) -> str:
        span = parse_span_id(item)
        if span:
            doc = text_of.get((cid, span[0])) or next(
                (t for (_, d), t in text_of.items() if d == span[0]), ""
            )
            body = doc[span[1] : span[2]]
        else:
            body = text_of.get((cid, item), "")
        return " ".join(body.split())[:chars] or f"({item})"

    shown: Counter[str] = Counter()
    lines = []
    for r in report.missed:
        if shown[r.category] >= per_category:
            continue
        shown[r.category] += 1
        first = r.first_hit()
        lines += ["", f"**{r.category}** `{r.qid}` (first relevant at {first or '-'}): {r.query[:300]}"]
        lines += [f"- gold: {text(r.corpus_id, g)}" for g in sorted(r.gold)[:2]]
        lines += [f"- top {i}: {text(r.corpus_id, t)}" for i, t in enumerate(r.ranked[:3], 1)]
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Flips:
    """What changed at ``k`` between two runs of one system over the same queries."""

    system: str
    k: int
    n: int
    hits_before: int
    hits_after: int
    fixed: list[Ranked]  # a miss before, a hit now (the new run's records)
    broken: list[Ranked]


def flips(before: Sequence[Ranked], after: Sequence[Ranked], k: int) -> Flips:
    """Compare two runs of one system; only queries present in both count."""
    old = {r.qid: r for r in before}
    pairs = [(old[r.qid], r) for r in after if r.qid in old]

    def hit(r: Ranked) -> bool:
        first = r.first_hit()
        return first is not None and first <= k

    return Flips(
        after[0].system if after else "",
        k,
        len(pairs),
        sum(hit(a) for a, _ in pairs),
        sum(hit(b) for _, b in pairs),
        [b for a, b in pairs if hit(b) and not hit(a)],
        [b for a, b in pairs if hit(a) and not hit(b)],
    )


def flips_markdown(f: Flips, listed: int = 10) -> str:
    """Hit counts before/after, fixed and broken queries by category, and up to ``listed`` of each."""
    lines = [
        f"### {f.system}: hit@{f.k} {f.hits_before / max(1, f.n):.3f} → {f.hits_after / max(1, f.n):.3f} "
        f"({f.n} queries in both runs; {len(f.fixed)} fixed, {len(f.broken)} broken)",
        "",
        "| category | fixed | broken |",
        "|---|---|---|",
    ]
    fixed, broken = Counter(r.category for r in f.fixed), Counter(r.category for r in f.broken)
    if not fixed and not broken:
        return lines[0]
    lines += [f"| {c} | {fixed.get(c, 0)} | {broken.get(c, 0)} |" for c in sorted(set(fixed) | set(broken))]
    for label, rows in (("fixed", f.fixed), ("broken", f.broken)):
        for r in rows[:listed]:
            lines.append(f"- {label} `{r.qid}` ({r.category}, now first relevant at {r.first_hit() or '-'}): "
                         f"{r.query[:160]}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.misses", description=__doc__.split("\n\n")[0])
    p.add_argument("rankings", type=Path, help="a file written by benchmarks.retrieval --rankings")
    p.add_argument("--k", type=int, default=5, help="a miss has nothing relevant in the first k (default 5)")
    p.add_argument("--system", action="append", help="only these systems (repeatable)")
    p.add_argument(
        "--against", type=Path, metavar="OLD.jsonl", help="compare with an earlier run: fixed and broken queries"
    )
    p.add_argument(
        "--examples",
        type=int,
        default=0,
        metavar="N",
        help="print N missed queries per category (with --against: list N fixed and N broken; default 10)",
    )
    p.add_argument("--dataset", help="dataset of the run (needed by --examples)")
    p.add_argument("--data", type=Path, help="dataset path of the run (needed by --examples)")
    p.add_argument("--split", help="split of the run (for --examples)")
    p.add_argument("--lang", default="zh", choices=("zh", "en"), help="madial language (for --examples)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Print the miss reports; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.k < 1:
        parser.error("--k must be at least 1")
    if args.examples and args.against is None and (args.data is None or args.dataset is None):
        parser.error("--examples needs --dataset and --data (the texts come from the dataset)")
    try:
        records = read_rankings(args.rankings)
    except (OSError, ValueError) as e:
        parser.error(str(e))
    by_system: dict[str, list[Ranked]] = defaultdict(list)
    for r in records:
        if not args.system or r.system in args.system:
            by_system[r.system].append(r)
    if not by_system:
        parser.error(f"{args.rankings} holds no rankings" + (f" of {args.system}" if args.system else ""))
    if args.against is not None:
        try:
            earlier = read_rankings(args.against)
        except (OSError, ValueError) as e:
            parser.error(str(e))
        for system, rows in by_system.items():
            old = [r for r in earlier if r.system == system]
            if not old:
                print(f"{system}: not in {args.against}\n")
                continue
            print(flips_markdown(flips(old, rows, args.k), args.examples or 10) + "\n")
        return 0
    task = None
    if args.examples:
        from benchmarks.datasets import load_task

        task = load_task(args.dataset, args.data, split=args.split, lang=args.lang)
    for rows in by_system.values():
        report = miss_report(rows, args.k)
        print(to_markdown(report))
        if task is not None:
            print(examples_markdown(report, task, args.examples))
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
