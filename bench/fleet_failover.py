"""Leader failover after ``kill -9``: three ``serve --store`` replicas on one PostgreSQL (started for the run) behind
haproxy (the shipped config); the leader is killed ``--kills`` times, and the time until another replica says it
leads (its ``/metrics``) is measured each time, then the killed one is restarted.

Prints each failover, the median and the worst, and each as a multiple of the watcher's evaluation interval (a new
leader takes over at its next round: the interval bounds the wait once PostgreSQL has freed the lock, which a
killed process's closed socket does at once).

    .venv/bin/python bench/fleet_failover.py [--kills 5] [--interval 1s]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.collector._fleet import running_fleet  # noqa: E402
from tests.collector._postgres import running_postgres  # noqa: E402


def _seconds(text: str) -> float:
    units = {"ms": 0.001, "s": 1.0}
    for unit, factor in units.items():
        if text.endswith(unit) and text[: -len(unit)].replace(".", "", 1).isdigit():
            return float(text[: -len(unit)]) * factor
    raise argparse.ArgumentTypeError(f"{text!r}: give a duration such as 200ms or 1s")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--interval", default="1s", help="the rules' evaluation interval (default 1s)")
    args = parser.parse_args(argv)
    interval = _seconds(args.interval)
    with tempfile.TemporaryDirectory() as tmp, running_postgres(durable=True) as server:
        rules = Path(tmp) / "rules.toml"
        rules.write_text(
            f'interval = "{args.interval}"\n\n[[rules]]\nname = "h"\nkind = "spike"\nmetric = "hallucination"\n',
            encoding="utf-8",
        )
        url = server.database()
        with running_fleet(url, Path(tmp), extra=("--rules", str(rules))) as fleet:
            took: list[float] = []
            for _ in range(args.kills):
                leader = fleet.leader()
                leader.kill()
                started = time.monotonic()
                while not [r for r in fleet.leaders() if r is not leader]:
                    time.sleep(0.01)
                took.append(time.monotonic() - started)
                print(f"failover {len(took)}: {took[-1]:.2f} s ({took[-1] / interval:.2f}x the interval)", flush=True)
                leader.start()
    median, worst = statistics.median(took), max(took)
    print(
        f"leader failover after kill -9, {len(took)} kills, interval {args.interval}: median {median:.2f} s "
        f"({median / interval:.2f}x the interval), worst {worst:.2f} s ({worst / interval:.2f}x)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
