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
exec to exit (its rusage from os.wait4, bench/harness.py) over the
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
import sys
import tempfile

import harness as h

peer = sys.argv[1]
rounds, seconds, clients = (int(a) for a in sys.argv[2:5])
LOADRIG = h.loadrig_bin()
IO = h.io_flags()
THREADS = int(os.environ.get("LOADRIG_THREADS") or 1)
CORES = os.cpu_count() or 2
CONTESTANTS = 6
MAX_VOTES = 20_000
ENV = dict(os.environ, PGPASSWORD="bench")
bench = h.Bench(peer, rounds, unit="call", label=f"bench/{peer}",
                args=dict(rounds=rounds, seconds=seconds, clients=clients, threads=THREADS, io=IO[1:]))

if peer == "pgbench":
    URL = "postgres://bench:bench@127.0.0.1/bench"
    SQL = ["psql", "-h", "127.0.0.1", "-U", "bench", "-d", "bench", "-tAc"]
elif peer == "sysbench":
    URL = "mysql://bench:bench@127.0.0.1/bench"
    SQL = ["mysql", "-h", "127.0.0.1", "-u", "bench", "-pbench", "-N", "-B", "bench", "-e"]
else:
    print(f"bench/{peer}: no such peer"); sys.exit(2)


def invalid(why):
    bench.invalid(why)


def run(cmd):
    p = bench.run(cmd, env=ENV)
    return p.text, p


def sql(statement):
    return run([*SQL, statement])[0].strip()


def area_codes():
    src = open("crates/workloads/src/voter/area_codes.rs").read()
    codes = [int(c) for c in re.findall(r'\((\d+), "[A-Z]{2}"\)', src)]
    if len(codes) != 305:
        invalid(f"read {len(codes)} area codes, not the Voter's 305")
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
        out, p = run(["pgbench", "-h", "127.0.0.1", "-U", "bench", "-n", "-M", "prepared", "-f", script,
                        "-c", str(clients), "-j", str(THREADS), "-T", str(seconds), "bench"])
        tps = re.search(r"tps = ([\d.]+) \(without initial connection time\)", out)
        n = re.search(r"number of transactions actually processed: (\d+)", out)
        failed = re.search(r"number of failed transactions: (\d+)", out)
        if not tps or not n or (failed and int(failed.group(1)) > 0):
            invalid(out)
        return float(tps.group(1)), p.cpu * 1e6 / max(int(n.group(1)), 1), p
    out, p = run(["sysbench", script, "--db-driver=mysql", "--mysql-host=127.0.0.1", "--mysql-port=3306",
                  "--mysql-user=bench", "--mysql-password=bench", "--mysql-db=bench",
                  f"--threads={clients}", f"--time={seconds}", "--report-interval=0", "run"])
    m = re.search(r"transactions:\s+(\d+)\s+\(([\d.]+) per sec", out)
    errors = re.search(r"ignored errors:\s+(\d+)", out)
    if not m or (errors and int(errors.group(1)) > 0):
        invalid(out)
    return float(m.group(2)), p.cpu * 1e6 / max(int(m.group(1)), 1), p


def loadrig_run(seed):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "r.json")
        _, p = run([LOADRIG, "run", "voter", *IO, "--threads", str(THREADS), "--target", URL, "--generator", "erlvolt",
                    "--contestants", str(CONTESTANTS), "--max-votes", str(MAX_VOTES),
                    "--clients", str(clients), "--duration", str(seconds), "--seed", str(seed),
                    "--keep", "--max-error-rate", "0", "-q", "--out", path])
        r = json.load(open(path))
    v = (r.get("verification") or {}).get("verdict") or {}
    if v.get("passed") is not True:
        invalid(f"loadrig did not verify: {v}")
    ok = r["measured"]["ok"] + r["warmup"]["ok"]
    return r["measured"]["throughput"], p.cpu * 1e6 / max(ok, 1), p


run([LOADRIG, "run", "voter", *IO, "--target", URL, "--generator", "erlvolt", "--contestants",
     str(CONTESTANTS), "-n", "100", "--keep", "-q"])
sql("TRUNCATE votes; TRUNCATE votes_by_phone;" if peer == "pgbench"
    else "TRUNCATE TABLE votes; TRUNCATE TABLE votes_by_phone;")
version = sql("SHOW server_version" if peer == "pgbench" else "SELECT VERSION()")
print(f"{'PostgreSQL' if peer == 'pgbench' else 'MariaDB'} {version} on 127.0.0.1, the Voter, {clients} clients, "
      f"{seconds} s per run, {bench.rounds_n} rounds, {CORES} cores shared by server and clients"
      + f", loadrig with --threads {THREADS}" + (f" --io {IO[1]}" if IO else ""))

with tempfile.TemporaryDirectory() as d:
    script = os.path.join(d, "voter.pgbench" if peer == "pgbench" else "voter.lua")
    codes = area_codes()
    with open(script, "w") as f:
        f.write(pgbench_script(codes) if peer == "pgbench" else sysbench_script(codes))
    c = bench.case("Voter")
    for i, name in bench.rounds(["loadrig", peer]):
        tps, cpu, p = loadrig_run(42 + i) if name == "loadrig" else peer_run(script)
        c.add(name, i, tps, cpu, load=p.load)
        print(f"  round {i} {name:<8} {tps:>10,.0f} calls/s  {cpu:8.1f} us cpu/call  load {p.load:.1f}", flush=True)

bench.finish(rate="calls/s", cpu="cpu/call")
