"""Tests of bench/harness.py and bench/tables, driving them as a bench does:
fake tools (python3 one-liners whose CPU and output are known), a bench
script run as a process, its exit code, printed verdict and record.

  python3 -m unittest discover -s bench -p 'test_*.py'
"""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\nprint('{out}')"


def fake_bench(results, throughput, smoke=False, fail_round=None, loads=None, extra_env=None):
    """Runs a bench of two fake tools; loadrig's throughput per round from
    `throughput` (the peer's is 100), CPU per op 1 us for loadrig and 2 for
    the peer. Returns (exit code, stdout)."""
    script = textwrap.dedent(f"""
        import sys
        import harness as h
        b = h.Bench("fake", {len(throughput)}, unit="op", args={{"x": 1}})
        c = b.case("only")
        for i, tool in b.rounds(["loadrig", "peer"]):
            if i == {fail_round!r} and tool == "peer":
                b.check(h.measure([sys.executable, "-c", "import sys; sys.exit(3)"]))
            p = b.run([sys.executable, "-c", "print('ok')"])
            tp = {throughput!r}[i - 1] if tool == "loadrig" else 100.0
            load = {loads!r}[i - 1] if {loads!r} else None
            c.add(tool, i, tp, 1.0 if tool == "loadrig" else 2.0, load=load)
        b.finish()
    """)
    env = dict(os.environ, PYTHONPATH=HERE, BENCH_RESULTS=results, BENCH_SMOKE="1" if smoke else "")
    env.pop("BENCH_MAX_LOAD", None)
    env.pop("BENCH_MAX_SPREAD", None)
    env.update(extra_env or {})
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    return p.returncode, p.stdout + p.stderr


