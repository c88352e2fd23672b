"""The scale harness (issue 25) runs end to end at a small size, so it never rots: correctness only,
never timing (figures belong in BENCHMARKS.md)."""

import json
from pathlib import Path

import numpy as np

from benchmarks import scale, stages


def test_many_users_on_one_store_each_see_only_their_own(tmp_path: Path):
    home = tmp_path / "many"
    scale.build(home, "tfidf", 20, 50)
    mm = scale.open_memory(home, "tfidf")
    try:
        for u in (0, 7, 19):
            user = scale.user_name(u)
            own = set(scale.user_texts(50, u, 20))
            found = scale.ask(mm, "Alice visited the Paris trip", user)
            assert found and all(h.item.user_id == user and h.item.content in own for h in found)
            assert mm.stats(user_id=user).total == 50
    finally:
        mm.close()


def test_tenant_run_and_stage_table(tmp_path: Path):
    report = scale.main(
        ["--sizes", "200", "--configs", "tfidf", "--tenants", "20x50", "--queries", "8", "--index",
         "--json", str(tmp_path / "s.json"), "--markdown", str(tmp_path / "s.md")],
        progress=lambda s: None,
    )
    size, indexed = report.sizes
    assert size.size == 200 and size.mean_hits > 0 and indexed.config == "tfidf+hnsw"
    assert indexed.index_s is not None and indexed.mean_hits == size.mean_hits
    assert set(stages.STAGES) <= set(size.stages) and size.stages["total"]["p50_ms"] > 0
    spent = sum(size.stages[s]["mean_ms"] for s in stages.EXCLUSIVE)
    assert abs(spent - size.stages["total"]["mean_ms"]) < 0.05 * size.stages["total"]["mean_ms"] + 0.01
    (tenants,) = report.tenants
    assert (tenants.users, tenants.per_user, tenants.foreign_hits) == (20, 50, 0)
    text = (tmp_path / "s.md").read_text(encoding="utf-8")
    assert "| lexical |" in text and "| tfidf | 20 × 50 |" in text


def test_template_embedder_embeds_each_sentence_once():
    calls: list[list[str]] = []

    class Inner:
        name, dimension = "fake", 2

        def embed(self, texts: list[str], *, kind: str = "passage") -> np.ndarray:
            calls.append(list(texts))
            return np.ones((len(texts), 2), dtype=np.float32)

    emb = scale.TemplateEmbedder(Inner())
    out = emb.embed(["tea #1", "tea #2", "coffee #3"])
    emb.embed(["tea #9"])
    assert out.shape == (3, 2) and calls == [["tea", "coffee"]]
    emb.embed(["tea #1"], kind="query")
    assert calls[-1] == ["tea #1"]


def test_serving_benchmark_reports_memory(tmp_path: Path, capsys):
    from benchmarks import serving

    home = tmp_path / "tfidf-3x40"
    scale.build(home, "tfidf", 3, 40)
    report = serving.main(["--home", str(home), "--config", "tfidf", "--users", "3", "--queries", "4"])
    assert {"rss_mb", "anon_mb", "file_mb"} <= set(report["after_searches"]) and report["search_ms"]["p50"] > 0
    assert serving.parse_size("2G") == 2 << 30 and serving.parse_size("512M") == 512 << 20


def test_merge_joins_the_rows_of_several_runs(tmp_path: Path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    scale.main(["--sizes", "60", "--configs", "tfidf", "--queries", "2", "--json", str(a)], progress=lambda s: None)
    scale.main(["--sizes", "90", "--configs", "tfidf", "--queries", "2", "--json", str(b)], progress=lambda s: None)
    report = scale.main(["--merge", str(b), str(a), "--markdown", str(tmp_path / "m.md")], progress=lambda s: None)
    assert [(r.config, r.size) for r in report.sizes] == [("tfidf", 60), ("tfidf", 90)]
    assert "| tfidf | 90 |" in (tmp_path / "m.md").read_text(encoding="utf-8")


def test_vector_layout_convert_and_search(tmp_path: Path):
    from benchmarks import vector_layout

    home = tmp_path / "one"
    scale.build(home, "tfidf", 1, 300)
    dim = int(json.loads((home / "vectors" / "memories" / "collection.json").read_text())["dimension"])
    out = tmp_path / "layouts" / "compact"
    made = vector_layout.convert(home, out, "compact")
    assert made["points"] == 300
    plain = tmp_path / "layouts" / "plain"
    vector_layout.convert(home, plain, "mapped")
    rng = np.random.default_rng(0)
    for seed in (scale.QUERY_SEED, scale.QUERY_SEED + 1):  # stand-in query vectors (no e5 in this test)
        np.save(out.parent / f"queries-{seed}-3.npy", rng.standard_normal((3, dim)).astype(np.float32))
    report = vector_layout.search(out, 3, cold=True, exact_from=plain)
    assert report["layout"] == "compact" and report["first"]["p50"] > 0
    assert report["top10_equal_share"] > 0.5  # re-scored with the float32 vectors
