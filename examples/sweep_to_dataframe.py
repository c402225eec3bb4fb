# %% [markdown]
# # A sweep into a DataFrame
#
# Notebook-style script (cells are `# %%`; VS Code and Jupytext open it as a notebook).
# It runs a small sweep of allreduce algorithms on a 100 Gb/s machine, turns the report
# into a pandas DataFrame, and plots bus bandwidth against message size with matplotlib.
#
#     pip install '.[examples]'
#     python examples/sweep_to_dataframe.py [OUT.png]   # default examples/busbw_vs_size.png

# %%
import pathlib
import sys

import allreduce_sim

HERE = pathlib.Path(__file__).resolve().parent

# A scenario as a dict: the keys of a scenario file (docs/scenario.md).
scenario = {
    "name": "busbw sweep, 16 ranks on 100 Gb/s",
    "ranks": 16,
    "topology": {"kind": "fully_connected", "link": {"alpha": "2us", "bandwidth": "100Gbps"}},
    "compute": {"cost_per_byte": "0.05ns"},
    "data": {"mode": "off"},  # timing only: no data moved or checked, so it runs in a blink
    "algorithms": ["ring", "halving_doubling", "butterfly", "binomial_tree"],
    "sizes": ["4KiB", "32KiB", "256KiB", "1MiB", "4MiB", "16MiB"],
}

# %% Run it (the GIL is released; Ctrl-C stops it).
report = allreduce_sim.run(scenario)
print(report)

# %% One row per point, the JSON report's fields as columns.
df = report.to_pandas()
print(df[["algorithm", "bytes", "time_s", "closed_form_s", "busbw_Bps"]].to_string(index=False))

# %% Bus bandwidth by algorithm and size, and the fastest algorithm at each size.
busbw = df.pivot(index="bytes", columns="algorithm", values="busbw_Bps") / 1e9
print(busbw.round(2))
print(df.loc[df.groupby("bytes")["time_s"].idxmin(), ["bytes", "algorithm", "time_s"]].to_string(index=False))

# %% Plot it.
import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(7, 4))
for algorithm, column in busbw.items():
    ax.plot(column.index, column.values, marker="o", label=algorithm)
ax.set_xscale("log", base=2)
ax.set_xlabel("bytes per rank")
ax.set_ylabel("bus bandwidth (GB/s)")
ax.set_title(report.scenario["name"])
ax.legend()
ax.grid(True, which="both", alpha=0.3)
out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "busbw_vs_size.png"
fig.savefig(out, dpi=120, bbox_inches="tight")
print(f"wrote {out}")
