"""The launch rules a variant names: how to size its grid, build its extra kernel arguments and size
its workspace. Families (cugemm/families/*.py) are tables and refer to these by name (the Variant
fields grid_rule, args_rule, workspace_rule); Variant resolves the names here into its grid_fn,
args_fn and workspace_fn.

Signatures:
    grid       (variant, M, N, K, Device) -> (x, y, z)
    args       (variant, A, B, C, M, N, K, raw=False[, work=, dev=]) -> extra kernel arguments
    workspace  (variant, M, N, K, Device) -> cugemm.workspace.Need
"""
from __future__ import annotations

from . import grids, splitk, tma_args


def epilogue_defaults(v, A, B, C, M, N, K, raw=False):
    """The arguments of kernels whose last parameters are a fused epilogue's seven and nothing else
    (hgemm_mma/05_swizzle.cu): their no-epilogue values, tma_args.epilogue_args() (a fused launch
    replaces them: cugemm.epilogue, serve.Ready). cugemm.epilogue takes a variant of this rule for a
    base of fused members."""
    return tma_args.epilogue_args()


GRIDS = {
    "persistent": grids.persistent_grid,
    "swizzle": grids.swizzle_grid,
    "splitk": splitk.grid,
    "skinny": splitk.skinny_grid,
}

ARGS = {
    "tma_ab": tma_args.ab_args,
    "tma_abc16": tma_args.cached_args(tma_args.maps_abc16),
    "tma_persistent": tma_args.persistent_args,
    "tma_bt": tma_args.cached_args(tma_args.maps_bt),
    "tma_tf32": tma_args.tf32_args,
    "tma_small_m": tma_args.cached_args(tma_args.maps_small_m),
    "fp8_scaled": tma_args.fp8_scaled_args,
    "fp8_promoted": tma_args.fp8_promoted_args,
    "swizzle": grids.swizzle_args,
    "no_swizzle": grids.no_swizzle_args,
    "batch": grids.batch_args,
    "splitk": splitk.args,
    "skinny": splitk.skinny_args,
    "epilogue_defaults": epilogue_defaults,
}

WORKSPACES = {
    "splitk": splitk.workspace_need,
    "skinny": splitk.skinny_workspace_need,
    "dynamic_walk": grids.dynamic_walk_need,
}


def resolve(table: dict, kind: str, name: str, variant: str):
    """The function a rule name stands for (None for ''); ValueError naming the known rules."""
    if not name:
        return None
    try:
        return table[name]
    except KeyError:
        raise ValueError(f"{variant}: no {kind} rule {name!r}; rules: {', '.join(sorted(table))}") from None
