"""The old import path of :func:`backend_xla.devices.configure_host_devices`, kept only because
``tests/training/test_model_export.py`` (outside this package's tests) still imports it from here.
Device choice, host-device set-up and the batch split live in :mod:`backend_xla.devices`; delete
this file once that test imports from there."""

from ..devices import configure_host_devices

__all__ = ["configure_host_devices"]
