"""The one bench harness: every peer bench under bench/ runs its tools through it.

A bench says how to run each tool and how to read its output; this module
owns the rest, the same way for every bench:

- rounds and alternation: `Bench.rounds(tools)` yields (round, tool) with the
  order rotated each round (two tools: odd rounds the first, even rounds the
  second goes first);
- whole-process CPU, one rule for every tool: `measure` starts the command and
  reaps it with os.wait4, whose rusage is the child's (and its reaped
  descendants') user + system CPU from exec to exit;
- the 1-minute load average at the start of each run;
- medians, ratios of medians (loadrig / peer) and paired ratios (round i of
  loadrig over round i of the peer);
- INVALID (exit 2): a run that failed (`Bench.invalid`), or a case too noisy
  to judge (see `noisy`); otherwise exit 0 when every verdict is PASS, 1 when
  one is FAIL;
- a record of the run (results as data, bench/results/BENCH.jsonl: one JSON
  line per case per run) unless it is a smoke run.

Environment: BENCH_SMOKE=1 (a smoke run: no record, no noise rule; the
bench picks its smallest case), BENCH_RESULTS (the records' folder, default
bench/results), BENCH_MAX_LOAD (the noise rule's load average, default 3 x
cores; `inf` turns it off), BENCH_MAX_SPREAD (default 1.5), CARGO_TARGET_DIR
(where the release loadrig is), LOADRIG_IO (`--io` for every loadrig run).
"""
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
EXIT_MET, EXIT_MISSED, EXIT_INVALID = 0, 1, 2
SMOKE = os.environ.get("BENCH_SMOKE", "") not in ("", "0")
CORES = os.cpu_count() or 1


def loadrig_bin():
    """The release binary the benches run, under CARGO_TARGET_DIR when set."""
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    return os.path.join(target, "release", "loadrig")


def io_flags():
    """`--io X` for every loadrig run when LOADRIG_IO is set, else nothing."""
    io = os.environ.get("LOADRIG_IO")
    return ["--io", io] if io else []


class Proc:
    """One finished run: its output, exit code, CPU seconds (user + system,
    from wait4), wall seconds and the load average when it started."""

    def __init__(self, cmd, rc, out, err, cpu, wall, load):
        self.cmd, self.rc, self.out, self.err = cmd, rc, out, err
        self.cpu, self.wall, self.load = cpu, wall, load

    @property
    def text(self):
        return self.out + self.err


