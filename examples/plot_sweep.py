"""Plot a sweep from Python: 2.4's goodness() scheduler against O(1) and haMQ on Kravetz's
chat as CPUs are added — the lab's first finding, as a notebook would draw it.

    pip install ./python matplotlib
    python examples/plot_sweep.py [--rooms 10] [--messages 50] [--cpus 1 2 4 8] [--out chat.png]

Results are kept in --results (default: chat-sweep/), so a second run only draws.
"""
import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import schedlab  # noqa: E402

STYLES = {"linux-2.4": ("o", "-"), "o1-d1": ("s", "--"), "hamq": ("^", ":")}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rooms", type=int, default=10)
    p.add_argument("--messages", type=int, default=50)
    p.add_argument("--cpus", type=int, nargs="+", default=[1, 2, 4, 8])
    p.add_argument("--results", default="chat-sweep")
    p.add_argument("--out", default="chat.png")
    a = p.parse_args()
    df = schedlab.sweep(
        {
            "machine": "piii700-1m",
            "cpus": a.cpus,
            "policy": list(STYLES),
            "workload": f"chat:rooms={a.rooms},messages={a.messages}",
        },
        out=a.results,
    )
    fig, ax = plt.subplots(figsize=(6, 4))
    for policy, rows in df.groupby("policy", sort=False):
        marker, line = STYLES[policy]
        rows = rows.sort_values("cpus")
        ax.plot(rows["cpus"], rows["value"] / 1000, marker=marker, linestyle=line,
                color="black", label=policy)
    ax.set_xscale("log", base=2)
    ax.set_xticks(a.cpus, [str(c) for c in a.cpus])
    ax.set_xlabel("CPUs (piii700-1m)")
    ax.set_ylabel(f"chat throughput, k {df['unit'].iloc[0]}")
    ax.set_title(f"chat, {a.rooms} rooms x {a.messages} messages (simulated)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)
    print(df[["policy", "cpus", "value", "unit", "spinning_pct"]].to_string(index=False))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
