"""Every module of ascend_eval/ is readable in one sitting: at most 600 lines (STYLE.md section 9).

models/ and kernels/ are not checked here yet (models/judge/torch.py is longer).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 600


def test_no_module_is_longer_than_the_limit() -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for path in sorted((ROOT / "ascend_eval").rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > LIMIT
    }
    assert not long, f"modules over {LIMIT} lines (split them by concern): {long}"
