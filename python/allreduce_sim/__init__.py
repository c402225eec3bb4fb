"""allreduce-sim from Python: run scenarios into DataFrames.

The simulator is the Rust crate the ``allreduce-sim`` command line is built from; this
package calls it in-process. A run returns a :class:`Report` whose rows are the JSON
report's results (``allreduce-sim run --format json``), with the same numbers to the
last bit::

    import allreduce_sim
    report = allreduce_sim.run("scenarios/quickstart.yaml", sizes=["4KiB", "1MiB"])
    df = report.to_pandas()            # one row per (algorithm, ranks, bytes)

A scenario is a path to a YAML file, YAML text, or a dict with the file's keys. Bad input
raises :class:`ScenarioError` (a ``ValueError``) with the command line's message, file,
line and column. A run releases the GIL; Ctrl-C stops a sweep (the points under way
finish) and raises ``KeyboardInterrupt``.

:mod:`allreduce_sim.dask` spreads a sweep over a ``dask.distributed`` cluster.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native

__all__ = [
    "Calibration",
    "Comparison",
    "Report",
    "ScenarioError",
    "__version__",
    "calibrate",
    "compare",
    "explain",
    "list_algorithms",
    "merge",
    "plot",
    "points",
    "run",
    "validate",
]

__version__: str = _native.VERSION

Scenario = Union[str, "os.PathLike[str]", Mapping[str, Any]]


class ScenarioError(_native.NativeScenarioError):
    """Bad input: a scenario, argument or file that cannot be used.

    ``str(e)`` is what the command line prints after ``error:``; the parts are
    attributes: ``message`` (what is wrong and what is allowed), ``file`` (the file, or
    the argument, it is about; ``None`` where there is none), ``line`` and ``column``
    (1-based, ``None`` where the problem has no place in a file).
    """

    def __init__(self, text: str, message: str, file: Optional[str], line: Optional[int], column: Optional[int]):
        super().__init__(text)
        self.text = text
        self.message = message
        self.file = file
        self.line = line
        self.column = column

    def __str__(self) -> str:
        return self.text

    def __reduce__(self):
        return (ScenarioError, (self.text, self.message, self.file, self.line, self.column))


def _native_call(fn, *args, **kwargs):
    """Call into the extension, turning its error into :class:`ScenarioError`."""
    try:
        return fn(*args, **kwargs)
    except _native.NativeScenarioError as e:
        if isinstance(e, ScenarioError):
            raise
        raise ScenarioError(*e.args) from None


def _source(scenario: Scenario) -> Dict[str, Any]:
    """The extension's (path, text, name) arguments for a scenario."""
    if isinstance(scenario, os.PathLike):
        return {"path": os.fspath(scenario)}
    if isinstance(scenario, Mapping):
        # JSON is YAML: the dict goes through the same parser and checks as a file. One
        # key per line, so that an error's line names the key.
        return {"text": json.dumps(dict(scenario), indent=2), "name": "<dict>"}
    if isinstance(scenario, str):
        one_line = "\n" not in scenario
        if one_line and (os.path.exists(scenario) or scenario.endswith((".yaml", ".yml"))):
            return {"path": scenario}
        return {"text": scenario, "name": "<string>"}
    raise TypeError(f"a scenario is a path, YAML text or a dict, not {type(scenario).__name__}")


def _source_text(scenario: Scenario) -> Dict[str, Any]:
    """As :func:`_source`, a file read here (for workers that may not see it)."""
    src = _source(scenario)
    if "path" in src:
        path = src["path"]
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise ScenarioError(
                f"{path}: cannot read the scenario file: {e.strerror}",
                f"cannot read the scenario file: {e.strerror}",
                path,
                None,
                None,
            ) from None
        return {"text": text, "name": path}
    return src


def _overrides(
    collective: Optional[str] = None,
    algorithms: Optional[Sequence[str]] = None,
    ranks: Optional[Union[int, Sequence[int]]] = None,
    sizes: Optional[Union[int, str, Sequence[Union[int, str]]]] = None,
    seed: Optional[int] = None,
) -> Dict[str, Any]:
    """The command line's override flags, normalised."""
    out: Dict[str, Any] = {}
    if collective is not None:
        out["collective"] = str(collective)
    if algorithms is not None:
        out["algorithms"] = [algorithms] if isinstance(algorithms, str) else [str(a) for a in algorithms]
    if ranks is not None:
        out["ranks"] = [int(ranks)] if isinstance(ranks, int) else [int(r) for r in ranks]
    if sizes is not None:
        out["sizes"] = [str(sizes)] if isinstance(sizes, (int, str)) else [str(s) for s in sizes]
    if seed is not None:
        out["seed"] = int(seed)
    return out