class Running:
    """A started command whose output goes to temporary files, so that
    wait4 can reap it without a pipe filling up."""

    def __init__(self, cmd, env=None, stderr_to_stdout=False, cwd=None):
        self.cmd = [str(c) for c in cmd]
        self.load = load()
        self.outf = tempfile.TemporaryFile(mode="w+")
        self.errf = self.outf if stderr_to_stdout else tempfile.TemporaryFile(mode="w+")
        self.t0 = time.monotonic()
        self.p = subprocess.Popen(self.cmd, stdout=self.outf, stderr=self.errf, env=env,
                                  cwd=cwd, text=True, stdin=subprocess.DEVNULL)

    def done(self):
        """Whether the command has exited, without reaping it (WNOWAIT), so
        that wait() still gets its rusage."""
        return os.waitid(os.P_PID, self.p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None

    def wait(self):
        _, status, ru = os.wait4(self.p.pid, 0)
        wall = time.monotonic() - self.t0
        self.p.returncode = os.waitstatus_to_exitcode(status)
        out = read_all(self.outf)
        err = "" if self.errf is self.outf else read_all(self.errf)
        return Proc(self.cmd, self.p.returncode, out, err, ru.ru_utime + ru.ru_stime, wall, self.load)


def read_all(f):
    f.seek(0)
    text = f.read()
    f.close()
    return text


def measure(cmd, env=None, stderr_to_stdout=False, cwd=None):
    """Runs cmd to its end; returns a Proc (whatever its exit code)."""
    return Running(cmd, env, stderr_to_stdout, cwd).wait()


def measure_all(cmds, env=None, stderr_to_stdout=False):
    """Runs cmds at once; returns their Procs in order (CPU each its own)."""
    running = [Running(c, env, stderr_to_stdout) for c in cmds]
    return [r.wait() for r in running]


def load():
    """The 1-minute load average now (each run's line and the noise rule)."""
    return os.getloadavg()[0]


def median(xs):
    return statistics.median(xs)


class Target:
    """A verdict's targets: loadrig's throughput at least `throughput` x the
    peer's and its CPU per unit at most `cpu` x (below it when `strict`;
    None: not judged)."""

    def __init__(self, throughput=1.0, cpu=0.8, strict=False):
        self.throughput, self.cpu, self.strict = throughput, cpu, strict

    def cpu_ok(self, cr):
        return self.cpu is None or (cr < self.cpu if self.strict else cr <= self.cpu)

    def met(self, tr, cr):
        return (self.throughput is None or tr >= self.throughput) and self.cpu_ok(cr)

    def judged(self):
        """False for a bench with no target (it measures, exit 0)."""
        return self.throughput is not None or self.cpu is not None

    def words(self):
        parts = []
        if self.throughput is not None:
            parts.append(f">= {self.throughput:.2f}x")
        if self.cpu is not None:
            parts.append(f"{'<' if self.strict else '<='} {self.cpu:.2f}x")
        return " at ".join(parts)

    def as_dict(self):
        return {"throughput_min": self.throughput, "cpu_max": self.cpu, "cpu_strict": self.strict}


class Case:
    """The runs of one case: per tool, one dict of figures per round."""

    def __init__(self, name, solo=False):
        self.name, self.solo = name, solo
        self.runs = {}
        self.loads = []

    def add(self, tool, rnd, throughput, cpu_us, load=None, **extra):
        """Records round `rnd` of `tool`: throughput (per second), CPU in
        microseconds per unit, and any other figure (median taken too)."""
        self.runs.setdefault(tool, []).append(dict(round=rnd, throughput=throughput,
                                                   cpu_us=cpu_us, **extra))
        if load is not None:
            self.loads.append(load)

    def medians(self, tool):
        rs = self.runs[tool]
        keys = [k for k, v in rs[0].items() if k != "round" and isinstance(v, (int, float))]
        return {k: median(r[k] for r in rs) for k in keys}

    def paired(self, key, a, b):
        """The ratio a/b of `key`, round by round (rounds both ran)."""
        bs = {r["round"]: r[key] for r in self.runs.get(b, [])}
        return [r[key] / bs[r["round"]] for r in self.runs.get(a, [])
                if r["round"] in bs and bs[r["round"]]]


def noisy(case, a, b, target):
    """Why `case` is too noisy to judge, or None. The rule: (1) the 1-minute
    load average at the start of a run above BENCH_MAX_LOAD (default 3 x
    cores), or (2) with 3 rounds or more, a figure whose paired ratios
    spread more than BENCH_MAX_SPREAD (default 1.5: highest over lowest)
    and fall on both sides of its target, so the rounds disagree on the
    verdict. Never in a smoke run."""
    if SMOKE:
        return None
    why = noisy_load(case)
    if why:
        return why
    spread = float(os.environ.get("BENCH_MAX_SPREAD") or 1.5)
    checks = (("throughput", target.throughput, lambda r, t: r >= t),
              ("cpu_us", target.cpu, lambda r, t: target.cpu_ok(r)))
    for key, t, ok in checks:
        rs = case.paired(key, a, b)
        if t is None or len(rs) < 3 or min(rs) <= 0:
            continue
        if max(rs) / min(rs) > spread and any(ok(r, t) for r in rs) and not all(ok(r, t) for r in rs):
            return f"paired {key} ratios {min(rs):.2f}x..{max(rs):.2f}x straddle the target"
    return None


def noisy_load(case):
    """Rule (1) of `noisy`: the load average at a run's start too high."""
    max_load = float(os.environ.get("BENCH_MAX_LOAD") or 3 * CORES)
    if case.loads and max(case.loads) > max_load:
        return f"load average {max(case.loads):.1f} above {max_load:g}"
    return None


class Bench:
    """One bench run: its cases, verdicts, record and exit code."""

    def __init__(self, name, rounds, unit="op", target=None, args=None, label=None, says=None,
                 show_paired=False):
        self.name, self.unit, self.show_paired = name, unit, show_paired
        self.says = says or name
        self.rounds_n = 1 if SMOKE else rounds
        self.target = target or Target()
        self.args = args or {}
        self.label = label or f"{name} bench"
        self.cases = []
        self.notes = []
        self.absolutes = []

    def rounds(self, tools):
        """(round, tool) for each round, the first tool rotated each round."""
        for i in range(1, self.rounds_n + 1):
            k = (i - 1) % len(tools)
            for tool in tools[k:] + tools[:k]:
                yield i, tool

    def case(self, name, solo=False):
        """A new case; `solo`: one tool, not compared (see `absolute`)."""
        c = Case(name, solo)
        self.cases.append(c)
        return c

    def invalid(self, why, out=""):
        """A run failed: no median or verdict is built on the others. Exit 2."""
        print(f"{self.label}: {why}")
        if out:
            print(out[-3000:])
        print(f"{self.label}: INVALID")
        self.record([], "INVALID", why)
        sys.exit(EXIT_INVALID)

    def check(self, proc):
        """proc, or INVALID when it exited non-zero."""
        if proc.rc != 0:
            self.invalid(f"exit {proc.rc}: {' '.join(proc.cmd)}", proc.out[-2000:] + proc.err[-2000:])
        return proc

    def run(self, cmd, **kw):
        """measure + check: a run that must succeed."""
        return self.check(measure(cmd, **kw))

    def judge(self, case, a="loadrig", b=None):
        """The verdict of one case: a dict of medians, ratios and verdict."""
        b = b or next(t for t in case.runs if t != a)
        ma, mb = case.medians(a), case.medians(b)
        tr = ma["throughput"] / mb["throughput"] if mb["throughput"] else float("inf")
        cr = ma["cpu_us"] / mb["cpu_us"] if mb["cpu_us"] else float("inf")
        why = noisy(case, a, b, self.target)
        if not self.target.judged():
            verdict = "MEASURED"
        else:
            verdict = "INVALID" if why else ("PASS" if self.target.met(tr, cr) else "FAIL")
        return dict(case=case.name, tools=[a, b], medians={a: ma, b: mb},
                    ratios={"throughput": tr, "cpu": cr},
                    paired={"throughput": case.paired("throughput", a, b),
                            "cpu": case.paired("cpu_us", a, b)},
                    verdict=verdict, noise=why, runs=case.runs)

    def table(self, judged, rate="ops/s", cpu="cpu/op", extra=None):
        """Prints the medians and ratios of every case, one line each (with
        the tools' names beside the case when not every line has the same)."""
        if not judged:
            return
        a, b = judged[0]["tools"]
        if any(j["tools"] != [a, b] for j in judged):
            for j in judged:
                j["label"] = f"{j['case']} {j['tools'][0]}/{j['tools'][1]}"
            a, b = "tool", "peer"
        w = max(8, max(len(j.get("label", j["case"])) for j in judged) + 2)
        print(f"\nmedians of {self.rounds_n} rounds".ljust(w + 1)
              + f"{a:>22}  {b:>22}  {a + '/' + b:>24}")
        print(f"{'case':<{w}}{rate:>12} {cpu:>9}  {rate:>12} {cpu:>9}  {rate:>11} {cpu:>12}"
              + (f"   {extra[0]}" if extra else ""))
        for j in judged:
            ma, mb = (j["medians"][t] for t in j["tools"])
            r = j["ratios"]
            print(f"{j.get('label', j['case']):<{w}}{ma['throughput']:>12,.0f} {ma['cpu_us']:>6.3f} us  "
                  f"{mb['throughput']:>12,.0f} {mb['cpu_us']:>6.3f} us  "
                  f"{r['throughput']:>10.2f}x {r['cpu']:>11.2f}x"
                  + (f"   {extra[1](j)}" if extra else ""))

    def verdict_line(self, j):
        a, b = j["tools"]
        r = j["ratios"]
        line = (f"{self.says} {j['case']}: {a} {r['throughput']:.2f}x the throughput at "
                f"{r['cpu']:.2f}x the CPU per {self.unit}")
        if self.show_paired and j["paired"]["throughput"]:
            line += (f" (per-round {median(j['paired']['throughput']):.2f}x, "
                     f"{median(j['paired']['cpu']):.2f}x)")
        if not self.target.judged():
            return line + f" of {b} (no target)"
        line += f" (target {self.target.words()}): {j['verdict']}"
        return line + (f" (too noisy to judge: {j['noise']})" if j["noise"] else "")

    def finish(self, rate="ops/s", cpu="cpu/op", extra=None, a="loadrig", pairs=None):
        """Judges every case (`a` against the other tool, or each pair
        (a, b) that `pairs(case)` lists), prints the table and verdicts,
        writes the record and exits: 0 all PASS, 1 a FAIL, 2 INVALID."""
        halves = [c for c in self.cases if len(c.runs) == 1 and not c.solo]
        if halves and not SMOKE:
            self.invalid(f"case {halves[0].name} ran one tool only")
        pairs = pairs or (lambda c: [(a, None)])
        judged = [self.judge(c, x, y) for c in self.cases if len(c.runs) > 1 and not c.solo
                  for x, y in pairs(c)]
        self.table(judged, rate, cpu, extra)
        print()
        for c in halves:
            print(f"{self.says} {c.name}: {', '.join(c.runs)} only (a smoke run: the peer is not built)")
        for j in judged:
            print(self.verdict_line(j))
        for j in self.absolutes:
            print(j["line"])
        judged += self.absolutes
        verdicts = {j["verdict"] for j in judged}
        overall = "INVALID" if "INVALID" in verdicts else ("FAIL" if "FAIL" in verdicts else
                                                           "PASS" if "PASS" in verdicts else "MEASURED")
        self.record(judged, overall)
        sys.exit({"PASS": EXIT_MET, "MEASURED": EXIT_MET, "FAIL": EXIT_MISSED}.get(overall, EXIT_INVALID))

    def absolute(self, case, key, minimum=None, maximum=None, what="", tool=None):
        """A verdict on one tool's median `key` of `case` against a fixed
        bound (at least `minimum`, at most `maximum`), printed by finish()."""
        tool = tool or next(iter(case.runs))
        m = case.medians(tool)
        v = m[key]
        ok = (minimum is None or v >= minimum) and (maximum is None or v <= maximum)
        bound = minimum if minimum is not None else maximum
        word = ">=" if minimum is not None else "<="
        why = None if SMOKE else noisy_load(case)
        verdict = "INVALID" if why else ("PASS" if ok else "FAIL")
        line = (f"{self.says} {case.name}: {what or key} {v:,.2f}, {v / bound:.2f}x the target "
                f"({word} {bound:,.2f}): {verdict}" + (f" (too noisy to judge: {why})" if why else ""))
        self.absolutes.append(dict(case=case.name, tools=[tool], medians={tool: m}, key=key,
                                   bound={word: bound}, verdict=verdict, noise=why, line=line,
                                   runs=case.runs))

    def verdict(self, case, ok, line, invalid=None, **figures):
        """A verdict of the bench's own rule (several bounds, say), printed
        and recorded by finish() like the others: `line` ends in PASS or
        FAIL as `ok` says, or INVALID (why) when `invalid` says why the run
        cannot judge it. Returns the verdict."""
        verdict = "INVALID" if invalid else ("PASS" if ok else "FAIL")
        end = f"INVALID ({invalid})" if invalid else verdict
        self.absolutes.append(dict(case=case, tools=[], medians={}, figures=figures,
                                   verdict=verdict, noise=invalid, line=f"{line}: {end}"))
        return verdict

    def record(self, judged, overall, why=None):
        """Appends one JSON line per case (one line for a failed run) to
        BENCH_RESULTS/NAME.jsonl. A smoke run writes nothing."""
        if SMOKE:
            return
        base = dict(bench=self.name, run=run_id(), date=now(), host=host_facts(),
                    commit=git_commit(), args=self.args, rounds=self.rounds_n,
                    unit=self.unit, target=self.target.as_dict(), notes=self.notes,
                    bench_verdict=overall)
        lines = [dict(base, **j) for j in judged] or [dict(base, case=None, verdict=overall, invalid=why)]
        folder = os.environ.get("BENCH_RESULTS") or os.path.join(HERE, "results")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"{self.name}.jsonl"), "a") as f:
            for line in lines:
                f.write(json.dumps(line, sort_keys=True) + "\n")


_RUN_ID = None


def run_id():
    global _RUN_ID
    if _RUN_ID is None:
        _RUN_ID = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    return _RUN_ID


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def host_facts():
    """CPU model, cores, kernel, host name and load averages of this machine."""
    model = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), model)
    except OSError:
        pass
    return dict(name=platform.node(), cpu=model, cores=CORES, kernel=platform.release(),
                load=[round(x, 2) for x in os.getloadavg()])


def git_commit():
    p = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return p.stdout.strip() + ("-dirty" if dirty else "")


def server_cpu(pids):
    """CPU seconds so far of processes `pids` (from /proc), None when none
    of them could be read (not a local server)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total, seen = 0.0, False
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
            seen = True
        except (OSError, TypeError, IndexError, ValueError):
            pass
    return total if seen else None


def smallest(cases):
    """The cases to run: all of them, or in a smoke run the first only."""
    return list(cases)[:1] if SMOKE else list(cases)
