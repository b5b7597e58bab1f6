"""GPT-2 124M training step of the project against a minimal reference, side by side on one GPU,
then where the maxmargin ViT-B/2 step goes (eager and compiled).

    PYTHONPATH=src python3 benchmarks/gpu_speed_side_by_side.py --ref PATH/ref_gpt2.py \
        --out "$OUT" [--budget 235] [--only ref32,proj32,...] [--cpu-smoke]

In order, each in its own process with its own time-out, within ``--budget`` seconds in all (a step
whose usual time no longer fits is skipped and says so):

1. ``ref32``  the reference, ``--micro 32 --accum 4`` (3 warm-up + 8 timed steps, median);
2. ``proj32`` ``bench_gpt2.py`` at the same micro-batch, accumulation, context 1024, warm-up and
   timed steps (compilation in the warm-up), plus a profile of one more step;
3. ``ref64``, 4. ``proj64``: the same at ``--micro 64 --accum 2``;
5. ``vit_eager``: ``bench_vit.py`` (paper ViT-B/2, batch 128, 257 tokens), MFU and a profile of one
   step; 6. ``vit_compiled``: the same compiled.

``--only proj32_hf_sdpa`` (not in the default run) times the project's step with transformers' own
"sdpa" attention, the masked path a compiled step took before ``sdpa_unpadded``.

Writes four files to ``--out``: ``results.jsonl`` (each run's JSON line, then one ``ratio`` line per
micro-batch size: project tokens/s ÷ reference tokens/s), ``summary.md`` (the table, the ratios and
the profiles' breakdowns), ``profiles.json`` (the full profile tables) and ``log.txt`` (each
process's command, time and output tail).  ``--cpu-smoke`` checks the whole chain on a CPU: the
reference only answers ``--help`` (it needs CUDA) and the benches run tiny models.  Exit status
1 when a run failed (skipped runs do not count), else 0.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# (name, kind, micro, accum, usual seconds on an H100 incl. start-up and compilation, time-out)
STEPS = (
    ("ref32", "ref", 32, 4, 50, 90),
    ("proj32", "proj", 32, 4, 55, 100),
    ("ref64", "ref", 64, 2, 50, 90),
    ("proj64", "proj", 64, 2, 55, 100),
    ("vit_eager", "vit", 128, 1, 20, 45),
    ("vit_compiled", "vit_c", 128, 1, 60, 100),
    # only with --only: the project's step with transformers' own "sdpa" attention (the masked
    # kernel under compile, as before the unpadded attention), to size that lever alone
    ("proj32_hf_sdpa", "proj_hf", 32, 4, 55, 100),
)
OPTIONAL = {"proj32_hf_sdpa"}


def command(kind: str, micro: int, accum: int, ref: str, prof: Path, smoke: bool) -> list[str]:
    py = sys.executable
    if kind == "ref":
        if smoke:
            return [py, ref, "--help"]
        return [py, ref, "--micro", str(micro), "--accum", str(accum), "--steps", "8"]
    if kind in ("proj", "proj_hf"):
        cmd = [py, str(HERE / "bench_gpt2.py"), "--json", "--warmup", "3", "--steps", "8"]
        if kind == "proj_hf":
            cmd += ["--attn", "sdpa"]
        cmd += ["--cpu-smoke", "--micro", "2", "--accum", "2", "--ctx", "64"] if smoke else [
            "--micro", str(micro), "--accum", str(accum), "--ctx", "1024"]  # fmt: skip
        if micro == 32 and kind == "proj":
            cmd += ["--profile-out", str(prof)]
        return cmd
    cmd = [py, str(HERE / "bench_vit.py"), "--json", "--warmup", "5", "--steps", "30"]
    cmd += ["--profile-out", str(prof)]
    if kind == "vit_c":
        cmd.append("--compile")
    if smoke:
        cmd += ["--cpu-smoke", "--warmup", "1", "--steps", "2"]
    return cmd


def run(cmd: list[str], timeout: float) -> tuple[int | str, str, float]:
    """Run in its own process group (killed whole on time-out); (return code, output, seconds)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT / "src"), env.get("PYTHONPATH", "")) if p
    )
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        rc: int | str = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        rc = f"timeout after {timeout:.0f} s"
    return rc, out or "", time.perf_counter() - t0


def last_json(text: str) -> dict | None:
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return None


def smoke_ref(text: str) -> dict | None:
    """On a CPU the reference can only show its options: check the ones this script passes."""
    if all(flag in text for flag in ("--micro", "--accum", "--steps")):
        return {"ref": "cpu smoke: options checked", "tokens_per_s": 1.0, "mfu": None}
    return None


def fmt(x, form: str) -> str:
    return "—" if x is None else format(x, form)