def records(folder):
    path = os.path.join(folder, "fake.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f]


class Harness(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_rounds_alternate_which_tool_goes_first(self):
        b = harness.Bench("x", 3)
        if harness.SMOKE:
            self.skipTest("BENCH_SMOKE set in the environment")
        self.assertEqual(list(b.rounds(["a", "b"])),
                         [(1, "a"), (1, "b"), (2, "b"), (2, "a"), (3, "a"), (3, "b")])
        self.assertEqual([t for _, t in b.rounds(["a", "b", "c"])][:6], ["a", "b", "c", "b", "c", "a"])

    def test_cpu_is_the_childs_own_from_wait4(self):
        busy = harness.measure([sys.executable, "-c", BURN.format(s=0.4, out="busy")])
        idle = harness.measure([sys.executable, "-c", "import time; time.sleep(0.4)"])
        self.assertEqual((busy.rc, busy.out.strip()), (0, "busy"))
        self.assertGreaterEqual(busy.cpu, 0.35)
        self.assertLess(idle.cpu, 0.2)
        self.assertGreaterEqual(idle.wall, 0.39)

    def test_cpu_of_processes_run_at_once_is_each_ones_own(self):
        a, b = harness.measure_all([[sys.executable, "-c", BURN.format(s=0.3, out="a")],
                                    [sys.executable, "-c", "import time; time.sleep(0.3)"]])
        self.assertGreaterEqual(a.cpu, 0.25)
        self.assertLess(b.cpu, 0.2)

    def test_met_targets_pass_with_exit_0_and_a_record(self):
        code, out = fake_bench(self.dir, [120.0, 110.0, 130.0])
        self.assertEqual(code, 0, out)
        self.assertIn("fake only: loadrig 1.20x the throughput at 0.50x the CPU per op "
                      "(target >= 1.00x at <= 0.80x): PASS", out)
        [r] = records(self.dir)
        self.assertEqual((r["bench"], r["case"], r["verdict"], r["rounds"]), ("fake", "only", "PASS", 3))
        self.assertEqual(r["paired"]["throughput"], [1.2, 1.1, 1.3])
        for k in ("cpu", "cores", "kernel", "load"):
            self.assertIn(k, r["host"])
        self.assertIn("commit", r)

    def test_a_missed_target_fails_with_exit_1(self):
        code, out = fake_bench(self.dir, [90.0, 95.0, 92.0])
        self.assertEqual(code, 1, out)
        self.assertIn(": FAIL", out)
        self.assertEqual(records(self.dir)[0]["verdict"], "FAIL")

    def test_a_failed_run_is_invalid_with_exit_2(self):
        code, out = fake_bench(self.dir, [120.0, 120.0, 120.0], fail_round=2)
        self.assertEqual(code, 2, out)
        self.assertIn("fake bench: INVALID", out)
        self.assertNotIn("PASS", out)
        self.assertEqual(records(self.dir)[0]["verdict"], "INVALID")

    def test_rounds_that_disagree_widely_are_too_noisy(self):
        code, out = fake_bench(self.dir, [60.0, 130.0, 140.0])
        self.assertEqual(code, 2, out)
        self.assertIn("INVALID (too noisy to judge: paired throughput ratios 0.60x..1.40x", out)

    def test_a_loaded_machine_is_too_noisy(self):
        code, out = fake_bench(self.dir, [120.0, 120.0, 120.0], loads=[1.0, 9.0, 1.0],
                               extra_env={"BENCH_MAX_LOAD": "6"})
        self.assertEqual(code, 2, out)
        self.assertIn("too noisy to judge: load average 9.0 above 6", out)

    def test_a_smoke_run_is_one_round_and_writes_no_record(self):
        code, out = fake_bench(self.dir, [120.0, 60.0, 140.0], smoke=True)
        self.assertEqual(code, 0, out)
        self.assertIn("medians of 1 rounds", out)
        self.assertEqual(records(self.dir), [])


class Tables(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.results = os.path.join(self.dir, "results")

    def tearDown(self):
        self.tmp.cleanup()

    def tables(self, readme, *args):
        path = os.path.join(self.dir, "README.md")
        with open(path, "w") as f:
            f.write(readme)
        env = dict(os.environ, BENCH_RESULTS=self.results, BENCH_README=path,
                   BENCH_RESULTS_MD=os.path.join(self.dir, "RESULTS.md"))
        p = subprocess.run([os.path.join(HERE, "tables"), *args], capture_output=True, text=True, env=env)
        with open(path) as f:
            return p.returncode, p.stdout + p.stderr, f.read()

    def test_readme_table_is_the_latest_run_of_each_bench(self):
        fake_bench(self.results, [90.0, 95.0, 92.0])
        fake_bench(self.results, [120.0, 110.0, 130.0])
        readme = "intro\n<!-- bench-table:begin -->\nold\n<!-- bench-table:end -->\nafter\n"
        code, out, text = self.tables(readme)
        self.assertEqual(code, 0, out)
        self.assertNotIn("old", text)
        self.assertTrue(text.startswith("intro\n<!-- bench-table:begin -->\n| bench | date |"))
        self.assertTrue(text.endswith("<!-- bench-table:end -->\nafter\n"))
        [row] = [l for l in text.splitlines() if l.startswith("| fake ")]
        self.assertIn("| 1.20x | 0.50x | PASS |", row)
        with open(os.path.join(self.dir, "RESULTS.md")) as f:
            md = f.read()
        self.assertIn("History (2 runs", md)
        self.assertEqual(self.tables(text, "--check")[0], 0)

    def test_readme_without_markers_is_left_untouched(self):
        fake_bench(self.results, [120.0, 110.0, 130.0])
        code, out, text = self.tables("no markers here\n")
        self.assertEqual((code, text), (0, "no markers here\n"))
        self.assertIn("left untouched", out)

    def test_check_fails_when_results_are_stale(self):
        fake_bench(self.results, [120.0, 110.0, 130.0])
        self.tables("x\n")
        fake_bench(self.results, [90.0, 95.0, 92.0])
        code, out, _ = self.tables("x\n", "--check")
        self.assertEqual(code, 1, out)
        self.assertIn("is stale", out)


if __name__ == "__main__":
    unittest.main()