class Report:
    """A run's report: the scenario as understood and one result per point.

    ``json`` is the text ``allreduce-sim run --format json`` writes for the same run;
    everything else is read from it.
    """

    def __init__(self, json_text: str):
        self.json: str = json_text
        self._data: Dict[str, Any] = json.loads(json_text)

    @classmethod
    def load(cls, path: Union[str, "os.PathLike[str]"]) -> "Report":
        """Read a JSON report written by ``run --format json --output FILE`` or :meth:`save`."""
        with open(path, encoding="utf-8") as f:
            return cls(f.read())

    def save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Write the JSON report (a baseline for ``run --baseline``, input for ``plot``)."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.json)

    @property
    def scenario(self) -> Dict[str, Any]:
        """The scenario as the simulator understood it, units resolved."""
        return self._data["scenario"]

    @property
    def interrupted(self) -> bool:
        """Whether the run was stopped and holds only the points that finished."""
        return bool(self._data.get("interrupted", False))

    @property
    def shard(self) -> Optional[Tuple[int, int]]:
        """``(I, N)`` for a report of shard I of N, else ``None``."""
        s = self._data.get("shard")
        return None if s is None else (s["index"], s["count"])

    @property
    def passed(self) -> bool:
        """Whether every check at every point held (the command line's exit status 0)."""
        return all(not r.get("failures") for r in self._data["results"])

    def to_dicts(self) -> List[Dict[str, Any]]:
        """One dict per point, in sweep order, with the JSON report's fields."""
        return json.loads(self.json)["results"]

    def to_pandas(self):
        """One row per point, columns named as the JSON report's fields (needs pandas)."""
        import pandas as pd

        return pd.DataFrame.from_records(self.to_dicts())

    def compare(self, baseline: Union["Report", str, "os.PathLike[str]"], tolerance: float = 1e-9) -> "Comparison":
        """Compare with a saved report as ``run --baseline`` does (see :func:`compare`)."""
        return compare(self, baseline, tolerance)

    def __len__(self) -> int:
        return len(self._data["results"])

    def __repr__(self) -> str:
        name = self._data["scenario"].get("name", "?")
        state = "passed" if self.passed else "FAILED"
        return f"<allreduce_sim.Report {name!r}: {len(self)} point(s), {state}>"


def run(
    scenario: Scenario,
    *,
    collective: Optional[str] = None,
    algorithms: Optional[Sequence[str]] = None,
    ranks: Optional[Union[int, Sequence[int]]] = None,
    sizes: Optional[Union[int, str, Sequence[Union[int, str]]]] = None,
    seed: Optional[int] = None,
    shard: Optional[Union[str, Tuple[int, int]]] = None,
    max_memory: Optional[Union[int, str]] = None,
    progress: bool = False,
) -> Report:
    """Run a scenario, as ``allreduce-sim run``.

    ``scenario`` is a path, YAML text or a dict. The keywords are the command line's
    flags: ``collective``, ``algorithms``, ``ranks``, ``sizes`` (``"4KiB"`` or bytes) and
    ``seed`` override the file; ``shard=(I, N)`` runs every N-th point from the I-th;
    ``max_memory`` refuses points estimated to need more (default: the memory available);
    ``progress`` allows the progress bar on stderr.

    Raises :class:`ScenarioError` for bad input and ``KeyboardInterrupt`` on Ctrl-C.
    """
    kwargs = _source(scenario)
    kwargs.update(_overrides(collective, algorithms, ranks, sizes, seed))
    if shard is not None:
        kwargs["shard"] = shard if isinstance(shard, str) else f"{shard[0]}/{shard[1]}"
    if max_memory is not None:
        kwargs["max_memory"] = str(max_memory)
    return Report(_native_call(_native.run_json, progress=progress, **kwargs))


