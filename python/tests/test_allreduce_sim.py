"""The Python package against the command line: same numbers, same errors, and the
distributed sweep equal to one process. The CLI binary is found through ALLREDUCE_SIM_BIN
(set by .ci/run), else target/release or target/debug."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET

import pytest

import allreduce_sim

ROOT = pathlib.Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"

SMALL = """name: small
ranks: [2, 5]
topology:
  link: { alpha: 1us, bandwidth: 100Gbps }
compute: { cost_per_byte: 0.05ns }
algorithms: [ring, butterfly, star]
sizes: [4KiB, 100]
"""


def cli():
    env = os.environ.get("ALLREDUCE_SIM_BIN")
    if env:
        return env
    for profile in ("release", "debug"):
        p = ROOT / "target" / profile / "allreduce-sim"
        if p.exists():
            return str(p)
    pytest.skip("no allreduce-sim binary built (cargo build --release)")


def without_wall_time(rows):
    return [{k: v for k, v in r.items() if k != "wall_time_s"} for r in rows]


def cli_json(*args):
    out = subprocess.run([cli(), "run", "--quiet", "--format", "json", *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_rows_equal_the_cli_json_to_the_last_bit():
    report = allreduce_sim.run(QUICKSTART, sizes=["4KiB", "1MiB"])
    expected = cli_json(str(QUICKSTART), "--sizes", "4KiB,1MiB")
    assert len(report) == len(expected["results"]) == 12
    assert without_wall_time(report.to_dicts()) == without_wall_time(expected["results"])
    assert report.scenario == expected["scenario"]
    assert report.passed


def test_to_pandas_has_one_row_per_point_with_the_report_fields():
    report = allreduce_sim.run(SMALL)
    df = report.to_pandas()
    assert len(df) == 12
    for col in ("collective", "algorithm", "ranks", "bytes", "time_s", "closed_form_s", "messages", "verified"):
        assert col in df.columns
    rows = report.to_dicts()
    assert df["time_s"].tolist() == [r["time_s"] for r in rows]
    assert list(df["algorithm"][:3]) == ["ring", "butterfly", "star"]


def test_a_dict_a_yaml_string_and_a_path_are_the_same_scenario(tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text(SMALL)
    as_dict = {
        "name": "small",
        "ranks": [2, 5],
        "topology": {"link": {"alpha": "1us", "bandwidth": "100Gbps"}},
        "compute": {"cost_per_byte": "0.05ns"},
        "algorithms": ["ring", "butterfly", "star"],
        "sizes": ["4KiB", 100],
    }
    a = without_wall_time(allreduce_sim.run(as_dict).to_dicts())
    assert a == without_wall_time(allreduce_sim.run(SMALL).to_dicts())
    assert a == without_wall_time(allreduce_sim.run(str(path)).to_dicts())
    assert a == without_wall_time(allreduce_sim.run(path).to_dicts())


def test_overrides_are_the_cli_flags():
    r = allreduce_sim.run(SMALL, algorithms=["ring"], ranks=4, sizes=[1024, "2KiB"], seed=7)
    assert [(d["algorithm"], d["ranks"], d["bytes"]) for d in r.to_dicts()] == [("ring", 4, 1024), ("ring", 4, 2048)]
    assert r.scenario["seed"] == 7


def test_bad_input_carries_the_cli_message_file_line_and_column(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(SMALL.replace("algorithms: [ring, butterfly, star]", "algorithms: [ring, bogus]"))
    with pytest.raises(allreduce_sim.ScenarioError) as info:
        allreduce_sim.run(str(path))
    e = info.value
    assert isinstance(e, ValueError)
    out = subprocess.run([cli(), "run", str(path)], capture_output=True, text=True, env={**os.environ, "RUST_BACKTRACE": "0"})
    assert out.returncode == 2
    assert out.stderr == f"error: {e}\n"
    assert e.file == str(path)
    assert (e.line, e.column) == (6, 20)
    assert "bogus" in e.message and "allowed" in e.message
    assert str(e).startswith(f"{path}:6:20: ")


def test_bad_overrides_and_bad_yaml_raise_value_errors():
    with pytest.raises(allreduce_sim.ScenarioError) as info:
        allreduce_sim.run(SMALL, collective="alltoallv")
    assert info.value.file == "--collective" and info.value.line is None
    with pytest.raises(ValueError) as info:
        allreduce_sim.run("ranks: [4\n")
    assert info.value.file == "<string>" and info.value.line is not None
    with pytest.raises(allreduce_sim.ScenarioError):
        allreduce_sim.run("does/not/exist.yaml")
    with pytest.raises(allreduce_sim.ScenarioError):
        allreduce_sim.run(SMALL, shard="3/3")
    with pytest.raises(TypeError):
        allreduce_sim.run(42)


def test_list_validate_explain():
    algos = allreduce_sim.list_algorithms()
    ids = {(a["collective"], a["id"]) for a in algos if a["kind"] == "algorithm"}
    assert ("allreduce", "ring") in ids and ("allreduce", "halving_doubling") in ids
    assert any(a["kind"] == "selector" and a["id"] == "auto" for a in algos)
    v = allreduce_sim.validate(SMALL)
    assert v["name"] == "small" and len(v["points"]) == 12
    assert all(p["memory_bytes"] > 0 for p in v["points"])
    text = allreduce_sim.explain("ring", ranks=4, size="1KiB")
    out = subprocess.run([cli(), "explain", "ring", "--ranks", "4", "--size", "1KiB"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout == text
    with pytest.raises(allreduce_sim.ScenarioError):
        allreduce_sim.explain("no_such_algorithm")


def test_plot_writes_files(tmp_path):
    report = allreduce_sim.run(SMALL)
    files = allreduce_sim.plot(report, tmp_path / "plots")
    assert files and all(pathlib.Path(f).stat().st_size > 0 for f in files)
    assert any(f.endswith(".png") for f in files) and any(f.endswith(".svg") for f in files)


def test_shards_merge_to_the_whole_run():
    whole = allreduce_sim.run(SMALL)
    shards = [allreduce_sim.run(SMALL, shard=(i, 3)) for i in (2, 0, 1)]
    assert [s.shard for s in shards] == [(2, 3), (0, 3), (1, 3)]
    merged = allreduce_sim.merge(shards)
    assert without_wall_time(merged.to_dicts()) == without_wall_time(whole.to_dicts())


def test_compare_catches_a_nudged_alpha_and_writes_junit(tmp_path):
    base = allreduce_sim.run(SMALL)
    base.save(tmp_path / "base.json")
    assert allreduce_sim.run(SMALL).compare(tmp_path / "base.json").passed
    nudged = allreduce_sim.run(SMALL.replace("alpha: 1us", "alpha: 1.000001us"))
    cmp = nudged.compare(base)
    assert not cmp.passed
    assert "time_s" in cmp.table and "beyond" in cmp.table
    suite = ET.fromstring(cmp.junit)
    cases = suite.findall(".//testcase")
    assert len(cases) == 12
    assert sum(1 for c in cases if c.find("failure") is not None) == 12
    assert nudged.compare(base, tolerance=1e-3).passed


def test_cli_baseline_gate_writes_junit(tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text(SMALL)
    allreduce_sim.run(path).save(tmp_path / "base.json")
    junit = tmp_path / "junit.xml"
    out = subprocess.run(
        [cli(), "run", "--quiet", str(path), "--baseline", str(tmp_path / "base.json"), "--junit", str(junit)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    suite = ET.parse(junit).getroot()
    assert suite.get("tests") == "12" and suite.get("failures") == "0"


def test_ctrl_c_raises_keyboard_interrupt_and_the_next_run_is_whole():
    # A sweep long enough that the signal arrives while it runs; wherever it lands, the
    # call must end in KeyboardInterrupt (never a crash, never a partial report returned).
    # (36 points, about 0.6 s in one go on 2 cores; the signal comes at 0.3 s.)
    long_sweep = SMALL.replace("ranks: [2, 5]", "ranks: [16, 32, 64, 128]").replace(
        "sizes: [4KiB, 100]", "sizes: [256KiB, 1MiB, 2MiB]"
    )
    # A job started in the background by a non-interactive shell inherits SIGINT ignored,
    # and Python then installs no handler: Ctrl-C is what the test is about, so it puts
    # Python's own handler in place for its duration.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            allreduce_sim.run(long_sweep)
            # If the run was quicker than the timer, the signal lands here.
            timer.join()
            threading.Event().wait(1.0)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert len(allreduce_sim.run(SMALL)) == 12


def test_distributed_sweep_on_a_local_cluster_equals_one_process():
    distributed = pytest.importorskip("dask.distributed")
    from allreduce_sim.dask import run_distributed

    whole = allreduce_sim.run(QUICKSTART)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            spread = run_distributed(str(QUICKSTART), client=client, shards=3)
            assert without_wall_time(spread.to_dicts()) == without_wall_time(whole.to_dicts())
            assert spread.scenario == whole.scenario and spread.shard is None
            with pytest.raises(allreduce_sim.ScenarioError):
                run_distributed("ranks: nope\n", client=client)


def test_the_example_runs_and_draws_its_plot(tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("pandas")
    out = tmp_path / "busbw.png"
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "sweep_to_dataframe.py"), str(out)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "halving_doubling" in run.stdout


def test_a_dict_error_names_the_key_line():
    bad = {"ranks": 4, "topology": {"link": {"alpha": "1us", "bandwidth": "100Gbps"}}, "algorithms": ["ring"], "sizes": ["4KiB"], "bogus": 1}
    with pytest.raises(allreduce_sim.ScenarioError) as info:
        allreduce_sim.run(bad)
    e = info.value
    assert e.file == "<dict>" and e.line is not None and "bogus" in e.message


HW = ROOT / "validation" / "hardware"


def test_calibrate_fits_with_uncertainties_and_predicts_the_hold_out(tmp_path):
    logs = [HW / "data" / f"astrasim_hgx_h100_p{p}.txt" for p in (2, 4, 8)]
    out = tmp_path / "fitted.yaml"
    c = allreduce_sim.calibrate(HW / "machines" / "single_node.yaml", logs[:1], logs[1:], output=out)
    assert {l["set"] for l in c.logs} == {"fit", "hold-out"}
    # Every fitted value has an uncertainty, or a warning says the logs do not determine it
    # (here the P = 2 points start at 64 MiB, so alpha and B are one sum).
    undetermined = {p["path"] for p in c.parameters if p["fitted"] and p["rel_uncertainty"] is None}
    assert all(any(w.startswith(f"{k} is not determined") for w in c.warnings) for k in undetermined)
    assert "topology.launch" not in undetermined
    rows = c.to_dicts()
    assert len(rows) == sum(len(l["points"]) for l in c.logs) == 17
    assert {"log", "set", "ranks", "bytes", "measured_s", "simulated_s", "rel_err"} <= set(rows[0])
    assert out.read_text() == c.fitted_yaml
    # The fitted file runs as a scenario.
    assert len(allreduce_sim.run(str(out))) > 0


def test_calibrate_bad_log_raises_the_cli_message(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("not a benchmark log\n")
    with pytest.raises(allreduce_sim.ScenarioError) as e:
        allreduce_sim.calibrate(HW / "machines" / "single_node.yaml", [bad])
    assert "bad.txt" in str(e.value)
