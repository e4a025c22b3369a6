"""The Voter on PostgreSQL and MariaDB against the servers' own load tools
(issue #18): bench/pgbench and bench/sysbench run this file.

  python3 bench/voter-peers.py pgbench|sysbench ROUNDS SECONDS CLIENTS

One call is one vote: the Voter's routine on the server (PostgreSQL's
`SELECT voter_vote($1, $2, $3)`, MariaDB's `CALL voter_vote(?, ?, ?)`,
both prepared, from crates/targets/sql/), its transaction the routine's
own. Every tool draws a call by the Erlvolt bench's rules (loadrig's
`--generator erlvolt`): an area code uniform among the Voter's 305
(crates/workloads/src/voter/area_codes.rs, read here, not copied), a local
number uniform in 0..9,999,999, a contestant uniform in 1..6, at most
20,000 votes per phone.

- pgbench: a script (-f, -M prepared, -n) whose \\set lines draw the call;
  the area code comes from a binary tree of CASE expressions over the
  table (nine comparisons a call, none of them a query). -j = loadrig's
  runtime threads (1, its default on PostgreSQL, and pgbench's).
- sysbench: a Lua script with the table in a Lua array and the CALL
  prepared once per thread (bind parameters set per event); --threads =
  CLIENTS.
- loadrig: `run voter --generator erlvolt --contestants 6 --clients
  CLIENTS --duration SECONDS --keep`, a new seed each round (the peers
  draw new phones each run too), and it must verify.

The schema is made by loadrig (`run voter -n 100 --keep`) and its votes
emptied once before the rounds; every run adds votes, rounds alternate
(odd rounds loadrig first), so both tools see tables of the same sizes.

Throughput: calls per second as each tool reports it (pgbench's tps
without connection time, sysbench's transactions per second, loadrig's
measured throughput). CPU per call: the child's user + system CPU from
exec to exit (getrusage(RUSAGE_CHILDREN) around subprocess.run) over the
calls it completed in its life (loadrig: warm-up + measured ok). Any
failed run, a failed or ignored peer call, or a loadrig run that does not
verify makes the bench INVALID (exit 2). Targets: throughput >= 1.0x the
peer's, CPU per call <= 0.8x; exit 1 when one is missed.

LOADRIG_IO=uring: loadrig's runs use --io uring (docs/explanations/io-uring.md).
LOADRIG_THREADS=N: loadrig's runs use --threads N, and pgbench -j N
(default 1: loadrig's default on PostgreSQL and MariaDB).
"""
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile

peer = sys.argv[1]
rounds, seconds, clients = (int(a) for a in sys.argv[2:5])
LOADRIG = "target/release/loadrig"
IO = ["--io", os.environ["LOADRIG_IO"]] if os.environ.get("LOADRIG_IO") else []
THREADS = int(os.environ.get("LOADRIG_THREADS") or 1)
CORES = os.cpu_count() or 2
CONTESTANTS = 6
MAX_VOTES = 20_000
ENV = dict(os.environ, PGPASSWORD="bench")
NAME = f"bench/{peer}"

if peer == "pgbench":
    URL = "postgres://bench:bench@127.0.0.1/bench"
    SQL = ["psql", "-h", "127.0.0.1", "-U", "bench", "-d", "bench", "-tAc"]
elif peer == "sysbench":
    URL = "mysql://bench:bench@127.0.0.1/bench"
    SQL = ["mysql", "-h", "127.0.0.1", "-u", "bench", "-pbench", "-N", "-B", "bench", "-e"]
else:
    print(f"{NAME}: no such peer"); sys.exit(2)


def invalid(why):
    print(why)
    print(f"{NAME}: INVALID")
    sys.exit(2)


def cpu_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd):
    c0 = cpu_children()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    cpu = cpu_children() - c0
    if p.returncode != 0:
        invalid(f"{NAME}: exit {p.returncode}: {' '.join(cmd)}\n{p.stdout[-3000:]}{p.stderr[-3000:]}")
    return p.stdout + p.stderr, cpu


def sql(statement):
    return run([*SQL, statement])[0].strip()


def area_codes():
    src = open("crates/workloads/src/voter/area_codes.rs").read()
    codes = [int(c) for c in re.findall(r'\((\d+), "[A-Z]{2}"\)', src)]
    if len(codes) != 305:
        invalid(f"{NAME}: read {len(codes)} area codes, not the Voter's 305")
    return codes


def case_tree(codes, lo, hi):
    """pgbench expression: codes[:a] for lo <= :a < hi, by halving."""
    if hi - lo == 1:
        return str(codes[lo])
    mid = (lo + hi) // 2
    return f"case when :a < {mid} then {case_tree(codes, lo, mid)} else {case_tree(codes, mid, hi)} end"


def pgbench_script(codes):
    return (f"\\set a random(0, {len(codes) - 1})\n"
            f"\\set p ({case_tree(codes, 0, len(codes))}) * 10000000 + random(0, 9999999)\n"
            f"\\set c random(1, {CONTESTANTS})\n"
            f"SELECT voter_vote(:p, :c, {MAX_VOTES});\n")


