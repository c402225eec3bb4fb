"""A sweep spread over a ``dask.distributed`` cluster.

The sweep is cut into shards as ``allreduce-sim run --shard I/N`` cuts it (shard I holds
the points whose index in sweep order is I modulo N), each shard runs as one task on a
worker, and the shards' reports are joined in sweep order as ``allreduce-sim merge``
joins them. The result is the report one process would write, apart from each point's
``wall_time_s``::

    from dask.distributed import Client, LocalCluster
    from allreduce_sim.dask import run_distributed

    with LocalCluster(n_workers=4) as cluster, Client(cluster) as client:
        report = run_distributed("scenarios/2d_torus.yaml", client=client)
    df = report.to_pandas()

The scenario file is read here and sent to the workers as text, so they need the
``allreduce_sim`` package installed but not the file.
"""

from __future__ import annotations

from typing import Any, Optional

from . import Report, Scenario, _native, _native_call, _overrides, _source_text, merge

__all__ = ["run_distributed", "run_shard"]


def run_shard(text: str, name: str, shard: str, overrides: dict) -> str:
    """Run one shard (``"I/N"``) of the scenario ``text`` (named ``name``); its JSON
    report. This is the task each worker runs."""
    return _native_call(_native.run_json, text=text, name=name, shard=shard, **overrides)


def run_distributed(
    scenario: Scenario,
    client: Optional[Any] = None,
    shards: Optional[int] = None,
    **overrides: Any,
) -> Report:
    """Run ``scenario`` (a path, YAML text or a dict) on a Dask cluster.

    ``client`` is a ``dask.distributed.Client`` (default: the current one, from
    ``get_client()``); ``shards`` is how many tasks to cut the sweep into (default: one
    per worker, at most one per point). The keyword arguments are :func:`allreduce_sim.run`'s
    overrides: ``collective``, ``algorithms``, ``ranks``, ``sizes``, ``seed``.

    Bad input raises :class:`allreduce_sim.ScenarioError` here, before any task is sent.
    """
    if client is None:
        from dask.distributed import get_client

        client = get_client()
    src = _source_text(scenario)
    ov = _overrides(**overrides)
    # Checked here, so a bad scenario fails once, with its message, not on every worker.
    n_points = len(_native_call(_native.points, **src, **ov))
    if shards is None:
        shards = max(1, len(client.scheduler_info().get("workers", {})))
    shards = max(1, min(int(shards), n_points))
    futures = [
        client.submit(run_shard, src["text"], src["name"], f"{i}/{shards}", ov, pure=False)
        for i in range(shards)
    ]
    texts = client.gather(futures)
    return merge(texts)
