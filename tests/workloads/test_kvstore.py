"""kvstore (workloads/kvstore.c) on the host, against Debian's real
Redis (redis-tools: make deps installs it) with a small dataset, and against a fake
server that returns one value wrong and loses another: the read-back
must catch both. Its lines must give every figure the repository
matrix's `redis` workload parses. (A user process and a socket in a
temporary directory: nothing here touches the host's kernel settings.)"""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from lab.guest.textout import read_figures
from lab.paths import REPO
from lab.spec.matrix import load_matrix

BINARY = REPO / "workloads" / "build" / "kvstore"
# redis-tools' Redis, run by kvstore under the name redis-server
SERVER = Path("/usr/bin/redis-check-rdb")
BENCHMARK = Path("/usr/bin/redis-benchmark")


def kvstore(*args: str, tmp: Path | None = None
            ) -> subprocess.CompletedProcess[str]:
    """kvstore run with its socket in `tmp` (tests may run at once)."""
    assert BINARY.is_file(), "kvstore not built (make -C workloads)"
    sock = ["--socket", str(tmp / "kv.sock")] if tmp else []
    return subprocess.run([str(BINARY), *args, *sock], capture_output=True,
                          text=True, timeout=120)


def test_real_redis_loads_queries_and_reads_every_value_back(
        tmp_path: Path) -> None:
    assert SERVER.exists() and BENCHMARK.exists(), \
        "redis-tools is in the Makefile's DEB_PACKAGES"
    proc = kvstore("--server", str(SERVER), "--benchmark", str(BENCHMARK),
                   "--dataset", "8M", "--requests", "2000", tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr
    keys = 8 * 2**20 // 4000
    assert f"verify: keys={keys} mismatched=0 missing=0 " in proc.stdout
    wl = load_matrix(REPO / "matrix.yaml").workloads["redis"]
    parsed = read_figures(wl.parse, wl.program, proc.stdout)
    assert parsed.problems == []
    figs = {k: v["value"] for k, v in parsed.figures.items()}
    assert figs["kvstore.keys"] == keys
    assert figs["kvstore.mismatched"] == figs["kvstore.missing"] == 0
    assert figs["kvstore.used_memory"] > keys * 4000
    for phase in ("uniform", "hot"):
        assert figs[f"kvstore.{phase}_rps"] > 0
        assert 0 < figs[f"kvstore.{phase}_p50_ms"] <= \
            figs[f"kvstore.{phase}_p99_ms"]
    # The server's log goes to stderr, never among the parsed lines.
    assert "Redis" in proc.stderr and "Redis" not in proc.stdout


# Speaks just enough of Redis's protocol, on the socket kvstore names:
# key 7 comes back with one byte changed, key 9 not at all.
FAKE_SERVER = textwrap.dedent('''\
    import os, socket, sys
    path = sys.argv[sys.argv.index("--unixsocket") + 1]
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(4)
    store = {}
    while True:
        conn, _ = srv.accept()
        f = conn.makefile("rb")
        while True:
            head = f.readline()
            if not head:
                break
            args = []
            for _ in range(int(head[1:])):
                n = int(f.readline()[1:])
                args.append(f.read(n + 2)[:-2])
            cmd = args[0].upper()
            if cmd == b"SET":
                store[args[1]] = args[2]
                conn.sendall(b"+OK\\r\\n")
            elif cmd == b"GET":
                v = store.get(args[1])
                if args[1] == b"key:000000000009":
                    v = None
                if v is not None and args[1] == b"key:000000000007":
                    v = bytes([v[0] ^ 1]) + v[1:]
                conn.sendall(b"$-1\\r\\n" if v is None else
                             b"$%d\\r\\n%s\\r\\n" % (len(v), v))
            elif cmd == b"INFO":
                body = b"# Memory\\r\\nused_memory:1234\\r\\n"
                conn.sendall(b"$%d\\r\\n%s\\r\\n" % (len(body), body))
            elif cmd == b"SHUTDOWN":
                sys.exit(0)
''')

FAKE_BENCHMARK = ('"test","rps","avg_latency_ms","min_latency_ms",'
                  '"p50_latency_ms","p95_latency_ms","p99_latency_ms",'
                  '"max_latency_ms"\n"GET","100.0","1.0","0.1","0.9",'
                  '"1.5","2.0","3.0"\n')


def test_a_value_read_back_wrong_or_missing_is_a_data_error(
        tmp_path: Path) -> None:
    server = tmp_path / "server"
    server.write_text(f"#!{sys.executable}\n" + FAKE_SERVER)
    bench = tmp_path / "benchmark"
    bench.write_text("#!/bin/sh\nprintf '%s' '" + FAKE_BENCHMARK + "'\n")
    server.chmod(0o755)
    bench.chmod(0o755)
    proc = kvstore("--server", str(server), "--benchmark", str(bench),
                   "--dataset", "64K", "--value-size", "100", tmp=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert "verify: keys=655 mismatched=1 missing=1 " in proc.stdout
    assert "kvstore: key:000000000007 read back wrong" in proc.stderr
    assert 'uniform: "GET","100.0"' in proc.stdout
    assert 'hot: "GET","100.0"' in proc.stdout


def test_usage_errors_name_the_option() -> None:
    proc = kvstore("--server", str(SERVER))
    assert proc.returncode == 2
    assert "--server and --benchmark are needed" in proc.stderr
    proc = kvstore("--server", str(SERVER), "--benchmark", str(BENCHMARK),
                   "--value-size", "0")
    assert proc.returncode == 2
    assert "bad value for --value-size: 0" in proc.stderr
    proc = kvstore("--server", "/nonexistent/redis-server", "--benchmark",
                   str(BENCHMARK))
    assert proc.returncode == 1
    assert "exec /nonexistent/redis-server" in proc.stderr
