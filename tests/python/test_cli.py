"""The console script (`memviz`, the wheel's entry point): the native command line in-process."""

import json
import subprocess


def test_summary_and_errors(memviz_exe, fixtures):
    path = str(fixtures / "multidevice.pickle")
    p = subprocess.run([memviz_exe, "summary", path], capture_output=True, text=True)
    assert p.returncode == 0 and "pickle protocol" in p.stdout
    j = subprocess.run([memviz_exe, "summary", path, "--json"], capture_output=True, text=True)
    assert json.loads(j.stdout)["devices"]
    bad = subprocess.run([memviz_exe, "nonsense"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("memviz: ")
    v = subprocess.run([memviz_exe, "--help"], capture_output=True, text=True)
    assert v.returncode == 0 and "summary" in v.stdout