def sysbench_script(codes):
    return f"""local AREA = {{ {', '.join(map(str, codes))} }}
function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
  stmt = con:prepare("CALL voter_vote(?, ?, ?)")
  params = {{ stmt:bind_create(sysbench.sql.type.BIGINT), stmt:bind_create(sysbench.sql.type.INT),
             stmt:bind_create(sysbench.sql.type.INT) }}
  stmt:bind_param(unpack(params))
  params[3]:set({MAX_VOTES})
end
function event()
  params[1]:set(AREA[sysbench.rand.uniform(1, #AREA)] * 10000000 + sysbench.rand.uniform(0, 9999999))
  params[2]:set(sysbench.rand.uniform(1, {CONTESTANTS}))
  stmt:execute()
end
function thread_done()
  stmt:close()
  con:disconnect()
end
"""


def peer_run(script):
    if peer == "pgbench":
        out, cpu = run(["pgbench", "-h", "127.0.0.1", "-U", "bench", "-n", "-M", "prepared", "-f", script,
                        "-c", str(clients), "-j", str(THREADS), "-T", str(seconds), "bench"])
        tps = re.search(r"tps = ([\d.]+) \(without initial connection time\)", out)
        n = re.search(r"number of transactions actually processed: (\d+)", out)
        failed = re.search(r"number of failed transactions: (\d+)", out)
        if not tps or not n or (failed and int(failed.group(1)) > 0):
            invalid(out)
        return float(tps.group(1)), cpu * 1e6 / max(int(n.group(1)), 1)
    out, cpu = run(["sysbench", script, "--db-driver=mysql", "--mysql-host=127.0.0.1", "--mysql-port=3306",
                    "--mysql-user=bench", "--mysql-password=bench", "--mysql-db=bench",
                    f"--threads={clients}", f"--time={seconds}", "--report-interval=0", "run"])
    m = re.search(r"transactions:\s+(\d+)\s+\(([\d.]+) per sec", out)
    errors = re.search(r"ignored errors:\s+(\d+)", out)
    if not m or (errors and int(errors.group(1)) > 0):
        invalid(out)
    return float(m.group(2)), cpu * 1e6 / max(int(m.group(1)), 1)


def loadrig_run(seed):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "r.json")
        _, cpu = run([LOADRIG, "run", "voter", *IO, "--threads", str(THREADS), "--target", URL, "--generator", "erlvolt",
                      "--contestants", str(CONTESTANTS), "--max-votes", str(MAX_VOTES),
                      "--clients", str(clients), "--duration", str(seconds), "--seed", str(seed),
                      "--keep", "--max-error-rate", "0", "-q", "--out", path])
        r = json.load(open(path))
    v = (r.get("verification") or {}).get("verdict") or {}
    if v.get("passed") is not True:
        invalid(f"loadrig did not verify: {v}")
    ok = r["measured"]["ok"] + r["warmup"]["ok"]
    return r["measured"]["throughput"], cpu * 1e6 / max(ok, 1)


run([LOADRIG, "run", "voter", *IO, "--target", URL, "--generator", "erlvolt", "--contestants",
     str(CONTESTANTS), "-n", "100", "--keep", "-q"])
sql("TRUNCATE votes; TRUNCATE votes_by_phone;" if peer == "pgbench"
    else "TRUNCATE TABLE votes; TRUNCATE TABLE votes_by_phone;")
version = sql("SHOW server_version" if peer == "pgbench" else "SELECT VERSION()")
print(f"{'PostgreSQL' if peer == 'pgbench' else 'MariaDB'} {version} on 127.0.0.1, the Voter, {clients} clients, "
      f"{seconds} s per run, {rounds} rounds, {CORES} cores shared by server and clients"
      + f", loadrig with --threads {THREADS}" + (f" --io {IO[1]}" if IO else ""))

with tempfile.TemporaryDirectory() as d:
    script = os.path.join(d, "voter.pgbench" if peer == "pgbench" else "voter.lua")
    codes = area_codes()
    with open(script, "w") as f:
        f.write(pgbench_script(codes) if peer == "pgbench" else sysbench_script(codes))
    runs = {"loadrig": [], peer: []}
    for i in range(1, rounds + 1):
        order = [("loadrig", lambda: loadrig_run(42 + i)), (peer, lambda: peer_run(script))]
        if i % 2 == 0:
            order.reverse()
        for name, f in order:
            tps, cpu = f()
            runs[name].append((tps, cpu))
            print(f"  round {i} {name:<8} {tps:>10,.0f} calls/s  {cpu:8.1f} us cpu/call", flush=True)

(lt, lc), (pt, pc) = ((statistics.median(t for t, _ in rs), statistics.median(c for _, c in rs))
                      for rs in runs.values())
tr, cr = lt / pt, lc / pc
print(f"\nmedians of {rounds} rounds   {'loadrig':>20}   {peer:>20}   loadrig/{peer}")
print(f"voter        {lt:>10,.0f} {lc:7.1f} us   {pt:>10,.0f} {pc:7.1f} us   {tr:6.2f}x {cr:6.2f}x")
ok = tr >= 1.0 and cr <= 0.8
print(f"\n{peer} Voter: loadrig {tr:.2f}x the throughput at {cr:.2f}x the CPU per call "
      f"(target >= 1.00x at <= 0.80x): {'PASS' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
