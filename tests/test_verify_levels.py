"""The verification levels find what they are for: a hidden-information leak, on any backend."""

from __future__ import annotations

from pathlib import Path

import envc
from envc.verify import verify

ROOT = Path(__file__).resolve().parent.parent


def test_leak_of_the_opponents_card_is_found(tmp_path: Path) -> None:
    text = (ROOT / "specs" / "kuhn_poker.yaml").read_text()
    leaky = text.replace("features[5 + chips[1 - p]] = true", "features[5 + chips[1 - p]] = card[1 - p] == Card.king")
    assert leaky != text
    p = tmp_path / "kuhn_leaky.yaml"
    p.write_text(leaky)
    spec = envc.load(str(p))
    checks = {c.name: c for c in verify(spec, envc.build(spec), levels=("L1",), episodes=50)}
    assert not checks["no hidden-information leak"].passed
    leak = checks["no hidden-information leak"]
    assert "observation 'features' changes with hidden fields" in leak.failures[0]
    assert len(leak.failures) == 5 and 5 < leak.failed <= leak.cases  # all counted, the first five kept
    honest = envc.load(str(ROOT / "specs" / "kuhn_poker.yaml"))
    assert all(c.passed for c in verify(honest, envc.build(honest), levels=("L1",), episodes=50))


def test_strict_reference_l1_on_a_card_game(tmp_path: Path) -> None:
    # the leak check injects states the game never reaches; the strict reference must not crash on them
    spec = envc.load(str(ROOT / "tests" / "specs" / "tcg_mechanics.yaml"))
    checks = verify(spec, envc.build(spec), levels=("L1",), episodes=5)
    assert all(c.passed for c in checks), [c.failures for c in checks if not c.passed]
    assert next(c for c in checks if c.name == "no hidden-information leak").cases > 50
