"""``benchmarks/common.py``: the machine line names the CPU model."""

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import common

# Two processors of /proc/cpuinfo as Linux writes it (tab before the colon), abridged.
CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
model\t\t: 1
model name\t: AMD EPYC 7B13
cpu MHz\t\t: 2450.000

processor\t: 1
vendor_id\t: AuthenticAMD
model\t\t: 1
model name\t: AMD EPYC 7B13
"""


def test_cpu_model_is_the_model_name_line_not_the_model_number():
    assert common.cpu_model(CPUINFO) == "AMD EPYC 7B13"


def test_cpu_model_is_none_without_a_model_name():
    # An ARM machine's cpuinfo has no "model name"; an empty value counts as none.
    assert common.cpu_model("processor\t: 0\nBogoMIPS\t: 50.00\nCPU part\t: 0xd0c\n") is None
    assert common.cpu_model("model name\t:   \n") is None


def test_machine_line_names_the_model_where_linux_tells_it():
    line = common.machine_description()
    try:
        found = re.search(r"^model name\s*:\s*(\S.*?)\s*$", Path("/proc/cpuinfo").read_text(), re.M)
    except OSError:
        found = None
    if found is not None:
        assert f"({found.group(1)})" in line
    assert "CPU cores" in line
