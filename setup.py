"""Builds the native core (rust/, PyO3) as binlake._native.

The extension is optional: on a machine without a Rust toolchain the package
still installs and runs the pure-Python reference decoder (binlake.core says
so once). scripts/test.sh fails when the core did not build where cargo exists.
"""

from setuptools import setup
from setuptools_rust import Binding, RustExtension

setup(
    rust_extensions=[
        RustExtension(
            "binlake._native",
            path="rust/Cargo.toml",
            binding=Binding.PyO3,
            features=["python"],
            debug=False,  # always release: the native core exists to be fast
            optional=True,
        )
    ],
)