def summary(rows: dict, ratios: list[dict], profiles: dict, notes: list[str]) -> str:
    lines = ["# GPT-2 124M: project vs minimal reference, side by side; ViT-B/2 step", ""]
    dev = next((r.get("device") for r in rows.values() if r and r.get("device")), "?")
    lines += [f"Device: {dev}", ""]
    lines += ["| run | micro × accum | tokens/s (images/s) | MFU | step s | warm-up s | peak MB |",
              "|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, r in rows.items():
        if not r:
            continue
        rate = r.get("tokens_per_s") or r.get("images_per_s")
        size = f"{r.get('micro', r.get('batch'))} × {r.get('accum', 1)}"
        mfu = r.get("mfu")
        lines.append(
            f"| {name} | {size} | {fmt(rate, ',.0f')} | "
            f"{fmt(None if mfu is None else 100 * mfu, '.1f')} % | {fmt(r.get('step_s'), '.4f')} | "
            f"{fmt(r.get('warmup_s'), '.1f')} | {fmt(r.get('peak_mem_mb'), ',.0f')} |"
        )
    lines += [""]
    for q in ratios:
        lines.append(
            f"- **micro {q['micro']}: project / reference = {q['ratio']:.3f}** "
            f"({q['project_tokens_per_s']:,.0f} vs {q['ref_tokens_per_s']:,.0f} tokens/s)"
        )
    for name, t in profiles.items():
        lines += ["", f"## Profile of one step: {name} ({t.get('timer')})", ""]
        busy = t.get("busy_frac")
        lines.append(
            f"total {t['total_ms']:.1f} ms of kernels in a {fmt(t.get('step_ms'), '.1f')} ms step"
            f" (busy {fmt(None if busy is None else 100 * busy, '.0f')} %)"
        )
        lines.append("")
        lines.append("| group | ms | share |")
        lines.append("|---|---|---|")
        for g, ms in t["groups_ms"].items():
            lines.append(f"| {g} | {ms:.2f} | {100 * t['groups_frac'].get(g, 0):.1f} % |")
        roles = ", ".join(f"{k} {v:.2f} ms" for k, v in t.get("matmul_roles_ms", {}).items())
        lines += ["", f"matmuls by role: {roles}", "", "top kernels:", ""]
        for k in t["top"][:12]:
            lines.append(f"- {k['ms']:.2f} ms ×{k['calls']} [{k['group']}] `{k['name'][:110]}`")
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", required=True, help="path of ref_gpt2.py")
    ap.add_argument("--out", default=os.environ.get("OUT", "side_by_side_out"))
    ap.add_argument("--budget", type=float, default=235.0, help="seconds for everything")
    ap.add_argument("--only", default=None, help="comma-separated step names")
    ap.add_argument("--cpu-smoke", action="store_true")
    args = ap.parse_args()
    t_start = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ref = str(Path(args.ref).resolve())
    if not Path(ref).is_file():
        sys.exit(f"no reference script at {ref}")
    wanted = set(args.only.split(",")) if args.only else None
    tmp = Path(tempfile.mkdtemp(prefix="side_by_side_"))
    rows: dict[str, dict | None] = {}
    profiles: dict[str, dict] = {}
    notes: list[str] = []
    log = []
    results = out / "results.jsonl"
    results.write_text("")

    def emit(obj: dict) -> None:
        with results.open("a") as f:
            f.write(json.dumps(obj) + "\n")
        print(json.dumps(obj), flush=True)

    try:
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.used,memory.total,clocks.sm,power.draw",
             "--format=csv,noheader"], capture_output=True, text=True, timeout=10,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        smi = "nvidia-smi unavailable"
    log.append(f"nvidia-smi: {smi}\n")
    for name, kind, micro, accum, usual, limit in STEPS:
        if (name not in wanted) if wanted is not None else (name in OPTIONAL):
            continue
        left = args.budget - (time.perf_counter() - t_start)
        if left < usual and not args.cpu_smoke:
            notes.append(f"{name} skipped: {left:.0f} s of the budget left, it needs ~{usual} s")
            emit({"run": name, "skipped": True, "budget_left_s": round(left, 1)})
            continue
        prof = tmp / f"{name}_profile.json"
        cmd = command(kind, micro, accum, ref, prof, args.cpu_smoke)
        timeout = limit if args.cpu_smoke else max(10.0, min(limit, left - 3))
        rc, text, secs = run(cmd, 600 if args.cpu_smoke else timeout)
        row = smoke_ref(text) if (kind == "ref" and args.cpu_smoke) else last_json(text)
        log.append(f"=== {name}: rc={rc}, {secs:.1f} s\n$ {' '.join(cmd)}\n{text[-6000:]}\n")
        if rc != 0 or row is None:
            notes.append(f"{name} failed (rc={rc}, {secs:.0f} s); see log.txt")
            emit({"run": name, "failed": True, "rc": str(rc), "seconds": round(secs, 1)})
            rows[name] = None
            continue
        row = {"run": name, "process_s": round(secs, 1), **row}
        rows[name] = row
        emit(row)
        if prof.exists():
            profiles[name] = json.loads(prof.read_text())
    ratios = []
    for m in (32, 64):
        r, p = rows.get(f"ref{m}"), rows.get(f"proj{m}")
        if r and p:
            q = {"ratio": p["tokens_per_s"] / r["tokens_per_s"], "micro": m,
                 "project_tokens_per_s": p["tokens_per_s"], "ref_tokens_per_s": r["tokens_per_s"],
                 "project_mfu": p.get("mfu"), "ref_mfu": r.get("mfu")}  # fmt: skip
            ratios.append(q)
            emit({"ratio": round(q["ratio"], 4), **q})
            print(f"RATIO micro={m}: project/ref = {q['ratio']:.3f}", flush=True)
    ve, vc = rows.get("vit_eager"), rows.get("vit_compiled")
    if ve and vc:
        emit({"vit_compiled_over_eager": vc["images_per_s"] / ve["images_per_s"]})
    total = time.perf_counter() - t_start
    notes.append(f"total {total:.0f} s of a {args.budget:.0f} s budget")
    (out / "profiles.json").write_text(json.dumps(profiles, indent=1))
    (out / "summary.md").write_text(summary(rows, ratios, profiles, notes))
    (out / "log.txt").write_text("\n".join(log))
    print(f"done in {total:.0f} s; wrote {', '.join(sorted(p.name for p in out.iterdir()))}")
    if any(row is None for row in rows.values()):
        sys.exit(1)  # a run failed: its output tail is in log.txt


if __name__ == "__main__":
    main()
