"""Builds sluice's native CPU kernels (sluice/framework/native); pyproject.toml holds the rest.

The kernels are optional: on a machine without a C++ compiler, or where the build fails, sluice
installs without them and its compiled steps run XLA's own lowering (`pip install` says so).
They are compiled for the installing machine's CPU (-march=native) against the FFI headers of
the jaxlib in the build environment, whose version they record: at run time they are used only
with that jaxlib.
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalNativeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        try:
            import jax.ffi
            import jaxlib
        except ImportError as err:
            print(f"sluice: native kernels not built ({err}); XLA's lowering runs instead")
            return
        ext.include_dirs.append(jax.ffi.include_dir())
        ext.define_macros.append(("SLUICE_JAXLIB_VERSION", f'"{jaxlib.__version__}"'))
        base_args = list(ext.extra_compile_args)
        for tuned in (["-march=native"], []):  # a compiler without -march=native gets the default
            ext.extra_compile_args = base_args + tuned
            try:
                super().build_extension(ext)
                return
            except Exception as err:  # noqa: BLE001 (any compiler failure leaves XLA's lowering)
                failure = err
        print(f"sluice: native kernels not built ({failure}); XLA's lowering runs instead")


setup(
    ext_modules=[
        Extension(
            "sluice.framework.native._panel_matmul",
            [
                "sluice/framework/native/panel_matmul.cc",
                "sluice/framework/native/lstm_cell.cc",
                "sluice/framework/native/lstm_cell_grad.cc",
                "sluice/framework/native/loop_buffers.cc",
            ],
            depends=["sluice/framework/native/panel_tile.h"],
            language="c++",
            extra_compile_args=["-O3", "-std=c++17", "-w"],
        )
    ],
    cmdclass={"build_ext": OptionalNativeBuild},
)
