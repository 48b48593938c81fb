#!/usr/bin/env python3
"""Fit the exponent of the fused epilogue's GELU (erf) and print its coefficients and errors.

    python3 scripts/fit_gelu.py [--degree 6] [--range 9]

kernels/lib/epilogue.cuh computes GELU(x) = x Phi(x) as x / (1 + 2^z) with z = x P(x^2): Phi(x) =
sigmoid(g(x)) for an odd g, z = -log2(e) g(x). P (of the given degree in t = x^2) is fitted on
[0, range] by Gauss-Newton least squares on the sigmoid's error with Lawson's reweighting towards
the largest |error| max(1, x) (GELU's absolute error), float64, then rounded to float32. The script
then evaluates the float32 formula (FMA steps emulated through float64, exact 2^z and reciprocal)
beside 0.5 x (1 + erff(x / sqrt 2)) on a dense grid of [-12, 12] and prints both errors against
float64 x Phi(x), and the least value of g beyond the range (it must stay positive: no clamp).
Degree 5 reaches 2.8e-5, 6 about 6.6e-8 (the shipped one), 7 loses the sign of g beyond the range.
"""
import argparse
import math

import numpy as np

LOG2E = 1.4426950408889634
_erf = np.vectorize(math.erf)


def phi(x):
    return 0.5 * (1.0 + _erf(x / math.sqrt(2.0)))


def sigmoid(g):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-g))


def basis(x, degree):
    return np.stack([x ** (2 * i + 1) for i in range(degree + 1)], 1)


def fit(degree: int, span: float, iters: int = 400):
    """g's coefficients (lowest power first) and the fit's largest |error| max(1, x)."""
    x = np.linspace(0.0, span, 40001)
    target = phi(x)
    B = basis(x, degree)
    m = x < 5.0   # start from the weighted logit where it is finite
    w0 = target[m] * (1 - target[m])
    c, *_ = np.linalg.lstsq(B[m] * w0[:, None], np.log(target[m] / (1 - target[m])) * w0, rcond=None)
    weights = np.ones_like(x)
    best = (np.inf, c)
    for _ in range(iters):
        s = sigmoid(B @ c)
        J = (s * (1 - s))[:, None] * B
        step, *_ = np.linalg.lstsq(J * weights[:, None], -(s - target) * weights, rcond=None)
        c = c + step
        e = np.abs(sigmoid(B @ c) - target) * np.maximum(x, 1.0)
        if e.max() < best[0]:
            best = (e.max(), c.copy())
        weights = weights * np.sqrt(e / e.max()) + 1e-12
        weights /= weights.mean()
    return best[1], best[0]


def gelu_f32(xs, coeffs_z):
    """The kernel's arithmetic in float32 (coeffs_z highest power first)."""
    t = (xs * xs).astype(np.float32)
    p = np.full_like(xs, coeffs_z[0])
    for k in coeffs_z[1:]:
        p = (p.astype(np.float64) * t + k).astype(np.float32)
    z = (p.astype(np.float64) * xs).astype(np.float32)
    with np.errstate(over="ignore"):
        y = (1.0 + np.exp2(z.astype(np.float64)).astype(np.float32)).astype(np.float32)
    return (xs.astype(np.float64) * (1.0 / y.astype(np.float64)).astype(np.float32)).astype(np.float32)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--degree", type=int, default=6, help="degree of P in x^2 (default 6)")
    p.add_argument("--range", type=float, default=9.0, dest="span", help="fit on [0, range] (default 9)")
    args = p.parse_args()
    c, err = fit(args.degree, args.span)
    cz = (-LOG2E * c)[::-1].astype(np.float32)
    print(f"degree {args.degree} on [0, {args.span}]: fit max |error| max(1, x) {err:.3g}")
    print("P, highest power first:", ", ".join(f"{v:.9e}f" for v in cz))
    xs = np.concatenate([np.linspace(-12, 12, 400001), -np.logspace(-8, 1.5, 2000),
                         np.logspace(-8, 1.5, 2000)]).astype(np.float32)
    ref = xs.astype(np.float64) * phi(xs.astype(np.float64))
    scale = np.maximum(1.0, np.abs(xs))
    ours = np.abs(gelu_f32(xs, cz) - ref) / scale
    libm = (np.float32(0.5) * xs * (np.float32(1) + _erf((xs * np.float32(0.70710678)).astype(np.float64))
                                    .astype(np.float32))).astype(np.float32)
    print(f"float32 |error| / max(1, |x|): this formula {ours.max():.3g}, "
          f"0.5 x (1 + erf(x / sqrt 2)) {(np.abs(libm - ref) / scale).max():.3g}")
    beyond = np.linspace(args.span, 1e3, 100000)
    print(f"least g beyond the range: {(basis(beyond, args.degree) @ c).min():.4g} (must be > 0)")


if __name__ == "__main__":
    main()
