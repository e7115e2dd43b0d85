"""The hpvm-sdk distribution installs and imports."""
from importlib.metadata import version

import hpvm_sdk


def test_sdk_package_reports_its_installed_version():
    assert hpvm_sdk.__version__ == version("hpvm-sdk")
