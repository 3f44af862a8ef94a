"""Default sampling through the CLI: default options keep a bad deletion out of the exported
payload.

30 reductions of a tree whose failure reproduces with probability 0.9, where deleting
``bad.txt`` drops the rate to exactly θ -- θ as *this* reduction learns it from its baseline
(the command recomputes it with ReproMin's own code once the 20 baseline runs are in) -- and
deleting ``keep.txt`` drops it to 0. Each run draws from a seeded generator, so the test is
reproducible. The number of payloads without ``bad.txt`` must stay at or below the binomial
99% quantile at α = 0.05 (before the payload gate, about 12% of reductions lost the file).
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from scipy.stats import binom

REPO = Path(__file__).resolve().parents[2]
TRIALS = 30
ALPHA = 0.05

#: The command (POSIX sh; one Python call per reduction, at the 20th run, to learn θ). Runs are
#: numbered under flock; run n draws ``cksum("seed-n") mod 1000`` (seeded, reproducible) and
#: reproduces when the draw is below the tree's rate in per mille (θ rounded down: still ≤ θ).
CHECK = """
state=$1; seed=$2
n=$(flock "$state/lock" sh -c 'n=$(cat "$0/count" 2>/dev/null || echo 0); n=$((n+1));
echo $n > "$0/count"; echo $n' "$state")
draw=$(( $(printf '%s-%s' "$seed" "$n" | cksum | cut -d' ' -f1) % 1000 ))
if [ ! -e keep.txt ]; then rate=0
elif [ -e bad.txt ]; then rate=900
else rate=$(cat "$state/theta")
fi
ok=0; [ "$draw" -lt "$rate" ] && ok=1
if [ "$n" -le 20 ]; then  # the baseline: the first 20 runs, all of the source tree (--jobs 1)
    printf '%s' "$ok" >> "$state/baseline"
    [ "$n" -eq 20 ] && "$PYTHON" -c "$LEARN" "$state"
fi
[ "$ok" -eq 1 ] && { echo 'BUG: reproduced'; exit 1; }
exit 0
"""
LEARN = (
    "import math, sys; from repomin.sampling import stats; "
    "from repomin.sampling.policy import SamplingConfig, SamplingPolicy; "
    "k = open(sys.argv[1] + '/baseline').read().count('1'); "
    "t = SamplingPolicy.learn(SamplingConfig(), k, 20, stats.lower_bound(k, 20, 0.95)).theta; "
    "open(sys.argv[1] + '/theta', 'w').write(str(math.floor(t * 1000)))"
)


def _reduce(tmp: Path, seed: int) -> bool:
    """One reduction with default sampling options; True when ``bad.txt`` was deleted."""
    src, state = tmp / "src", tmp / "state"
    src.mkdir(parents=True)
    state.mkdir()
    for name in ("keep.txt", "bad.txt", "junk.txt"):
        (src / name).write_text(f"{name}\n")
    script = tmp / "check.sh"
    script.write_text(CHECK)
    command = f"sh {script} {state} {seed}"
    argv = [sys.executable, "-m", "repomin", "reduce", str(src), "-o", str(tmp / "out")]
    argv += ["--command", command, "--match", "BUG", "--jobs", "1", "-q"]
    argv += ["--env", f"PYTHONPATH={REPO / 'src'}", "--env", f"PYTHON={sys.executable}"]
    argv += ["--env", f"LEARN={LEARN}"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stderr
    return not (tmp / "out" / "bad.txt").exists()


@pytest.mark.slow
def test_default_sampling_keeps_the_bad_deletion_out_through_the_cli(tmp_path: Path) -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:  # two reductions at a time
        lost = sum(pool.map(lambda seed: _reduce(tmp_path / f"t{seed}", seed), range(TRIALS)))
    assert lost <= binom.ppf(0.99, TRIALS, ALPHA), lost
