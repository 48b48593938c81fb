#!/usr/bin/env python3
"""Time every cugemm variant against cupy.matmul: python bench.py --m 4096 --n 4096 --k 1024"""
import sys

from cugemm.bench import main

if __name__ == "__main__":
    sys.exit(main(prog="python bench.py"))