class Calibration:
    """What ``calibrate`` found: the JSON of ``allreduce-sim calibrate --format json`` as a
    dict (:attr:`data`), the fitted machine file (:attr:`fitted_yaml`), and every logged
    point as rows (:meth:`to_dicts`, :meth:`to_pandas`)."""

    def __init__(self, json_text: str, fitted_yaml: str):
        self.json = json_text
        self.data: Dict[str, Any] = json.loads(json_text)
        self.fitted_yaml = fitted_yaml

    @property
    def parameters(self) -> List[Dict[str, Any]]:
        """Each fitted (or held) value: path, start, value, text, rel_uncertainty, fitted."""
        return self.data["parameters"]

    @property
    def warnings(self) -> List[str]:
        """What the logs cannot determine, in words."""
        return self.data["warnings"]

    @property
    def logs(self) -> List[Dict[str, Any]]:
        """Per log: label, set (``fit`` or ``hold-out``), ranks, mean and max error, points."""
        return self.data["logs"]

    def to_dicts(self) -> List[Dict[str, Any]]:
        """One row per logged point: its log's label, set and ranks, then the point's fields
        (bytes, measured_s, simulated_s, rel_err, algorithm, ran, ...)."""
        rows = []
        for log in self.logs:
            for p in log["points"]:
                rows.append({"log": log["label"], "set": log["set"], "ranks": log["ranks"], **p})
        return rows

    def to_pandas(self):
        """:meth:`to_dicts` as a pandas DataFrame (needs pandas)."""
        import pandas as pd

        return pd.DataFrame(self.to_dicts())

    def __repr__(self) -> str:
        return (
            f"<allreduce_sim.Calibration: {len(self.parameters)} parameter(s), "
            f"{len(self.logs)} log(s), {len(self.warnings)} warning(s)>"
        )


def calibrate(
    machine: Union[str, "os.PathLike[str]"],
    logs: Sequence[Union[str, "os.PathLike[str]"]],
    hold_out: Sequence[Union[str, "os.PathLike[str]"]] = (),
    *,
    fit: Optional[Sequence[str]] = None,
    output: Optional[Union[str, "os.PathLike[str]"]] = None,
    plot: Optional[Union[str, "os.PathLike[str]"]] = None,
    ranks: Optional[int] = None,
    gpus_per_node: Optional[int] = None,
    env: Optional[Mapping[str, str]] = None,
    patience: Optional[int] = None,
    picks: Optional[str] = None,
    prior_width: Optional[Union[float, str]] = None,
) -> Calibration:
    """Fit a machine file to nccl-tests or OSU logs, as ``allreduce-sim calibrate``.

    ``logs`` are fitted, ``hold_out`` only predicted. ``fit`` names the dotted paths to fit
    (default: every alpha, bandwidth, launch and protocol efficiency, and C where the logs
    can tell it); ``output`` writes the fitted machine file, ``plot`` draws the plots into
    that directory; ``ranks`` / ``gpus_per_node`` / ``env`` (``{"NCCL_ALGO": "Ring"}``)
    supply what a log does not print; ``patience`` is the optimiser's budget; ``picks``
    (``"fitted"`` or ``"file"``) is ``--picks``: where NCCL's model picks for logs that do
    not force it, at the fitted values or at the machine file's; ``prior_width`` is
    ``--prior-width``: the width, as a factor, of the prior drawing each value toward the
    machine file's (10 is a start; default: no prior), or ``"off"``.

    Raises :class:`ScenarioError` for a bad machine file or log, and ``KeyboardInterrupt``
    on Ctrl-C.
    """
    kwargs: Dict[str, Any] = {
        "hold_out": [os.fspath(p) for p in hold_out],
        "env": [f"{k}={v}" for k, v in (env or {}).items()],
    }
    if fit is not None:
        kwargs["fit"] = list(fit)
    if output is not None:
        kwargs["output"] = os.fspath(output)
    if plot is not None:
        kwargs["plot"] = os.fspath(plot)
    if ranks is not None:
        kwargs["ranks"] = ranks
    if gpus_per_node is not None:
        kwargs["gpus_per_node"] = gpus_per_node
    if patience is not None:
        kwargs["patience"] = patience
    if picks is not None:
        kwargs["picks"] = picks
    if prior_width is not None:
        kwargs["prior_width"] = str(prior_width)
    text, fitted = _native_call(_native.calibrate_json, os.fspath(machine), [os.fspath(p) for p in logs], **kwargs)
    return Calibration(text, fitted)


def merge(reports: Sequence[Union[Report, str]]) -> Report:
    """Join the reports of a sweep's shards (any order) into one report in sweep order,
    as ``allreduce-sim merge``. Each is a :class:`Report` or a JSON report's text."""
    inputs = []
    for i, r in enumerate(reports):
        text = r.json if isinstance(r, Report) else str(r)
        inputs.append((f"report {i}", text))
    return Report(_native_call(_native.merge_json, inputs))


