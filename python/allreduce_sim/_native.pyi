"""Type hints of the extension module (src/python.rs); use the package, not this."""

from typing import Any, Dict, List, Optional, Sequence, Tuple

VERSION: str

class NativeScenarioError(ValueError): ...

def run_json(
    path: Optional[str] = None,
    text: Optional[str] = None,
    name: str = "<string>",
    *,
    collective: Optional[str] = None,
    algorithms: Optional[Sequence[str]] = None,
    ranks: Optional[Sequence[int]] = None,
    sizes: Optional[Sequence[str]] = None,
    seed: Optional[int] = None,
    shard: Optional[str] = None,
    max_memory: Optional[str] = None,
    progress: bool = False,
) -> str: ...
def merge_json(inputs: Sequence[Tuple[str, str]]) -> str: ...
def validate(
    path: Optional[str] = None, text: Optional[str] = None, name: str = "<string>"
) -> Tuple[str, List[Tuple[str, str, int, int]]]: ...
def list_algorithms() -> List[Dict[str, Any]]: ...
def explain(
    algorithm: str,
    *,
    collective: Optional[str] = None,
    ranks: Optional[int] = None,
    size: str = "1KiB",
    nics: int = 1,
    alpha: str = "1us",
    bandwidth: str = "100Gbps",
    cost_per_byte: str = "0.05ns",
    params: Sequence[Tuple[str, str]] = (),
    scenario_path: Optional[str] = None,
) -> str: ...
def plot_json(report_json: str, out_dir: str) -> List[str]: ...
def compare_json(
    report_json: str, baseline_json: str, baseline_name: str = "baseline", tolerance: float = 1e-9
) -> Tuple[bool, str, str]: ...
def points(
    path: Optional[str] = None,
    text: Optional[str] = None,
    name: str = "<string>",
    *,
    collective: Optional[str] = None,
    algorithms: Optional[Sequence[str]] = None,
    ranks: Optional[Sequence[int]] = None,
    sizes: Optional[Sequence[str]] = None,
    seed: Optional[int] = None,
) -> List[Tuple[str, int, int]]: ...
def calibrate_json(
    machine: str,
    logs: Sequence[str],
    hold_out: Sequence[str] = ...,
    *,
    fit: Optional[Sequence[str]] = None,
    output: Optional[str] = None,
    plot: Optional[str] = None,
    ranks: Optional[int] = None,
    gpus_per_node: Optional[int] = None,
    env: Sequence[str] = ...,
    patience: Optional[int] = None,
    picks: Optional[str] = None,
    prior_width: Optional[str] = None,
) -> Tuple[str, str]: ...