def points(scenario: Scenario, **overrides: Any) -> List[Tuple[str, int, int]]:
    """Every point of the scenario in sweep order: ``(algorithm, ranks, bytes)``."""
    return _native_call(_native.points, **_source(scenario), **_overrides(**overrides))


def validate(scenario: Scenario) -> Dict[str, Any]:
    """Check a scenario as ``allreduce-sim validate``; run nothing.

    Returns ``{"name": ..., "points": [{"point", "estimate", "memory_bytes", "events"}]}``
    with each point's estimated memory and work; raises :class:`ScenarioError`.
    """
    name, rows = _native_call(_native.validate, **_source(scenario))
    return {
        "name": name,
        "points": [
            {"point": p, "estimate": d, "memory_bytes": m, "events": e} for (p, d, m, e) in rows
        ],
    }


def list_algorithms() -> List[Dict[str, Any]]:
    """Every algorithm of every collective, then the selectors, as ``allreduce-sim list``.

    Each is a dict: ``collective``, ``id``, ``kind`` (``"algorithm"`` or ``"selector"``),
    ``summary``, ``source``, ``params`` and ``requires``/``closed_form`` (algorithms) or
    ``covers`` (selectors).
    """
    return _native.list_algorithms()


def explain(
    algorithm: str,
    *,
    collective: Optional[str] = None,
    ranks: Optional[int] = None,
    size: Union[int, str] = "1KiB",
    nics: int = 1,
    alpha: Union[float, str] = "1us",
    bandwidth: Union[float, str] = "100Gbps",
    cost_per_byte: Union[float, str] = "0.05ns",
    params: Optional[Mapping[str, Any]] = None,
    scenario: Optional[Union[str, "os.PathLike[str]"]] = None,
) -> str:
    """An algorithm's schedule, closed form and simulated time, as ``allreduce-sim explain``.

    Numbers are base units (seconds, bytes, bytes per second); strings take units
    (``"2us"``, ``"4KiB"``, ``"100Gbps"``). ``scenario`` takes the machine from a file.
    """
    return _native_call(
        _native.explain,
        algorithm,
        collective=collective,
        ranks=ranks,
        size=str(size),
        nics=nics,
        alpha=str(alpha),
        bandwidth=str(bandwidth),
        cost_per_byte=str(cost_per_byte),
        params=[(str(k), str(v)) for k, v in (params or {}).items()],
        scenario_path=None if scenario is None else os.fspath(scenario),
    )


def _report_text(report: Union[Report, str, "os.PathLike[str]"]) -> Tuple[str, str]:
    if isinstance(report, Report):
        return report.json, "the report"
    with open(report, encoding="utf-8") as f:
        return f.read(), os.fspath(report)


def plot(report: Union[Report, str, "os.PathLike[str]"], out_dir: Union[str, "os.PathLike[str]"] = "plots") -> List[str]:
    """Draw a report's plots (SVG and PNG) into ``out_dir``, as ``allreduce-sim plot``;
    the files written. ``report`` is a :class:`Report` or a JSON report's path."""
    text, _ = _report_text(report)
    return _native_call(_native.plot_json, text, os.fspath(out_dir))


class Comparison:
    """A report compared with a baseline, as ``run --baseline`` does it."""

    def __init__(self, passed: bool, table: str, junit: str):
        #: Whether every point is on both sides and within the tolerance.
        self.passed: bool = passed
        #: The table the command line prints on stderr.
        self.table: str = table
        #: The JUnit XML ``--junit`` writes.
        self.junit: str = junit

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        return self.table


def compare(
    report: Union[Report, str, "os.PathLike[str]"],
    baseline: Union[Report, str, "os.PathLike[str]"],
    tolerance: float = 1e-9,
) -> Comparison:
    """Compare ``report`` with ``baseline`` (each a :class:`Report` or a JSON report's
    path): every point's ``time_s``, ``closed_form_s``, ``messages``, ``verified`` and
    ``not_applicable``, to relative ``tolerance``."""
    now, _ = _report_text(report)
    base, name = _report_text(baseline)
    passed, table, junit = _native_call(_native.compare_json, now, base, baseline_name=name, tolerance=float(tolerance))
    return Comparison(passed, table, junit)
